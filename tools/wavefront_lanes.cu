// A lane per line: the design of a wavefront kernel whose step waits on neither a block barrier
// nor memory, written out by hand for the alternate-triangular step of `07_convection_diffusion`
// (the built-in sweeps `at_half1` and `at_half2`, f32), so that its time per step can be measured
// before the generator emits it for every sweep stencil. It checks itself: the grid after two
// steps against the sequential sweep on the host, bit for bit in exact mode.
//
//   exact: nvcc -O3 -arch=sm_90 -fmad=false -prec-div=true -Xcompiler -ffp-contract=off -o lanes tools/wavefront_lanes.cu
//   fast:  nvcc -O3 -arch=sm_90 -DFAST -prec-div=false -o lanes_fast tools/wavefront_lanes.cu
//   ./lanes [nx ny steps]       (default 3600 1800 50; -DGROUP=n sets the steps loaded ahead, 16)
//
// Each lane owns a line of the grid along the walk axis (axis 0, x) at one y, and walks it in
// the sweep's direction; lane j is one step behind lane j − 1, whose line is the one before it in
// the sweep's order along y. At a step a lane needs two new values — its own previous point (a
// register) and lane j − 1's point at the same x, computed a step earlier (`__shfl_up_sync`) —
// and three old ones: its own point and the next along its line (loaded a group of steps ahead)
// and lane j + 1's point at the same x, which lane j + 1 loaded as its next value along its line
// (`__shfl_down_sync`). Lane 0 takes the line before it from memory, written by the previous
// warp's lane 31 and published through a progress counter per warp; lane 31 loads the line after
// it (old values: the next warp is behind). No step has a barrier; a warp's only wait is lane 0's
// for the previous warp's counter, once per group of steps.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifndef GROUP
#define GROUP 16  // steps per group: the loads of the next group are issued before this one runs
#endif
#define WARPS_PER_BLOCK 4

// One half-step: the walk's direction along x, the lanes' order along y, and the point
// function's coefficients in the order of its reads: the point before along the walk (new), on
// the line before (new), after along the walk (old), on the line after (old).
struct Half {
  int dx, dy;
  float c1, c2, c3, c4;
  float nf, ht, den;  // 1 − τ·d/2 for the point itself, τ/2, 1 + τ·d'/2
};

#ifdef __CUDACC__
__device__ __forceinline__ float divide(const float a, const float b) {
#ifdef FAST
  return a / b;
#else
  // A zero dividend's quotient without the division's slow path (as the generated kernels do).
  const bool zero = a == 0.0f && b == b && b != 0.0f;
  const float q = (zero ? 1.0f : a) / b;
  return zero ? __uint_as_float((__float_as_uint(a) ^ __float_as_uint(b)) & 0x80000000u) : q;
#endif
}

__device__ __forceinline__ float point(const Half& h, float r0, float r1, float r2, float r3, float r4, float r5) {
  return divide((r0 * h.nf) + (h.ht * (((((h.c1 * r1) + (h.c2 * r2)) + (h.c3 * r3)) + (h.c4 * r4)) + r5)), h.den);
}

// x of walk index k: k = 0 is the first interior plane in the walk's direction, −1 and NX the
// boundary planes.
#define XK(k) (h.dx > 0 ? 1 + (k) : NX - (k))
#define AT(line, k) ((size_t)XK(k) * (size_t)n1 + (size_t)(line))
#define IN_WALK(k) ((k) >= -1 && (k) <= NX)

// The group of steps from local step t0: this lane's points k0 … k0 + GROUP (own old values,
// one more for the last step's next point), q at k0 … k0 + GROUP − 1, and lane 31's line after.
#define LOAD_GROUP(t0, c, qv, after)                                              \
  {                                                                               \
    const int k0 = (t0) - lane;                                                   \
    _Pragma("unroll") for (int u = 0; u <= GROUP; ++u) {                          \
      c[u] = IN_WALK(k0 + u) ? __ldcg(phi + AT(y, k0 + u)) : 0.0f;                 \
    }                                                                             \
    _Pragma("unroll") for (int u = 0; u < GROUP; ++u) {                           \
      qv[u] = IN_WALK(k0 + u) ? __ldg(q + AT(y, k0 + u)) : 0.0f;                   \
    }                                                                             \
    if (lane == 31 && active) {                                                   \
      _Pragma("unroll") for (int u = 0; u < GROUP; ++u) {                         \
        after[u] = IN_WALK(k0 + u) ? __ldcg(phi + AT(y + h.dy, k0 + u)) : 0.0f;    \
      }                                                                           \
    }                                                                             \
  }

