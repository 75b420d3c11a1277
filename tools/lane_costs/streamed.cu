// Fast mode's lane sweep with nothing on its multiprocessor but the compute warp and the receiver: each
// point's part (the point function with the new reads at zero) computed beforehand for the whole grid by a
// parallel pass, streamed by the compute warp from global memory, its outputs streamed out. One half-step
// of the alternate-triangular sweep's shape (rows along axis 0 walked, lines along axis 1, f32), three kernels:
//   parts:    one thread a point, each part written in the order the compute warp reads it (block b, group g,
//             lane j, step u of the group: row 16·g + u − j of line 32·b + j);
//   sweep:    a block of two warps a 32 lines: the compute warp loads a group's parts two groups ahead (four
//             16-byte loads a lane), steps v = fma(s2, v_before, fma(s1, v_prev, part)), stores the group's
//             outputs in the parts' order (four 16-byte stores), or each output into the grid itself, or into a
//             window in shared memory whose finished rows a storer warp stores out whole at a meeting a group;
//             lane 31 hands each output to the next block through L2 and the receiver puts the line before into
//             a ring in shared memory, checked every 4 steps (as the lane kernel does);
//   put back: one thread a point, the outputs into the grid.
// Checks every output's bits against the sequential recurrence on the host, prints each kernel's time (median
// of 9 after a warm-up). With a third argument, also: exact variants of the streamed sweep (the check's rows, a
// second receiver, a block alone on its multiprocessor), teams of compute warps a block (checked bit for bit); with
// 50 blocks or more, the hand-over traced by global-timer reads at two rows, and each block's groups timed; with
// one block (32 lines or fewer), the sweep's time with parts of its step left out (timing only). Measured in
// docs/performance.md.
//   nvcc -arch=sm_90 -O3 -o streamed tools/lane_costs/streamed.cu && ./streamed [lines] [rows] [x]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <utility>
#include <vector>
#include <cuda_runtime.h>
typedef unsigned long long u64;
#define G 16
#define RING 256
struct Dims {
  int nx, ny, nb, ng, s0;  // rows, lines, blocks, groups a block walks, the grid's row pitch (ny + 2)
};
__device__ __forceinline__ size_t part_at(const Dims d, int b, int g, int lane, int u) {
  return (((size_t)b * d.ng + g) * 32 + lane) * G + u;
}

__global__ void parts_kernel(const float* __restrict__ phi, const float* __restrict__ q, float* __restrict__ P, const Dims d,
                             const float c0, const float c1, const float c2, const float c3) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)d.nb * d.ng * 32 * G) return;
  const int u = (int)(i % G), lane = (int)(i / G % 32), g = (int)(i / (G * 32) % d.ng), b = (int)(i / ((size_t)G * 32 * d.ng));
  const int r = g * G + u - lane, line = b * 32 + lane;
  float p = 0.f;
  if (r >= 0 && r < d.nx && line < d.ny) {
    const size_t at = (size_t)(r + 1) * d.s0 + line + 1;
    p = fmaf(c3, q[at], fmaf(c0, fmaf(c1, phi[at + d.s0], c2 * phi[at + 1]), phi[at]));
  }
  P[i] = p;
}

__global__ void put_back_kernel(const float* __restrict__ O, float* __restrict__ phi, const Dims d) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)d.nx * d.ny) return;
  const int r = (int)(i / d.ny), line = (int)(i % d.ny), b = line / 32, lane = line % 32, t = r + lane;
  phi[(size_t)(r + 1) * d.s0 + line + 1] = O[part_at(d, b, t / G, lane, t % G)];
}

__device__ __forceinline__ u64 ring_load(const u64* p) { return *(const volatile u64*)p; }
// KNOCK & 32: the global timer at rows TRACE_ROW of each block, (b · 4 + e) · 2 + i for row TRACE_ROW[i]: e = 0 lane 31's
// output computed, 1 the receiver's poll that found the line before's row, 2 lane 0's check passed, 3 lane 0's output.
__device__ u64 trace[4096 * 10];
__constant__ int TRACE_ROW[2] = {1000, 2000};
// KNOCK & 1024: the global timer at the start of each of a block's groups, and the passes of its checks' loops that
// found a row missing, at b · ng + g (one store a group by lane 0: the step is not perturbed).
__device__ u64 gstart[64 * 256];
__device__ unsigned gwait[64 * 256];
__device__ __forceinline__ void stamp(const int at, const float after) {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : "f"(after));
  trace[at] = t;
}

