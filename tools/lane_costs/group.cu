// The lane kernel's compute warp in groups of 16 steps, in a block of three warps: what the block
// barrier, the line-before reads and the helpers' copies (cp.async) and stores add to a step.
// Measured in docs/performance.md.
//   nvcc -arch=sm_90 -O3 --fmad=false -o group tools/lane_costs/group.cu && ./group
#include <cstdio>
#define NG 227
#define SLOTS 4096
__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
template <int HELP>
__global__ void __launch_bounds__(96) grp(const float* in, const float* gin, float* gout, long long* cyc) {
  extern __shared__ float sm[];  // compute windows [0, 3·SLOTS), edge [3·SLOTS, +256), loader area after
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int i = threadIdx.x; i < 3 * SLOTS + 256; i += 96) sm[i] = in[i & 127];
  __syncthreads();
  float h = in[lane], c1 = in[32], c2 = in[33], c3 = in[34];
  const float b = in[36];
  const double y = 1.0 / (double)b;
  float E = in[40 + lane], S = in[41 + lane], Q = in[42 + lane];
  long long t0 = clock64();
  for (int g = 0; g < NG; ++g) {
    if (HELP & 4) __syncthreads();
    if (warp == 0) {
      float before[16];
#pragma unroll
      for (int u = 0; u < 16; ++u) before[u] = (HELP & 8) ? sm[3 * SLOTS + ((g * 16 + u) & 255)] : 0.25f;
#pragma unroll
      for (int u = 0; u < 16; ++u) {
        const int k = g * 16 + u;
        float up = __shfl_up_sync(~0u, h, 1);
        up = lane == 0 ? before[u] : up;
        float a = __fadd_rn(__fmul_rn(h, c2), __fmul_rn(up, c1));
        a = __fadd_rn(a, E); a = __fadd_rn(a, S); a = __fadd_rn(a, Q);
        a = __fmul_rn(a, c3); a = __fadd_rn(a, Q);
        h = (float)((double)a * y);
        sm[((k - lane) & (SLOTS - 1)) + lane] = h;
        E = sm[SLOTS + ((k + 16 - lane) & (SLOTS - 1)) + lane];
        S = sm[2 * SLOTS + ((k + 16 - lane) & (SLOTS - 1)) + lane];
        Q = sm[((k + 17 - lane) & (SLOTS - 1)) + lane + 1];
      }
    } else if (warp == 1 && (HELP & 1)) {
      float* area = sm + 3 * SLOTS + 256;
#pragma unroll
      for (int u = 0; u < 48; ++u)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem(area + ((g * 48 + u) & 63) * 32 + lane)),
                     "l"(gin + (size_t)(g * 48 + u) * 1802 + lane) : "memory");
      asm volatile("cp.async.commit_group;" ::: "memory");
      asm volatile("cp.async.wait_group 1;" ::: "memory");
    } else if (warp == 2 && (HELP & 2)) {
      float out[16];
#pragma unroll
      for (int u = 0; u < 16; ++u) out[u] = sm[((g * 16 + u) & (SLOTS - 1)) * 1 + lane];
#pragma unroll
      for (int u = 0; u < 16; ++u) __stcg(&gout[(size_t)(g * 16 + u) * 1802 + lane], out[u]);
    }
  }
  long long t1 = clock64();
  if (warp == 0) gout[lane] = h;
  if (threadIdx.x == 0) cyc[HELP] = t1 - t0;
}
int main() {
  float *in, *gin, *gout; long long* cyc;
  cudaMallocManaged(&in, 256 * 4); cudaMalloc(&gin, (size_t)NG * 48 * 1802 * 4 + 4096); cudaMalloc(&gout, (size_t)NG * 16 * 1802 * 4 + 4096);
  cudaMallocManaged(&cyc, 16 * 8);
  for (int i = 0; i < 256; ++i) in[i] = 0.5f + 0.001f * i;
  const int shm = (3 * 4096 + 256 + 64 * 32) * 4;
  cudaFuncSetAttribute(grp<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, shm);
  cudaFuncSetAttribute(grp<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, shm);
  cudaFuncSetAttribute(grp<12>, cudaFuncAttributeMaxDynamicSharedMemorySize, shm);
  cudaFuncSetAttribute(grp<13>, cudaFuncAttributeMaxDynamicSharedMemorySize, shm);
  cudaFuncSetAttribute(grp<14>, cudaFuncAttributeMaxDynamicSharedMemorySize, shm);
  cudaFuncSetAttribute(grp<15>, cudaFuncAttributeMaxDynamicSharedMemorySize, shm);
  for (int rep = 0; rep < 2; ++rep) {
    grp<0><<<1, 96, shm>>>(in, gin, gout, cyc); grp<4><<<1, 96, shm>>>(in, gin, gout, cyc);
    grp<12><<<1, 96, shm>>>(in, gin, gout, cyc); grp<13><<<1, 96, shm>>>(in, gin, gout, cyc);
    grp<14><<<1, 96, shm>>>(in, gin, gout, cyc); grp<15><<<1, 96, shm>>>(in, gin, gout, cyc);
    cudaDeviceSynchronize();
  }
  const int v[] = {0, 4, 12, 13, 14, 15};
  const char* nm[] = {"steps only (no barrier)", "+ barrier a group", "+ line-before reads", "+ loader's 48 cp.async a group",
                      "+ storer's 16 loads and stores a group (no loader)", "+ loader and storer"};
  for (int i = 0; i < 6; ++i) printf("%-50s %6.1f cycles per step\n", nm[i], (double)cyc[v[i]] / (NG * 16));
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
