// Round trip of a tagged word between two blocks: through global memory (L2), and through the
// distributed shared memory of a cluster of two. Measured in docs/performance.md.
//   nvcc -arch=sm_90 -O3 -o pingpong tools/lane_costs/pingpong.cu && ./pingpong
#include <cstdio>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__device__ __forceinline__ unsigned long long ld_gpu(const unsigned long long* p) {
  unsigned long long v; asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); return v; }
__device__ __forceinline__ void st_gpu(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory"); }
__global__ void pp_global(unsigned long long* box, long long* out, int iters) {
  const int me = blockIdx.x, other = me ^ 1;
  unsigned smid; asm("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x == 0) {
    long long t0 = clock64();
    for (unsigned long long i = 1; i <= (unsigned long long)iters; ++i) {
      if (me == 0) { st_gpu(&box[other * 32], i); while (ld_gpu(&box[me * 32]) != i) {} }
      else { while (ld_gpu(&box[me * 32]) != i) {} st_gpu(&box[other * 32], i); }
    }
    out[me] = clock64() - t0; out[2 + me] = smid;
  }
}
__global__ void __cluster_dims__(2, 1, 1) pp_dsmem(long long* out, int iters) {
  __shared__ unsigned long long box;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) box = 0;
  cluster.sync();
  const unsigned rank = cluster.block_rank();
  volatile unsigned long long* peer = cluster.map_shared_rank(&box, rank ^ 1);
  volatile unsigned long long* mine = &box;
  unsigned smid; asm("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x == 0) {
    long long t0 = clock64();
    for (unsigned long long i = 1; i <= (unsigned long long)iters; ++i) {
      if (rank == 0) { *peer = i; while (*mine != i) {} }
      else { while (*mine != i) {} *peer = i; }
    }
    out[4 + rank] = clock64() - t0; out[6 + rank] = smid;
  }
  cluster.sync();
}
int main() {
  unsigned long long* box; long long* out; const int iters = 10000;
  cudaMalloc(&box, 64 * 8); cudaMemset(box, 0, 64 * 8); cudaMallocManaged(&out, 16 * 8);
  for (int rep = 0; rep < 3; ++rep) {
    cudaMemset(box, 0, 64 * 8);
    pp_global<<<2, 32>>>(box, out, iters);
    pp_dsmem<<<2, 32>>>(out, iters);
    cudaDeviceSynchronize();
    printf("round trip: global (L2) %.0f cycles (SMs %lld, %lld); cluster shared memory %.0f cycles (SMs %lld, %lld) %s\n",
           (double)out[0] / iters, out[2], out[3], (double)out[4] / iters, out[6], out[7], cudaGetErrorString(cudaGetLastError()));
  }
}