// The receiver, as the lane kernel's: lane j polls rows j, j + 32, … of the line before (block b − 1's hand-over
// words, or the boundary value for block 0) and puts each, as soon as it has come, into the ring, never more than
// its rows ahead of the rows the compute warp has taken. TRACE: the global timer where it finds rows TRACE_ROW.
template <bool TRACE>
__device__ __forceinline__ void receive(u64* edge, const int* taken, const u64* ll, const int b, const int X0, const float bnd) {
  const int lane = threadIdx.x & 31;
  for (int r = lane; __any_sync(~0u, r < X0);) {
    const bool room = r < X0 && r < *(const volatile int*)taken + RING;
    if (!__any_sync(~0u, room)) __nanosleep(100);
    if (!room) continue;
    float x = bnd;
    if (b > 0) {
      u64 w;
      asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(w) : "l"(ll + (size_t)(b - 1) * X0 + r) : "memory");
      if ((unsigned)(w >> 32) != (unsigned)r + 1u) continue;
      x = __uint_as_float((unsigned)w);
      if (TRACE)
        for (int i = 0; i < 2; ++i)
          if (r == TRACE_ROW[i]) stamp((b * 5 + 1) * 2 + i, x);
    }
    atomicExch(&edge[r & (RING - 1)], ((u64)(r + 1) << 32) | __float_as_uint(x));
    r += 32;
  }
}
// A group's sixteen parts from its four 16-byte loads.
__device__ __forceinline__ void unpack(const float4 (&cur)[4], float (&part)[G]) {
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    part[4 * k] = cur[k].x;
    part[4 * k + 1] = cur[k].y;
    part[4 * k + 2] = cur[k].z;
    part[4 * k + 3] = cur[k].w;
  }
}

// MODE 0: outputs streamed out in the parts' order; 1: each into the grid by the compute warp; 2: through a
// window and a storer warp (warp 2).
template <int MODE, int KNOCK = 0>
__global__ void __launch_bounds__(96) sweep_kernel(const float* __restrict__ P, float* __restrict__ O, float* __restrict__ phi,
                                                   u64* __restrict__ ll, unsigned* __restrict__ ticket, const Dims d,
                                                   const float s1, const float s2, const float bnd) {
  __shared__ u64 edge[RING];
  __shared__ int taken, tk;
  __shared__ float win[128 * 34];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int i = threadIdx.x; i < RING; i += blockDim.x) edge[i] = 0;
  if (threadIdx.x == 0) {
    taken = 0;
    tk = (int)atomicAdd(ticket, 1u);
  }
  __syncthreads();
  const int b = tk, X0 = d.nx;
  if (warp == 1 || ((KNOCK & 256) && warp == 2)) {
    // The receiver. KNOCK & 256: a second receiver (warp 2) polls the same rows, started a little later, so a row is
    // polled twice a round trip.
    if (warp == 2) __nanosleep(250);
    receive<(KNOCK & 32) != 0>(edge, &taken, ll, b, X0, bnd);
    return;
  }
  const int line = b * 32 + lane;
  if (warp == 2 && MODE != 2) return;
  if (warp == 2) {
    // The storer: at each meeting, the rows every lane has finished (lane 31 is 31 steps behind lane 0).
    int stored = 0;
    const auto store = [&](const int upto) {
      for (; stored < upto; ++stored)
        if (line < d.ny) __stcg(&phi[(size_t)(stored + 1) * d.s0 + line + 1], win[(stored & 127) * 34 + lane + 1]);
    };
    for (int g = 0; g < d.ng; ++g) {
      asm volatile("bar.sync 1, 64;" ::: "memory");
      store(min(max(g * G - 31, 0), X0));
    }
    asm volatile("bar.sync 1, 64;" ::: "memory");
    store(X0);
    return;
  }
  const bool hands = lane == 31 && b + 1 < d.nb, writes = line < d.ny;
  float v = bnd;
  float up = __shfl_up_sync(~0u, v, 1);
  u64 peek[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) peek[i] = ring_load(&edge[i]);
  const float4* const pin = (const float4*)(P + part_at(d, b, 0, lane, 0));
  float4* const pout = (float4*)(O + part_at(d, b, 0, lane, 0));
  const size_t gstride = 32 * G / 4;  // float4s from a group to the next
  float4 A[4], B[4], C[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) A[k] = __ldcs(&pin[k]);