// Lane 0's line before it for the group from t0 (its k = t0 …): the boundary line for warp 0,
// else the previous warp's lane 31's, once that warp has published them.
#define LOAD_BEFORE(t0, before)                                                  \
  if (lane == 0) {                                                               \
    const int need = min((t0) + GROUP, NX);                                      \
    if (w > 0 && seen < need) {                                                  \
      while ((seen = *(volatile int*)&progress[w - 1]) < need) {                 \
      }                                                                          \
      __threadfence();                                                           \
    }                                                                            \
    _Pragma("unroll") for (int u = 0; u < GROUP; ++u) {                          \
      before[u] = (t0) + u < NX ? __ldcg(phi + AT(y - h.dy, (t0) + u)) : 0.0f;     \
    }                                                                            \
  }

__global__ void __launch_bounds__(32 * WARPS_PER_BLOCK)
    lanes_sweep(float* __restrict__ phi, const float* __restrict__ q, const int n0, const int n1, const Half h,
                int* __restrict__ progress) {
  const int NX = n0 - 2, NY = n1 - 2;
  const int lane = threadIdx.x & 31;
  const int w = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
  if (w >= (NY + 31) / 32) return;  // whole warps only
  const int g = w * 32 + lane;
  const bool active = g < NY;
  // The lane's y; lanes past the last line take the boundary line after it (their values are
  // the last line's old neighbours).
  const int y = active ? (h.dy < 0 ? NY - g : 1 + g) : (h.dy < 0 ? 0 : n1 - 1);
  int seen = 0;
  float cur[GROUP + 1], cq[GROUP], cb[GROUP], ca[GROUP];
  float nxt[GROUP + 1], nq[GROUP], nb[GROUP], na[GROUP];
#pragma unroll
  for (int u = 0; u < GROUP; ++u) cb[u] = ca[u] = nb[u] = na[u] = 0.0f;
  // The point before the first: the boundary plane.
  float out = __ldcg(phi + AT(y, -1));
  LOAD_GROUP(0, cur, cq, ca);
  LOAD_BEFORE(0, cb);
  const int steps = NX + 31;  // lane 31 computes its last point at step NX − 1 + 31
  for (int t0 = 0; t0 < steps; t0 += GROUP) {
    LOAD_GROUP(t0 + GROUP, nxt, nq, na);
    LOAD_BEFORE(t0 + GROUP, nb);
#pragma unroll
    for (int u = 0; u < GROUP; ++u) {
      const int k = t0 + u - lane;
      const float up = __shfl_up_sync(0xffffffffu, out, 1);        // lane j − 1's point at this x
      const float down = __shfl_down_sync(0xffffffffu, cur[u + 1], 1);  // lane j + 1's old point at this x
      const float before = lane == 0 ? cb[u] : up;
      const float after = lane == 31 ? ca[u] : down;
      if (active && k >= 0 && k < NX) {
        const float v = point(h, cur[u], out, before, cur[u + 1], after, cq[u]);
        phi[AT(y, k)] = v;
        out = v;
      }
    }
    if (lane == 31 && active) {
      // Lane 31's points up to k = t0 + GROUP − 1 − 31 are stored: made visible, then published.
      __threadfence();
      *(volatile int*)&progress[w] = min(max(t0 + GROUP - 31, 0), NX);
    }
#pragma unroll
    for (int u = 0; u < GROUP; ++u) {
      cur[u] = nxt[u];
      cq[u] = nq[u];
      cb[u] = nb[u];
      ca[u] = na[u];
    }
    cur[GROUP] = nxt[GROUP];
  }
}
#endif

// The same point function on the host: the same operations in the same order.
static float host_point(const Half& h, float r0, float r1, float r2, float r3, float r4, float r5) {
  return ((r0 * h.nf) + (h.ht * (((((h.c1 * r1) + (h.c2 * r2)) + (h.c3 * r3)) + (h.c4 * r4)) + r5))) / h.den;
}

// The sequential sweep of one half-step, in the declared order.
static void host_sweep(std::vector<float>& phi, const std::vector<float>& q, int n0, int n1, const Half& h) {
  const int NX = n0 - 2, NY = n1 - 2;
  for (int i = 0; i < NX; ++i) {
    const int x = h.dx > 0 ? 1 + i : NX - i;
    for (int j = 0; j < NY; ++j) {
      const int y = h.dy > 0 ? 1 + j : NY - j;
      const size_t at = (size_t)x * n1 + y;
      const size_t before_walk = at - (size_t)((long long)h.dx * n1), after_walk = at + (size_t)((long long)h.dx * n1);
      phi[at] = host_point(h, phi[at], phi[before_walk], phi[at - h.dy], phi[after_walk], phi[at + h.dy], q[at]);
    }
  }
}

#define CHECK(call)                                                                  \
  do {                                                                               \
    cudaError_t e = (call);                                                          \
    if (e != cudaSuccess) {                                                          \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e));     \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

