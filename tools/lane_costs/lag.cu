// Fast mode's lane step with lanes that lag one step or more behind the lane before (lane j at row t − L·j, so
// the shuffle of step t's output is used at step t + L), one warp, clock64 around the steps (cycles a step):
//   1. chains alone: a shuffle, the own multiply–add chain, and the step's chain with lags 1, 2 and 3;
//   2. the whole step of the lane kernel's compute warp (parts loaded a group at a time, the output stored to
//      shared memory, lane 31's tagged hand-over store, a ring word loaded a step, a check every 4 steps) at
//      lags 1 and 2;
//   3. the lag-1 step in a block with the kernel's helper warps beside it (loader, storer, receiver, parts warp).
// Measured in docs/performance.md.
//   nvcc -arch=sm_90 -O3 -o lag tools/lane_costs/lag.cu && ./lag
#include <cstdio>
#include <cuda_runtime.h>
#define N 65536
// 1. Chains alone.
__global__ void k_l1(const float* p, float* out, long long* cyc, float s0, float s1) {
  const int lane = threadIdx.x;
  float v = p[lane], up = __shfl_up_sync(~0u, v, 1), b = p[lane + 32];
  long long c0 = clock64();
#pragma unroll 16
  for (int t = 0; t < N; ++t) {
    const float x = lane == 0 ? b : up;
    v = fmaf(s1, x, fmaf(s0, v, p[t & 63]));
    up = __shfl_up_sync(~0u, v, 1);
  }
  long long c1 = clock64();
  out[lane] = v; if (lane == 0) cyc[0] = c1 - c0;
}
// lag 2: the shuffle of step t's output is used at step t + 2.
__global__ void k_l2(const float* p, float* out, long long* cyc, float s0, float s1) {
  const int lane = threadIdx.x;
  float v = p[lane], b = p[lane + 32];
  float upa = __shfl_up_sync(~0u, v, 1), upb = upa;
  long long c0 = clock64();
#pragma unroll 16
  for (int t = 0; t < N; t += 2) {
    float x = lane == 0 ? b : upa;
    v = fmaf(s1, x, fmaf(s0, v, p[t & 63]));
    upa = __shfl_up_sync(~0u, v, 1);
    x = lane == 0 ? b : upb;
    v = fmaf(s1, x, fmaf(s0, v, p[(t + 1) & 63]));
    upb = __shfl_up_sync(~0u, v, 1);
  }
  long long c1 = clock64();
  out[lane] = v; if (lane == 0) cyc[0] = c1 - c0;
}
// lag 3.
__global__ void k_l3(const float* p, float* out, long long* cyc, float s0, float s1) {
  const int lane = threadIdx.x;
  float v = p[lane], b = p[lane + 32];
  float upa = __shfl_up_sync(~0u, v, 1), upb = upa, upc = upa;
  long long c0 = clock64();
#pragma unroll 15
  for (int t = 0; t < N - 2; t += 3) {
    float x = lane == 0 ? b : upa;
    v = fmaf(s1, x, fmaf(s0, v, p[t & 63]));
    upa = __shfl_up_sync(~0u, v, 1);
    x = lane == 0 ? b : upb;
    v = fmaf(s1, x, fmaf(s0, v, p[(t + 1) & 63]));
    upb = __shfl_up_sync(~0u, v, 1);
    x = lane == 0 ? b : upc;
    v = fmaf(s1, x, fmaf(s0, v, p[(t + 2) & 63]));
    upc = __shfl_up_sync(~0u, v, 1);
  }
  long long c1 = clock64();
  out[lane] = v; if (lane == 0) cyc[0] = c1 - c0;
}
// no shuffle: own chain only.
__global__ void k_l0(const float* p, float* out, long long* cyc, float s0, float s1) {
  const int lane = threadIdx.x;
  float v = p[lane], b = p[lane + 32];
  long long c0 = clock64();
#pragma unroll 16
  for (int t = 0; t < N; ++t) v = fmaf(s1, b, fmaf(s0, v, p[t & 63]));
  long long c1 = clock64();
  out[lane] = v; if (lane == 0) cyc[0] = c1 - c0;
}
// shuffle only chain (v = shfl(v)).
__global__ void k_sh(const float* p, float* out, long long* cyc, float s0, float s1) {
  const int lane = threadIdx.x;
  float v = p[lane];
  long long c0 = clock64();
#pragma unroll 16
  for (int t = 0; t < N; ++t) v = __shfl_xor_sync(~0u, v, 1);
  long long c1 = clock64();
  out[lane] = v; if (lane == 0) cyc[0] = c1 - c0;
}
// 2. The compute warp's whole step.
#define NS 8192
#define G 16
template <int LAG, int HAND, int CHK>
__global__ void step_kernel(const float* p, float* out, unsigned long long* ll, long long* cyc, float s0, float s1) {
  __shared__ float win[128 * 34 * 2];
  __shared__ unsigned long long edge[256];
  __shared__ float parts[2 * G * 32];
  const int lane = threadIdx.x;
  for (int i = lane; i < 256; i += 32) edge[i] = ((unsigned long long)(i + 1) << 32);
  for (int i = lane; i < 2 * G * 32; i += 32) parts[i] = p[i & 63];
  __syncwarp();
  float v = p[lane], up0 = __shfl_up_sync(~0u, v, 1), up1 = up0;
  unsigned long long peek[4] = {edge[0], edge[1], edge[2], edge[3]};
  long long c0 = clock64();
  unsigned bad = 0;
  for (int t0 = 0; t0 < NS; t0 += G) {
    float part[G];
    const float* pin = parts + ((t0 / G) & 1) * G * 32 + lane;
#pragma unroll
    for (int u = 0; u < G; ++u) part[u] = pin[u * 32];
    __syncwarp();
    float* wout = win + ((t0 - lane) & 127) * 34 + lane + 1;
    const unsigned long long* e0 = edge + (t0 & 255);
    const unsigned long long* e1 = edge + ((t0 + G) & 255);
#pragma unroll
    for (int u = 0; u < G; ++u) {
      const int kk = t0 + u - LAG * lane;
      if (CHK && u % 4 == 0) {
        unsigned m = 0;
#pragma unroll
        for (int i = 0; i < 4; ++i) m |= (unsigned)(peek[i] >> 32) ^ (unsigned)((t0 + u + i) & 255) + 1u;
        if (m) bad++;
      }
      const float bw = __uint_as_float((unsigned)peek[u % 4]);
      const float up = (LAG == 1 || u % 2 == 0) ? up0 : up1;
      v = fmaf(s1, lane == 0 ? bw : up, fmaf(s0, v, part[u]));
      if (LAG == 1 || u % 2 == 0) up0 = __shfl_up_sync(~0u, v, 1); else up1 = __shfl_up_sync(~0u, v, 1);
      wout[u * 34] = v;
      peek[u % 4] = *(const volatile unsigned long long*)((u + 4 < G ? e0 : e1) + ((u + 4) % G));
      if (HAND && lane == 31 && kk >= 0) {
        const unsigned long long w = ((unsigned long long)(kk + 1) << 32) | __float_as_uint(v);
        asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(ll + kk), "l"(w) : "memory");
      }
    }
  }
  long long c1 = clock64();
  out[lane] = v + bad; if (lane == 0) cyc[0] = c1 - c0;
}
// 3. The lag-1 step beside the helper warps (the receiver polls words that never arrive, as while the block
// before is behind).
__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
template <int LOADER, int STORER, int RECV, int PARTS>
__global__ void __launch_bounds__(224) team_kernel(const float* p, const float* big, float* outg, unsigned long long* ll, long long* cyc, float s0, float s1) {
  __shared__ float win[128 * 34 * 2];
  __shared__ unsigned long long edge[256];
  __shared__ float parts[2 * G * 32];
  __shared__ int taken, done;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int i = threadIdx.x; i < 256; i += blockDim.x) edge[i] = ((unsigned long long)(i + 1) << 32);
  for (int i = threadIdx.x; i < 2 * G * 32; i += blockDim.x) parts[i] = p[i & 63];
  if (threadIdx.x == 0) taken = 0, done = 0;
  __syncthreads();
  const int meet = 32 * (1 + LOADER + STORER + PARTS);
  if (warp == 3) {
    if (!RECV) return;
    // Polls words nobody writes (never arrive), as a receiver does while the block before is behind.
    for (int r = lane; r < NS && !*(volatile int*)&done;) {
      const bool room = r < *(volatile int*)&taken + 256;
      if (!__any_sync(~0u, room)) __nanosleep(100);
      if (!room) continue;
      unsigned long long w;
      asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(w) : "l"(ll + 100000 + r) : "memory");
      if ((unsigned)(w >> 32) != (unsigned)r + 1u) continue;
      atomicExch(&edge[r & 255], w);
      r += 32;
    }
    return;
  }
  if (warp == 1 && !LOADER) return;
  if (warp == 2 && !STORER) return;
  if (warp == 6 && !PARTS) return;
  if (warp >= 4 && warp != 6) return;
  float v = p[lane], up0 = __shfl_up_sync(~0u, v, 1);
  unsigned long long peek[4] = {edge[0], edge[1], edge[2], edge[3]};
  long long c0 = clock64();
  unsigned bad = 0;
  for (int t0 = 0; t0 < NS; t0 += G) {
    if (warp == 1) asm volatile("cp.async.wait_group 1;" ::: "memory");
    if (meet > 32) asm volatile("bar.sync 1, %0;" ::"r"(meet) : "memory");
    if (warp == 1) {
#pragma unroll
      for (int u = 0; u < G; ++u) {
        float* dst = win + (((t0 + 64 + u) & 127) * 34 + lane + 1);
        asm volatile("cp.async.ca.shared.global.L2::128B [%0], [%1], 4;" ::"r"(smem(dst)), "l"(big + (size_t)(t0 + u) * 3600 + lane) : "memory");
        asm volatile("cp.async.ca.shared.global.L2::128B [%0], [%1], 4;" ::"r"(smem(dst + 128 * 34)), "l"(big + (size_t)(t0 + u) * 3600 + 64 + lane) : "memory");
      }
      asm volatile("cp.async.commit_group;" ::: "memory");
    } else if (warp == 2) {
      float o[G];
#pragma unroll
      for (int u = 0; u < G; ++u) o[u] = win[((t0 - 40 + u) & 127) * 34 + lane + 1];
#pragma unroll
      for (int u = 0; u < G; ++u) __stcg(&outg[(size_t)(t0 + u) * 3600 + lane], o[u]);
    } else if (warp == 6) {
      float* pout = parts + (((t0 / G) + 1) & 1) * G * 32 + lane;
#pragma unroll
      for (int u = 0; u < G; ++u) {
        const float* wq = win + 128 * 34 + (((t0 + 16 + u) & 127) * 34) + lane + 1;
        pout[u * 32] = fmaf(wq[-1], s0, fmaf(wq[1], s1, fmaf(wq[34], s0, wq[0] * s1)));
      }
    } else {
      float part[G];
      const float* pin = parts + ((t0 / G) & 1) * G * 32 + lane;
#pragma unroll
      for (int u = 0; u < G; ++u) part[u] = pin[u * 32];
      if (lane == 0) atomicExch(&taken, t0);
      __syncwarp();
      float* wout = win + ((t0 - lane) & 127) * 34 + lane + 1;
      const unsigned long long* e0 = edge + (t0 & 255);
      const unsigned long long* e1 = edge + ((t0 + G) & 255);
#pragma unroll
      for (int u = 0; u < G; ++u) {
        const int kk = t0 + u - lane;
        if (u % 4 == 0) {
          unsigned m = 0;
#pragma unroll
          for (int i = 0; i < 4; ++i) m |= (unsigned)(peek[i] >> 32) ^ (unsigned)((t0 + u + i) & 255) + 1u;
          if (m) bad++;
        }
        const float bw = __uint_as_float((unsigned)peek[u % 4]);
        v = fmaf(s1, lane == 0 ? bw : up0, fmaf(s0, v, part[u]));
        up0 = __shfl_up_sync(~0u, v, 1);
        wout[u * 34] = v;
        peek[u % 4] = *(const volatile unsigned long long*)((u + 4 < G ? e0 : e1) + ((u + 4) % G));
        if (lane == 31 && kk >= 0) {
          const unsigned long long w = ((unsigned long long)(kk + 1) << 32) | __float_as_uint(v);
          asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(ll + kk), "l"(w) : "memory");
        }
      }
    }
  }
  if (warp == 1) asm volatile("cp.async.wait_all;" ::: "memory");
  long long c1 = clock64();
  if (threadIdx.x == 0) atomicExch(&done, 1);
  if (warp == 0) { outg[lane] = v + bad; if (lane == 0) cyc[0] = c1 - c0; }
}
typedef void (*Chain)(const float*, float*, long long*, float, float);
typedef void (*Step)(const float*, float*, unsigned long long*, long long*, float, float);
typedef void (*Team)(const float*, const float*, float*, unsigned long long*, long long*, float, float);
// The third of three runs of a kernel: cycles a step.
template <typename F>
static double cycles(F launch, long long* cyc, int steps) {
  long long c = 0;
  for (int r = 0; r < 3; ++r) {
    launch();
    cudaDeviceSynchronize();
    cudaMemcpy(&c, cyc, 8, cudaMemcpyDeviceToHost);
  }
  return (double)c / steps;
}
int main() {
  float *p, *out, *big, *outg;
  long long* cyc;
  unsigned long long* ll;
  const size_t rows = (size_t)3600 * (NS + 64);
  cudaMalloc(&p, 512); cudaMalloc(&out, 128); cudaMalloc(&cyc, 8); cudaMalloc(&ll, 8 * 200000);
  cudaMalloc(&big, 4 * rows); cudaMalloc(&outg, 4 * rows);
  cudaMemset(p, 0, 512); cudaMemset(ll, 0, 8 * 200000); cudaMemset(big, 0, 4 * rows);
  const Chain chains[] = {k_sh, k_l0, k_l1, k_l2, k_l3};
  const char* chain_names[] = {"shuffle alone", "multiply-add chain", "lag 1", "lag 2", "lag 3"};
  printf("1. chains alone, cycles a step\n");
  for (int i = 0; i < 5; ++i)
    printf("  %-22s %6.2f\n", chain_names[i], cycles([&] { chains[i]<<<1, 32>>>(p, out, cyc, 0.5f, 0.25f); }, cyc, N));
  const Step steps[] = {step_kernel<1, 0, 0>, step_kernel<1, 1, 0>, step_kernel<1, 1, 1>,
                        step_kernel<2, 0, 0>, step_kernel<2, 1, 0>, step_kernel<2, 1, 1>};
  const char* step_names[] = {"lag 1", "lag 1 + hand-over", "lag 1 + hand-over + check",
                              "lag 2", "lag 2 + hand-over", "lag 2 + hand-over + check"};
  printf("2. the compute warp's step, cycles a step\n");
  for (int i = 0; i < 6; ++i)
    printf("  %-28s %6.2f\n", step_names[i], cycles([&] { steps[i]<<<1, 32>>>(p, out, ll, cyc, 0.5f, 0.25f); }, cyc, NS));
  const Team teams[] = {team_kernel<0, 0, 0, 0>, team_kernel<1, 0, 0, 0>, team_kernel<0, 1, 0, 0>, team_kernel<0, 0, 1, 0>,
                        team_kernel<0, 0, 0, 1>, team_kernel<1, 1, 0, 1>, team_kernel<1, 1, 1, 1>};
  const char* team_names[] = {"alone", "+ loader", "+ storer", "+ receiver", "+ parts warp", "+ loader, storer, parts", "all"};
  printf("3. the lag-1 step beside the helpers, cycles a step\n");
  for (int i = 0; i < 7; ++i)
    printf("  %-28s %6.2f\n", team_names[i], cycles([&] { teams[i]<<<1, 224>>>(p, big, outg, ll, cyc, 0.5f, 0.25f); }, cyc, NS));
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