#pragma unroll
  for (int k = 0; k < 4; ++k) B[k] = d.ng > 1 ? __ldcs(&pin[gstride + k]) : A[k];
  const auto group = [&](const int g, float4 (&cur)[4], float4 (&ahead)[4]) {
    const int t0 = g * G;
    if (g + 2 < d.ng && !(KNOCK & 4)) {
#pragma unroll
      for (int k = 0; k < 4; ++k) ahead[k] = __ldcs(&pin[(size_t)(g + 2) * gstride + k]);
    }
    float part[G];
    unpack(cur, part);
    if (lane == 0) atomicExch(&taken, t0);
    unsigned waits = 0;
    if (KNOCK & 1024) {
      u64 now;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
      if (lane == 0) gstart[b * d.ng + g] = now;
    }
    if (MODE == 2) asm volatile("bar.sync 1, 64;" ::: "memory");
    float out[G];
    const bool steady = t0 >= 31 && t0 + G <= X0;
#pragma unroll
    for (int u = 0; u < G; ++u) {
      const int t = t0 + u, r = t - lane;
      // KNOCK & 64, & 128: the line before checked 2 rows or 1 row at a time instead of 4.
      constexpr int CHK = (KNOCK & 128) ? 1 : (KNOCK & 64) ? 2 : 4;
      if ((KNOCK & 32) && lane == 0 && u % CHK == 0)
        for (int i = 0; i < 2; ++i)
          if (t == TRACE_ROW[i]) stamp((b * 5 + 4) * 2 + i, __uint_as_float((unsigned)peek[u % 4]));
      if (u % CHK == 0 && !(KNOCK & 1)) {
        for (;;) {
          unsigned bad = 0;
#pragma unroll
          for (int i = 0; i < CHK; ++i) bad |= t + i < X0 ? (unsigned)(peek[(u + i) % 4] >> 32) ^ (unsigned)(t + i + 1) : 0u;
          if (!bad) break;
          if (KNOCK & 1024) ++waits;
#pragma unroll
          for (int i = 0; i < CHK; ++i) peek[(u + i) % 4] = ring_load(&edge[(t + i) & (RING - 1)]);
        }
      }
      if ((KNOCK & 32) && lane == 0)
        for (int i = 0; i < 2; ++i)
          if (t == TRACE_ROW[i]) stamp((b * 5 + 2) * 2 + i, __uint_as_float((unsigned)peek[u % 4]));
      const float bw = __uint_as_float((unsigned)peek[u % 4]);
      peek[u % 4] = ring_load(&edge[(t + 4) & (RING - 1)]);
      const bool on = (KNOCK & 16) || steady || (unsigned)r < (unsigned)X0;
      const float nv = fmaf(s2, lane == 0 ? bw : up, fmaf(s1, v, (KNOCK & 4) ? s1 * u : part[u]));
      v = on ? nv : v;
      up = __shfl_up_sync(~0u, v, 1);
      out[u] = v;
      if ((KNOCK & 32) && (lane == 0 || lane == 31))
        for (int i = 0; i < 2; ++i)
          if (r == TRACE_ROW[i]) stamp((b * 5 + (lane == 0 ? 3 : 0)) * 2 + i, v);
      if (MODE == 1 && on && writes) __stcg(&phi[(size_t)(r + 1) * d.s0 + line + 1], v);
      if (MODE == 2 && on) win[(r & 127) * 34 + lane + 1] = v;
      if (hands && on && !(KNOCK & 2)) {
        const u64 w = ((u64)(r + 1) << 32) | __float_as_uint(v);
        asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(ll + (size_t)b * X0 + r), "l"(w) : "memory");
      }
    }
    if ((KNOCK & 1024) && lane == 0) gwait[b * d.ng + g] = waits;
    if (MODE == 0 && !(KNOCK & 8)) {
#pragma unroll
      for (int k = 0; k < 4; ++k) __stcs(&pout[(size_t)g * gstride + k], make_float4(out[4 * k], out[4 * k + 1], out[4 * k + 2], out[4 * k + 3]));
    }
  };
  for (int g = 0; g < d.ng; g += 3) {
    group(g, A, C);
    if (g + 1 < d.ng) group(g + 1, B, A);
    if (g + 2 < d.ng) group(g + 2, C, B);
  }
  if (MODE == 2) asm volatile("bar.sync 1, 64;" ::: "memory");
}


