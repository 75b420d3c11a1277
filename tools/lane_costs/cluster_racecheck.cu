// Which put of a tagged word into the other block of a cluster of two compute-sanitizer's racecheck
// accepts, and its one-way latency: the word put remotely as a relaxed, volatile, release or atomic
// access and polled locally as a volatile, relaxed or acquire load; both blocks meet at a cluster
// barrier before leaving. Measured in docs/performance.md.
//   nvcc -arch=sm_90 -O3 -o cluster_race tools/lane_costs/cluster_racecheck.cu && ./cluster_race 20000
//   for m in 0 1 2 3 4; do compute-sanitizer --tool racecheck ./cluster_race 200 $m; done
#include <cstdio>
#include "cluster.cuh"
struct leave { __device__ ~leave() { csync(); } };
__global__ void __cluster_dims__(2, 1, 1) pp(int mode, int n, long long* out) {
  __shared__ u64 box[4];
  if (threadIdx.x < 4) box[threadIdx.x] = 0;
  csync();
  leave guard;
  const unsigned me = rank(), other = 1 - me;
  if (threadIdx.x != 0) return;
  const unsigned sother = smap(box, other), smine = sa(box);
  long long t0 = clock64();
  for (int i = 1; i <= n; ++i) {
    const bool sends = (i & 1) == (me == 0 ? 1 : 0);
    const u64 w = (u64)i;
    if (sends) {
      if (mode == 0 || mode == 1) asm volatile("st.relaxed.cluster.shared::cluster.b64 [%0], %1;" ::"r"(sother), "l"(w) : "memory");
      else if (mode == 2) asm volatile("st.volatile.shared::cluster.b64 [%0], %1;" ::"r"(sother), "l"(w) : "memory");
      else if (mode == 3) asm volatile("st.release.cluster.shared::cluster.b64 [%0], %1;" ::"r"(sother), "l"(w) : "memory");
      else { u64 o; asm volatile("atom.relaxed.cluster.shared::cluster.exch.b64 %0, [%1], %2;" : "=l"(o) : "r"(sother), "l"(w) : "memory"); }
    } else {
      u64 v = 0;
      do {
        if (mode == 1) asm volatile("ld.relaxed.cluster.shared.u64 %0, [%1];" : "=l"(v) : "r"(smine) : "memory");
        else if (mode == 3) asm volatile("ld.acquire.cluster.shared.u64 %0, [%1];" : "=l"(v) : "r"(smine) : "memory");
        else asm volatile("ld.volatile.shared.u64 %0, [%1];" : "=l"(v) : "r"(smine) : "memory");
      } while (v < w);
    }
  }
  out[me] = clock64() - t0;
}
int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 20000;
  long long* out; cudaMalloc(&out, 16);
  const char* names[] = {"st.relaxed.cluster remote, ld.volatile local", "st.relaxed.cluster remote, ld.relaxed.cluster local", "st.volatile remote, ld.volatile local", "st.release remote, ld.acquire local", "atom.exch remote, ld.volatile local"};
  const int only = argc > 2 ? atoi(argv[2]) : -1;
  for (int m = 0; m < 5; ++m) {
    if (only >= 0 && m != only) continue;
    pp<<<2, 32>>>(m, n, out);
    cudaError_t e = cudaDeviceSynchronize();
    long long h[2]; cudaMemcpy(h, out, 16, cudaMemcpyDeviceToHost);
    printf("mode %d %-52s %s: %.0f cycles a one-way hand-over\n", m, names[m], cudaGetErrorString(e), (double)h[0] / n);
  }
}
