// Which shared-memory hand-over between two warps compute-sanitizer's racecheck reports: a tagged word
// put by warp 1 and polled by warp 0, stored and loaded as volatile, relaxed, release/acquire or atomic
// accesses, or put atomically and loaded volatile (the lane kernel's ring). In docs/performance.md.
//   nvcc -arch=sm_90 -O3 -o race tools/lane_costs/racecheck_handover.cu
//   for v in 0 1 2 3 4; do compute-sanitizer --tool racecheck --kernel-name kns=ILi${v}E ./race; done
#include <cstdio>
template <int V> __device__ __forceinline__ void put(unsigned long long* p, unsigned long long v) {
  if (V == 0) *(volatile unsigned long long*)p = v;
  if (V == 1) asm volatile("st.relaxed.cta.shared.b64 [%0], %1;" ::"r"((unsigned)__cvta_generic_to_shared(p)), "l"(v) : "memory");
  if (V == 2) asm volatile("st.release.cta.shared.b64 [%0], %1;" ::"r"((unsigned)__cvta_generic_to_shared(p)), "l"(v) : "memory");
  if (V == 3 || V == 4) atomicExch(p, v);
}
template <int V> __device__ __forceinline__ unsigned long long get(unsigned long long* p) {
  unsigned long long v = 0;
  if (V == 0 || V == 4) v = *(volatile unsigned long long*)p;
  if (V == 1) asm volatile("ld.relaxed.cta.shared.b64 %0, [%1];" : "=l"(v) : "r"((unsigned)__cvta_generic_to_shared(p)) : "memory");
  if (V == 2) asm volatile("ld.acquire.cta.shared.b64 %0, [%1];" : "=l"(v) : "r"((unsigned)__cvta_generic_to_shared(p)) : "memory");
  if (V == 3) v = atomicOr(p, 0ull);
  return v;
}
template <int V> __global__ void k(unsigned long long* out) {
  __shared__ unsigned long long ring[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) ring[i] = 0;
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  unsigned long long sum = 0;
  for (int r = 0; r < 256; ++r) {
    if (warp == 1 && lane == 0) put<V>(&ring[r], ((unsigned long long)(r + 1) << 32) | (unsigned)r);
    if (warp == 0) {
      unsigned long long w;
      do { w = get<V>(&ring[r]); } while ((w >> 32) != (unsigned long long)(r + 1));
      sum += w & 0xffffffffu;
    }
  }
  if (threadIdx.x == 0) out[V] = sum;
}
int main() {
  unsigned long long* out; cudaMallocManaged(&out, 8 * 8);
  k<0><<<1, 64>>>(out); k<1><<<1, 64>>>(out); k<2><<<1, 64>>>(out); k<3><<<1, 64>>>(out); k<4><<<1, 64>>>(out);
  cudaDeviceSynchronize();
  printf("sums %llu %llu %llu %llu (want %d) %s\n", out[0], out[1], out[2], out[3], 255 * 256 / 2, cudaGetErrorString(cudaGetLastError()));
}