// Teams: W compute warps a block, warp w owning the block's lines 32·w … 32·w + 31 (warp-group b·W + w of the parts'
// and outputs' order), each warp's lane 0 taking its line before from warp w − 1's lane 31 through a ring in shared
// memory, 4 rows a chunk ordered by named barriers (D "full" barriers the producer arrives at and the consumer
// waits on, taken in turn by chunk, and D "empty" ones back, so the producer never runs D chunks ahead); warp 0
// from the receiver (warp W), as above. Only the last warp hands over to the next block.
__device__ __forceinline__ void bar_arrive(const int id) { asm volatile("bar.arrive %0, 64;" ::"r"(id) : "memory"); }
__device__ __forceinline__ void bar_wait(const int id) { asm volatile("bar.sync %0, 64;" ::"r"(id) : "memory"); }
template <int W, int D>
__global__ void __launch_bounds__(32 * (W + 1)) team_kernel(const float* __restrict__ P, float* __restrict__ O, u64* __restrict__ ll,
                                                           unsigned* __restrict__ ticket, const Dims d, const int nt,
                                                           const float s1, const float s2, const float bnd) {
  __shared__ u64 edge[RING];
  __shared__ float xr[W > 1 ? W - 1 : 1][RING];
  __shared__ int taken, tk;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int i = threadIdx.x; i < RING; i += blockDim.x) edge[i] = 0;
  if (threadIdx.x == 0) {
    taken = 0;
    tk = (int)atomicAdd(ticket, 1u);
  }
  __syncthreads();
  const int b = tk, X0 = d.nx, chunks = (X0 + 3) / 4;
  if (warp == W) {
    receive<false>(edge, &taken, ll, b, X0, bnd);
    return;
  }
  const int wg = b * W + warp;  // the warp's group of 32 lines
  // Barrier ids of the pair (w − 1, w): full 1 + 2D(w − 1) + k mod D, empty 1 + 2D(w − 1) + D + k mod D.
  static_assert(2 * D * (W - 1) < 16, "16 named barriers a block");
  const int from = 1 + 2 * D * (warp - 1), to = 1 + 2 * D * warp;
  const bool hands = lane == 31 && warp == W - 1 && b + 1 < nt, gives = warp + 1 < W;
  float v = bnd;
  float up = __shfl_up_sync(~0u, v, 1);
  u64 peek[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) peek[i] = ring_load(&edge[i]);
  float before[4] = {bnd, bnd, bnd, bnd};
  const float4* const pin = (const float4*)(P + part_at(d, wg, 0, lane, 0));
  float4* const pout = (float4*)(O + part_at(d, wg, 0, lane, 0));
  const size_t gstride = 32 * G / 4;
  float4 A[4], B[4], C[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) A[k] = __ldcs(&pin[k]);
