// What a lane-kernel step pays for lane 31's put of a tagged word into the next block of a cluster, by
// the kind of put: one warp runs a dependent chain (a shuffle and multiply–adds) for n steps, lane 31
// putting a word every step into the other block's shared memory (or global memory, or its own), and
// prints cycles a step (the second of two runs of each). Measured in docs/performance.md.
//   nvcc -arch=sm_90 -O3 -o cluster_put tools/lane_costs/cluster_put.cu && ./cluster_put 16384
#include <cstdio>
#include "cluster.cuh"

template <int MODE>
__global__ void __cluster_dims__(2, 1, 1) tp(int n, u64* g, long long* out, float* sink) {
  __shared__ u64 ring[256];
  __shared__ __align__(8) u64 mbar;
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(sa(&mbar)));
  for (int i = threadIdx.x; i < 256; i += blockDim.x) ring[i] = 0;
  csync();
  const unsigned me = rank();
  const int lane = threadIdx.x & 31;
  float x = lane * 0.001f, y = 1.0f;
  long long t0 = clock64();
  u64 fold[16] = {0}, acc = 0;
  if (me == 0) {
    const unsigned sring = smap(ring, 1), smbar = smap(&mbar, 1);
    u64* gring = gmap(ring, 1);
    #pragma unroll 16
    for (int i = 0; i < n; ++i) {
      const float up = __shfl_up_sync(0xffffffffu, x, 1);
      x = fmaf(x, 0.5f, fmaf(up, 0.25f, y));
      y = fmaf(y, 0.999f, 0.001f);
      unsigned bits = __float_as_uint(x);
      const u64 w = ((u64)(i + 1) << 32) | bits;
      const unsigned slot = (unsigned)(i & 255) * 8;
      if (lane == 31) {
        if (MODE == 1) asm volatile("st.relaxed.cluster.shared::cluster.b64 [%0], %1;" ::"r"(sring + slot), "l"(w) : "memory");
        else if (MODE == 2) { u64 o; asm volatile("atom.relaxed.cluster.shared::cluster.exch.b64 %0, [%1], %2;" : "=l"(o) : "r"(sring + slot), "l"(w) : "memory"); }
        else if (MODE == 3) asm volatile("st.relaxed.gpu.b64 [%0], %1;" ::"l"((char*)gring + slot), "l"(w) : "memory");
        else if (MODE == 4) asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(g + (i & 255)), "l"(w) : "memory");
        else if (MODE == 5) atomicExch(&ring[i & 255], w);
        else if (MODE == 6) asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(sring + slot), "l"(w), "r"(smbar) : "memory");
        else if (MODE == 7) asm volatile("red.relaxed.cluster.shared::cluster.add.u64 [%0], %1;" ::"r"(sring + slot), "l"(w) : "memory");
        else if (MODE == 8) { u64 o; asm volatile("atom.relaxed.cluster.shared::cluster.exch.b64 %0, [%1], %2;" : "=l"(o) : "r"(sring + slot), "l"(w) : "memory"); fold[i & 15] = o; }
      }
      if (MODE == 8 && (i & 15) == 15) {
        #pragma unroll
        for (int k = 0; k < 16; ++k) acc ^= fold[k];
      }
    }
  }
  if (acc == 12345) sink[0] = 0;
  out[me * 32 + lane] = clock64() - t0;
  sink[threadIdx.x + me * 32] = x;
  csync();
}
int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 4096;
  u64* g; long long* out; float* sink; cudaMalloc(&g, 4096); cudaMalloc(&out, 1024); cudaMalloc(&sink, 1024);
  const char* names[] = {"no put", "st.relaxed.cluster.shared::cluster", "atom.relaxed.cluster.shared::cluster.exch", "st.relaxed.gpu, generic address", "st.relaxed.gpu.global", "local atomicExch", "st.async (no mbarrier wait)", "red.add shared::cluster", "atom.exch, results folded every 16"};
  void (*const kernels[])(int, u64*, long long*, float*) = {tp<0>, tp<1>, tp<2>, tp<3>, tp<4>, tp<5>, tp<6>, tp<7>, tp<8>};
  for (int m = 0; m < 9; ++m) {
    for (int rep = 0; rep < 2; ++rep) {
      kernels[m]<<<2, 32>>>(n, g, out, sink);
      cudaError_t e = cudaDeviceSynchronize();
      long long h[1]; cudaMemcpy(h, out, 8, cudaMemcpyDeviceToHost);
      if (rep) printf("mode %d %-42s %s: %.1f cycles a step\n", m, names[m], cudaGetErrorString(e), (double)h[0] / n);
    }
  }
}