int main(int argc, char** argv) {
  const int nx = argc > 1 ? atoi(argv[1]) : 3600, ny = argc > 2 ? atoi(argv[2]) : 1800;
  const int steps = argc > 3 ? atoi(argv[3]) : 50;
  const int n0 = nx + 1, n1 = ny + 1;
  // Paper 002's problem as `07_convection_diffusion` sets it: a domain of 40 × 20, u = 1,
  // v = −0.5, μ = 0.5, σ = 0, τ = 0.002 (coefficients in f64, then f32, as parameters are).
  const double hx = 40.0 / nx, hy = 20.0 / ny, mu = 0.5, u = 1.0, v = -0.5;
  const float aw = (float)(mu / (hx * hx) + u / hx), ae = (float)(mu / (hx * hx));
  const float an = (float)(mu / (hy * hy) - v / hy), as = (float)(mu / (hy * hy));
  const float tau = 0.002f, sigma = 0.0f;
  const float dm = (aw + an) + sigma / 2.0f, dp = (ae + as) + sigma / 2.0f;
  const Half h1 = {1, -1, aw, an, ae, as, 1.0f - (tau * dp) / 2.0f, tau / 2.0f, 1.0f + (tau * dm) / 2.0f};
  const Half h2 = {-1, 1, ae, as, aw, an, 1.0f - (tau * dm) / 2.0f, tau / 2.0f, 1.0f + (tau * dp) / 2.0f};

  const size_t points = (size_t)n0 * n1;
  std::vector<float> phi0(points, 0.0f), q(points, 0.0f);
  phi0[(size_t)(n0 / 2) * n1 + n1 / 2] = (float)(1.0 / (hx * hy));
  float *d_phi, *d_q;
  int* d_progress;
  const int warps = (n1 - 2 + 31) / 32, blocks = (warps + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  if (blocks > sms) {
    fprintf(stderr, "%d blocks would not all be resident on %d multiprocessors\n", blocks, sms);
    return 1;
  }
  CHECK(cudaMalloc(&d_phi, points * sizeof(float)));
  CHECK(cudaMalloc(&d_q, points * sizeof(float)));
  CHECK(cudaMalloc(&d_progress, warps * sizeof(int)));
  CHECK(cudaMemcpy(d_q, q.data(), points * sizeof(float), cudaMemcpyHostToDevice));
  auto step = [&]() {
    for (const Half* h : {&h1, &h2}) {
      CHECK(cudaMemsetAsync(d_progress, 0, warps * sizeof(int)));
      int a0 = n0, a1 = n1;
      Half half = *h;
      void* args[] = {&d_phi, &d_q, &a0, &a1, &half, &d_progress};
      CHECK(cudaLaunchKernel((const void*)lanes_sweep, dim3(blocks), dim3(32 * WARPS_PER_BLOCK), args, 0, 0));
    }
  };

  // Two steps against the sequential sweep.
  CHECK(cudaMemcpy(d_phi, phi0.data(), points * sizeof(float), cudaMemcpyHostToDevice));
  step();
  step();
  std::vector<float> gpu(points), cpu = phi0;
  CHECK(cudaMemcpy(gpu.data(), d_phi, points * sizeof(float), cudaMemcpyDeviceToHost));
  for (int s = 0; s < 2; ++s) {
    host_sweep(cpu, q, n0, n1, h1);
    host_sweep(cpu, q, n0, n1, h2);
  }
  size_t differing = 0, nonzero = 0;
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < points; ++i) {
    differing += memcmp(&gpu[i], &cpu[i], sizeof(float)) != 0;
    nonzero += cpu[i] != 0.0f;
    scale = fmax(scale, fabs((double)cpu[i]));
    worst = fmax(worst, fabs((double)gpu[i] - (double)cpu[i]));
  }

  // The time per step.
  CHECK(cudaMemcpy(d_phi, phi0.data(), points * sizeof(float), cudaMemcpyHostToDevice));
  step();
  step();
  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  CHECK(cudaEventRecord(start));
  for (int s = 0; s < steps; ++s) step();
  CHECK(cudaEventRecord(end));
  CHECK(cudaEventSynchronize(end));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, end));
#ifdef FAST
  const char* mode = "fast";
#else
  const char* mode = "exact";
#endif
  printf("lanes %s f32 %d x %d cells, group %d, %d warps in %d blocks: %.3f ms per step (%d steps); "
         "after 2 steps %zu of %zu points differ from the sequential sweep (max |difference| %.3e of %.3e; %zu "
         "nonzero)\n",
         mode, nx, ny, GROUP, warps, blocks, ms / steps, steps, differing, points, worst, scale, nonzero);
#ifdef FAST
  return 0;  // approximate division: the difference is reported, not required to be zero
#else
  return differing == 0 ? 0 : 2;
#endif
}