#pragma unroll
  for (int k = 0; k < 4; ++k) B[k] = d.ng > 1 ? __ldcs(&pin[gstride + k]) : A[k];
  const auto group = [&](const int g, float4 (&cur)[4], float4 (&ahead)[4]) {
    const int t0 = g * G;
    if (g + 2 < d.ng) {
#pragma unroll
      for (int k = 0; k < 4; ++k) ahead[k] = __ldcs(&pin[(size_t)(g + 2) * gstride + k]);
    }
    float part[G];
    unpack(cur, part);
    if (warp == 0 && lane == 0) atomicExch(&taken, t0);
    float out[G];
    const bool steady = t0 >= 31 && t0 + G <= X0;
#pragma unroll
    for (int u = 0; u < G; ++u) {
      const int t = t0 + u, r = t - lane;
      if (u % 4 == 0 && t < X0) {
        if (warp == 0) {
          for (;;) {
            unsigned bad = 0;
#pragma unroll
            for (int i = 0; i < 4; ++i) bad |= t + i < X0 ? (unsigned)(peek[i] >> 32) ^ (unsigned)(t + i + 1) : 0u;
            if (!bad) break;
#pragma unroll
            for (int i = 0; i < 4; ++i) peek[i] = ring_load(&edge[(t + i) & (RING - 1)]);
          }
#pragma unroll
          for (int i = 0; i < 4; ++i) before[i] = __uint_as_float((unsigned)peek[i]);
        } else {
          const int k = t / 4;
          if (k >= 1 && k - 1 < chunks - D) bar_arrive(from + D + (k - 1) % D);  // chunk k − 1 read
          bar_wait(from + k % D);                                                 // chunk k written
#pragma unroll
          for (int i = 0; i < 4; ++i) before[i] = xr[warp - 1][(t + i) & (RING - 1)];
        }
      }
      if (warp == 0) peek[u % 4] = ring_load(&edge[(t + 4) & (RING - 1)]);
      const bool on = steady || (unsigned)r < (unsigned)X0;
      const float nv = fmaf(s2, lane == 0 ? before[u % 4] : up, fmaf(s1, v, part[u]));
      v = on ? nv : v;
      up = __shfl_up_sync(~0u, v, 1);
      out[u] = v;
      if (gives) {
        const int r31 = t - 31;
        if (lane == 31 && on) xr[warp][r31 & (RING - 1)] = v;
        if (r31 >= 0 && r31 < X0 && (r31 % 4 == 3 || r31 == X0 - 1)) {
          const int k = r31 / 4;
          if (k >= D) bar_wait(to + D + k % D);  // chunk k − D read, so its barrier is free again
          bar_arrive(to + k % D);
        }
      }
      if (hands && on) {
        const u64 w = ((u64)(r + 1) << 32) | __float_as_uint(v);
        asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(ll + (size_t)b * X0 + r), "l"(w) : "memory");
      }
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) __stcs(&pout[(size_t)g * gstride + k], make_float4(out[4 * k], out[4 * k + 1], out[4 * k + 2], out[4 * k + 3]));
  };
  for (int g = 0; g < d.ng; g += 3) {
    group(g, A, C);
    if (g + 1 < d.ng) group(g + 1, B, A);
    if (g + 2 < d.ng) group(g + 2, C, B);
  }
}

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);  \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

using Sweep = void (*)(const float*, float*, float*, u64*, unsigned*, const Dims, float, float, float);

// One size's grid, parts, outputs, hand-over words and events, and what every run on them shares.
struct Bench {
  Dims d;
  size_t npts, nparts;
  const float s1 = 0.3f, s2 = 0.25f, bnd = 0.5f;
  std::vector<float> h_phi;
  float *phi, *q, *P, *O;
  u64* ll;
  unsigned* ticket;
  cudaEvent_t e[4];

  Bench(const int ny, const int nx) {
    d.ny = ny;
    d.nx = nx;
    d.nb = (ny + 31) / 32;
    d.ng = (nx + 31 + G - 1) / G;
    d.s0 = ny + 2;
    npts = (size_t)(nx + 2) * d.s0;
    nparts = (size_t)d.nb * d.ng * 32 * G;
    h_phi.resize(npts);
    std::vector<float> h_q(npts);
    srand(7);
    for (size_t i = 0; i < npts; ++i) {
      h_phi[i] = (float)rand() / RAND_MAX;
      h_q[i] = (float)rand() / RAND_MAX - 0.5f;
    }
    CK(cudaMalloc(&phi, npts * 4));
    CK(cudaMalloc(&q, npts * 4));
    // Room for teams of up to 4 warps past the last group of lines (parts never read into an output kept).
    const size_t room = nparts + (size_t)3 * d.ng * 32 * G;
    CK(cudaMalloc(&P, room * 4));
    CK(cudaMalloc(&O, room * 4));
    CK(cudaMemset(P, 0, room * 4));
    CK(cudaMalloc(&ll, (size_t)d.nb * nx * 8));
    CK(cudaMalloc(&ticket, 4));
    CK(cudaMemcpy(q, h_q.data(), npts * 4, cudaMemcpyHostToDevice));
    for (auto& x : e) CK(cudaEventCreate(&x));
  }
  // The hand-over words and the ticket zeroed, and the outputs poisoned.
  void reset() {
    CK(cudaMemset(ll, 0, (size_t)d.nb * d.nx * 8));
    CK(cudaMemset(ticket, 0, 4));
    CK(cudaMemset(O, 0xff, nparts * 4));
  }
  // The median over reps − 1 launches (after a warm-up) of `launch`, ms, each after a reset.
  template <class Launch>
  float median_of(const int reps, Launch launch) {
    std::vector<float> ts;
    for (int rep = 0; rep < reps; ++rep) {
      reset();
      CK(cudaEventRecord(e[0]));
      launch();
      CK(cudaEventRecord(e[1]));
      CK(cudaEventSynchronize(e[1]));
      CK(cudaGetLastError());
      float a;
      CK(cudaEventElapsedTime(&a, e[0], e[1]));
      if (rep > 0) ts.push_back(a);
    }
    return median(ts);
  }
  // Line j's output at row r in the parts' order (the streamed outputs').
  size_t at(const int r, const int j) const {
    const int t = r + j % 32;
    return (((size_t)(j / 32) * d.ng + t / G) * 32 + j % 32) * G + t % G;
  }
  // The sequential recurrence on the host from the device's parts, row-major.
  std::vector<float> reference() const {
    std::vector<float> h_P(nparts), ref((size_t)d.nx * d.ny);
    CK(cudaMemcpy(h_P.data(), P, nparts * 4, cudaMemcpyDeviceToHost));
    for (int r = 0; r < d.nx; ++r)
      for (int j = 0; j < d.ny; ++j) {
        const float prev = r == 0 ? bnd : ref[(size_t)(r - 1) * d.ny + j];
        const float before = j == 0 ? bnd : ref[(size_t)r * d.ny + j - 1];
        ref[(size_t)r * d.ny + j] = fmaf(s2, before, fmaf(s1, prev, h_P[at(r, j)]));
      }
    return ref;
  }
  // Outputs whose bits differ from `ref`, in the grid (`grid`) or in the parts' order.
  size_t differing(const std::vector<float>& ref, const bool grid) const {
    std::vector<float> got(grid ? npts : nparts);
    CK(cudaMemcpy(got.data(), grid ? phi : O, got.size() * 4, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (int r = 0; r < d.nx; ++r)
      for (int j = 0; j < d.ny; ++j) {
        const float x = got[grid ? (size_t)(r + 1) * d.s0 + j + 1 : at(r, j)];
        if (memcmp(&x, &ref[(size_t)r * d.ny + j], 4) != 0 && bad++ < 3)
          printf("  differs at row %d line %d: %.9g against %.9g\n", r, j, x, ref[(size_t)r * d.ny + j]);
      }
    return bad;
  }
};

// The three ways of the outputs, each run whole (parts, sweep, put back) from the same grid and checked.
static void checked_modes(Bench& b) {
  const Dims d = b.d;
  const char* names[] = {"outputs streamed, put back", "outputs stored into the grid by the compute warp", "outputs through a window and a storer warp"};
  const Sweep sweeps[] = {sweep_kernel<0>, sweep_kernel<1>, sweep_kernel<2>};
  for (int mode = 0; mode < 3; ++mode) {
    std::vector<float> tp, ts, tb;
    for (int rep = 0; rep < 10; ++rep) {
      CK(cudaMemcpy(b.phi, b.h_phi.data(), b.npts * 4, cudaMemcpyHostToDevice));
      b.reset();
      CK(cudaDeviceSynchronize());
      CK(cudaEventRecord(b.e[0]));
      parts_kernel<<<(unsigned)((b.nparts + 255) / 256), 256>>>(b.phi, b.q, b.P, d, 0.1f, 0.7f, 0.2f, 0.05f);
      CK(cudaEventRecord(b.e[1]));
      sweeps[mode]<<<d.nb, mode == 2 ? 96 : 64>>>(b.P, b.O, b.phi, b.ll, b.ticket, d, b.s1, b.s2, b.bnd);
      CK(cudaEventRecord(b.e[2]));
      if (mode == 0) put_back_kernel<<<(unsigned)(((size_t)d.nx * d.ny + 255) / 256), 256>>>(b.O, b.phi, d);
      CK(cudaEventRecord(b.e[3]));
      CK(cudaEventSynchronize(b.e[3]));
      CK(cudaGetLastError());
      float t[3];
      for (int k = 0; k < 3; ++k) CK(cudaEventElapsedTime(&t[k], b.e[k], b.e[k + 1]));
      if (rep > 0) tp.push_back(t[0]), ts.push_back(t[1]), tb.push_back(t[2]);
    }
    const size_t bad = b.differing(b.reference(), true);
    const float mp = median(tp), ms = median(ts), mb = median(tb);
    printf("%d × %d (%d blocks), %s: parts %.4f ms, sweep %.4f ms, put back %.4f ms, half-step %.4f ms; %zu outputs differ\n", d.nx,
           d.ny, d.nb, names[mode], mp, ms, mb, mp + ms + mb, bad);
  }
}

// The hand-over traced (rows 1000 and 2000 in blocks 4 to 48): lane 31's output to the next block's receiver, to
// lane 0's check, to lane 0's output; and lane 0 of a block behind lane 0 of the block before.
static void traced(Bench& b) {
  const Dims d = b.d;
  const float ms = b.median_of(2, [&] { sweep_kernel<0, 32><<<d.nb, 64>>>(b.P, b.O, b.phi, b.ll, b.ticket, d, b.s1, b.s2, b.bnd); });
  std::vector<u64> tr(4096 * 10);
  CK(cudaMemcpyFromSymbol(tr.data(), trace, tr.size() * 8));
  double sum[5] = {0, 0, 0, 0, 0};
  int n = 0;
  for (int k = 4; k < 48; ++k)
    for (int i = 0; i < 2; ++i) {
      const auto at = [&](int bb, int ev) { return (double)tr[(bb * 5 + ev) * 2 + i]; };
      sum[0] += at(k + 1, 1) - at(k, 0);
      sum[1] += at(k + 1, 2) - at(k + 1, 1);
      sum[2] += at(k + 1, 3) - at(k, 0);
      sum[3] += at(k + 1, 3) - at(k, 3);
      sum[4] += at(k + 1, 2) - at(k + 1, 4);
      ++n;
    }
  printf("  traced (sweep %.4f ms), ns (mean of %d): lane 31's output to the next block's receiver %.0f, the receiver to lane 0's "
         "check %.0f (of which lane 0 waiting at it %.0f), lane 31's output to lane 0's %.0f; lane 0 behind the block before's "
         "lane 0 %.0f\n",
         ms, n, sum[0] / n, sum[1] / n, sum[4] / n, sum[2] / n, sum[3] / n);
}

// Teams of W compute warps a block, the outputs checked against the sequential recurrence bit for bit.
static void teams(Bench& b) {
  const Dims d = b.d;
  const std::vector<float> ref = b.reference();
  const auto run = [&](const int w, const int depth, const auto kernel) {
    const int nt = (d.nb + w - 1) / w;
    const float ms = b.median_of(8, [&] { kernel<<<nt, 32 * (w + 1)>>>(b.P, b.O, b.ll, b.ticket, d, nt, b.s1, b.s2, b.bnd); });
    printf("  teams of %d compute warps (%d blocks), %d chunks of the line before in flight: sweep %.4f ms; %zu outputs differ\n", w,
           nt, depth, ms, b.differing(ref, false));
  };
  run(1, 2, team_kernel<1, 2>);
  run(2, 2, team_kernel<2, 2>);
  run(2, 4, team_kernel<2, 4>);
  run(2, 7, team_kernel<2, 7>);
  run(3, 3, team_kernel<3, 3>);
  run(4, 2, team_kernel<4, 2>);
}

// Each block's groups timed: a block's offset behind the block before at groups along the walk, and how often its
// compute warp found the line before's rows missing at a check.
static void groups_timed(Bench& b) {
  const Dims d = b.d;
  const float ms = b.median_of(2, [&] { sweep_kernel<0, 1024><<<d.nb, 64>>>(b.P, b.O, b.phi, b.ll, b.ticket, d, b.s1, b.s2, b.bnd); });
  std::vector<u64> gs(64 * 256);
  std::vector<unsigned> gw(64 * 256);
  CK(cudaMemcpyFromSymbol(gs.data(), gstart, gs.size() * 8));
  CK(cudaMemcpyFromSymbol(gw.data(), gwait, gw.size() * 4));
  printf("  groups timed (sweep %.4f ms): a block behind the block before (blocks 4-48), ns, at group", ms);
  for (int g : {0, 2, 5, 10, 25, 50, 100, 150, 200, d.ng - 1}) {
    double sum = 0;
    for (int k = 4; k < 48; ++k) sum += (double)gs[(k + 1) * d.ng + g] - (double)gs[k * d.ng + g];
    printf(" %d: %.0f;", g, sum / 44);
  }
  size_t waited = 0, passes = 0, groups = 0;
  for (int k = 1; k < d.nb; ++k)
    for (int g = 4; g < d.ng - 4; ++g) {
      const unsigned w = gw[k * d.ng + g];
      waited += w > 0, passes += w, ++groups;
    }
  printf(" groups whose check found a row missing %.1f %%, %.2f passes a group\n", 100.0 * waited / groups, (double)passes / groups);
}

// Exact variants of the streamed sweep: the check's rows, a second receiver, a block alone on its multiprocessor;
// outputs compared with the first variant's bit for bit.
static void variants(Bench& b) {
  const Dims d = b.d;
  const Sweep sweeps[] = {sweep_kernel<0, 0>, sweep_kernel<0, 64>, sweep_kernel<0, 128>, sweep_kernel<0, 256>, sweep_kernel<0, 256 | 128>, sweep_kernel<0, 512>};
  const char* what[] = {"as built", "2 rows a check", "1 row a check", "a second receiver", "a second receiver, 1 row a check",
                        "each block alone on its multiprocessor (150 KB of shared memory asked for)"};
  std::vector<float> first(b.nparts), again(b.nparts);
  CK(cudaFuncSetAttribute(sweep_kernel<0, 512>, cudaFuncAttributeMaxDynamicSharedMemorySize, 150 * 1024));
  for (int k = 0; k < 6; ++k) {
    const float ms =
        b.median_of(8, [&] { sweeps[k]<<<d.nb, 96, k == 5 ? 150 * 1024 : 0>>>(b.P, b.O, b.phi, b.ll, b.ticket, d, b.s1, b.s2, b.bnd); });
    CK(cudaMemcpy((k ? again : first).data(), b.O, b.nparts * 4, cudaMemcpyDeviceToHost));
    const bool same = !k || memcmp(first.data(), again.data(), b.nparts * 4) == 0;
    printf("  sweep, %s: %.4f ms%s\n", what[k], ms, same ? "" : " (outputs differ)");
  }
}

// Timing only (the outputs are then wrong): the streamed sweep of one block (a later block would wait for ever
// without the hand-over) with parts of it left out.
static void knock_outs(Bench& b) {
  const Dims d = b.d;
  const Sweep sweeps[] = {sweep_kernel<0, 0>, sweep_kernel<0, 1>, sweep_kernel<0, 2>, sweep_kernel<0, 4>, sweep_kernel<0, 8>, sweep_kernel<0, 15>, sweep_kernel<0, 16>};
  const char* what[] = {"nothing", "the line before's check", "the hand-over store", "the parts' loads", "the outputs' stores", "all four", "the selects outside the walk"};
  for (int k = 0; k < 7; ++k) {
    const float ms = b.median_of(6, [&] { sweeps[k]<<<d.nb, 64>>>(b.P, b.O, b.phi, b.ll, b.ticket, d, b.s1, b.s2, b.bnd); });
    printf("  sweep without %s: %.4f ms, %.1f ns a step\n", what[k], ms, ms * 1e6 / (d.ng * G));
  }
}

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  Bench b(argc > 1 ? atoi(argv[1]) : 1800, argc > 2 ? atoi(argv[2]) : 3600);
  const Dims d = b.d;
  checked_modes(b);
  if (argc <= 3) return 0;
  if (d.nb > 49 && d.nx > 2000) traced(b);
  teams(b);
  if (d.nb > 49 && d.nb <= 64 && d.ng <= 256) groups_timed(b);  // gstart and gwait hold 64 blocks of 256 groups
  variants(b);
  if (d.nb == 1) knock_outs(b);
}
