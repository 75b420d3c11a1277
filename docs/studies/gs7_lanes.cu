// A design study, not part of the library: a 3-D lane kernel for the Gauss–Seidel sweep `gs7`
// (`sweep(+, +, +)`, the 7-point Laplacian with a right-hand side), in place, hand-written for one
// stencil to measure the design before the generator emits it. Figures and the profile it gave are in
// `docs/performance.md`, section "a 3-D lane kernel for gs7, studied by hand".
//
// Axes: warps along axis 0 (x), a warp's 32 lanes along axis 2 (z, contiguous in memory), each lane
// walks axis 1 (y). Lane j computes row y = tau - j at its step tau, so a warp computes a skewed row of
// 32 points a step. New values: y - 1 in the lane's own register; z - 1 from lane j - 1 by a shuffle
// (lane 0: the z-block before, tagged 64-bit words in global memory); x - 1 from the warp before
// through a ring of tagged words in shared memory (warp 0: the x-group before, tagged words in global
// memory). A receiver warp polls the global hand-overs B steps at a time into shared rings, so a
// compute warp polls only shared memory. Old values: rows copied ahead with cp.async into per-lane
// columns of shared windows (each lane reads only its own column: no bank conflicts, no
// synchronisation), z + 1 by a shuffle of lane j + 1's look-ahead. Finished rows are stored whole
// (coalesced) 32 steps after their first point. Blocks take (x-group, z-block) units from a ticket in
// row-major order: every unit waited for has a smaller ticket.
//
// A second kernel, `team`, splits the work as the 2-D lane kernel does: K compute warps do only the
// chain (shuffles, ring reads, the point function), NL loader warps copy the compute warps' rows a
// group of TG steps at a time TA groups ahead, NS storer warps store finished rows, the receiver polls
// the hand-overs; compute warps, loaders and storers meet at a named barrier every TG steps, and
// compute warp w runs TL * w steps behind warp 0.
//
// Build and run on the GPU machine (exact IEEE arithmetic, compared bit for bit with a sequential
// sweep on the CPU after two sweeps; the copy probe runs in the same process as the timings):
//   nvcc -O3 -arch=sm_90 -fmad=false -Xcompiler -ffp-contract=off -std=c++17 -o l3 gs7_lanes.cu
//   ./l3 0   checks `l3` on 12 shapes, f32 and f64      ./l3 1   times `l3` at 256³ and 512³
//   ./l3 3   checks `team` on 11 shapes                  ./l3 4   times `team` at 256³ and 512³
//   ./l3 6   checks `team` with K = 7                    ./l3 5   times `team` at 256³ f32, K = 7 and 8
//   ./l3 2   times `l3` at 256³ f32 with ZF compute warps a block
// Switches: -DPROF (`l3`: clock64 counters per region of a step); timing only, with wrong values:
// -DNOXDEP (the hand-overs between blocks replaced by boundary values; -DNOX, -DNOZ in `team`: only
// those along x or z), -DABL_DIV (multiply by 1/6), -DABL_NOSTORE, -DABL_NOCOPY, -DABL_NORING (`l3`:
// warps read the ring without waiting); sizes: -DRW, -DTRW (window rows), -DRE (receiver ring rows),
// -DUNROLL, -DZF, -DTG, -DTA, -DTL, -DNL, -DNS.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
typedef unsigned long long u64;
#ifndef RW
#define RW 48
#endif
#ifndef D
#define D 12
#endif
#define RR 16
#ifndef UNROLL
#define UNROLL 8
#endif
#ifndef ZF
#define ZF 8
#endif
#define G 4
#ifndef RE
#define RE 64
#endif
#define B 16

__device__ unsigned g_err[4];
__device__ unsigned long long g_prof[8];
#ifdef PROF
#define TIC long long _c0 = clock64();
#define TOC(k) pr[k] += clock64() - _c0;
#else
#define TIC
#define TOC(k)
#endif
template <typename T> __device__ __forceinline__ void put(u64* w, T v, unsigned tag) {
  if (sizeof(T) == 4) { float f = (float)v; w[0] = ((u64)tag << 32) | __float_as_uint(f); }
  else { long long b = __double_as_longlong((double)v);
    w[0] = ((u64)tag << 32) | (unsigned)(b & 0xffffffffu); w[1] = ((u64)tag << 32) | (unsigned)((unsigned long long)b >> 32); }
}
template <typename T> __device__ __forceinline__ T val(const u64* w) {
  if (sizeof(T) == 4) return (T)__uint_as_float((unsigned)w[0]);
  return (T)__longlong_as_double((long long)(((w[1] & 0xffffffffull) << 32) | (w[0] & 0xffffffffull)));
}
template <typename T> __device__ __forceinline__ bool ok(const u64* w, unsigned tag) {
  bool r = (unsigned)(w[0] >> 32) == tag; if (sizeof(T) == 8) r = r && (unsigned)(w[1] >> 32) == tag; return r;
}
template <typename T> __device__ __forceinline__ void ldg_v(u64* w, const u64* p) {
  w[0] = *(const volatile u64*)p; if (sizeof(T) == 8) w[1] = *((const volatile u64*)p + 1);
}
__device__ __forceinline__ void cp(void* dst, const void* src, int bytes) {
  unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  if (bytes == 4) asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(d), "l"(src));
  else asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" :: "r"(d), "l"(src));
}

template <typename T, int Z>
__global__ void __launch_bounds__(32 * (Z + 1)) l3(T* u, const T* __restrict__ f, T h2, int n0, int n1, int n2,
    u64* __restrict__ xh, u64* __restrict__ zh, unsigned* ticket, int XG, int ZB, unsigned base) {
  constexpr int W = sizeof(T) / 4;
  extern __shared__ __align__(16) unsigned char raw[];
  __shared__ volatile int done[Z];
  __shared__ int unit_s;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int X0 = n0 - 2, X1 = n1 - 2, X2 = n2 - 2;
  const size_t s0 = (size_t)n1 * n2, s1 = n2;
  T* wu = (T*)raw + (size_t)warp * (3 * RW * 32 + RW);
  T* wn = wu + RW * 32; T* wf = wn + RW * 32; T* we = wf + RW * 32;
  u64* ring = (u64*)(raw + (((size_t)Z * (3 * RW * 32 + RW) * sizeof(T) + 15) / 16) * 16);
  u64* xr = ring + (size_t)Z * RR * 32 * W;   // x-1 of warp 0, from the x-group before
  u64* zr = xr + (size_t)RE * 32 * W;         // z-1 of each warp's lane 0, from the z-block before
  const int words = Z * RR * 32 * W + RE * 32 * W + Z * RE * W;
  const int steps = X1 + 32;
  for (;;) {
    __syncthreads();
    if (threadIdx.x == 0) unit_s = atomicAdd(ticket, 1u);
    if (lane == 0 && warp < Z) done[warp] = -1;
    for (int k = threadIdx.x; k < words; k += blockDim.x) ring[k] = 0;
    __syncthreads();
    const int unit = unit_s;
    if (unit >= XG * ZB) return;
    const int xg = unit / ZB, zb = unit % ZB;
    const int x = xg * Z + warp, z = zb * 32 + lane;
    const int last = min(Z, X0 - xg * Z) - 1;
    const unsigned rbase = 0;
    if (warp <= last) {
      long long pr[6] = {0, 0, 0, 0, 0, 0}; const long long _u0 = clock64();
      const bool zin = z < X2, zcopy = z <= X2;
      const bool e31 = lane == 31 && zb * 32 + 32 <= X2;
      T* ux = u + (size_t)(x + 1) * s0 + s1 + (z + 1);
      const T* un = ux + s0;
      const T* fx = f + (size_t)(x + 1) * s0 + s1 + (z + 1);
      u64* myring = ring + (size_t)warp * RR * 32 * W;
      const u64* inring = ring + (size_t)(warp - 1) * RR * 32 * W;
#ifdef NOXDEP
      const bool xfrom = false;
#else
      const bool xfrom = warp == 0 && xg > 0;
#endif       // x-1 from the x-group before
#ifdef NOXDEP
      const bool xhalo = warp == 0;
#else
      const bool xhalo = warp == 0 && xg == 0;
#endif      // x-1 is the boundary
      const bool xto = warp == Z - 1 && x + 1 < X0; // x+1 in the next x-group
      u64* xout = xh + ((size_t)unit * steps * 32 + lane) * W;
#ifdef NOXDEP
      const bool zfrom = false, zhalo = lane == 0;
#else
      const bool zfrom = lane == 0 && zb > 0, zhalo = lane == 0 && zb == 0;
#endif
      const bool zto = lane == 31 && zb + 1 < ZB;
      u64* zout = zh + ((size_t)(unit * Z + warp) * X1) * W;
      auto copy = [&](int q) {
#ifdef ABL_NOCOPY
        if (false) {
#else
        if (q <= X1) {
#endif
          const int sl = (q % RW) * 32 + lane;
          if (zcopy) { cp(&wu[sl], ux + (size_t)q * s1, sizeof(T)); cp(&wn[sl], un + (size_t)q * s1, sizeof(T)); }
          if (zin && q < X1) cp(&wf[sl], fx + (size_t)q * s1, sizeof(T));
          if (e31) cp(&we[q % RW], ux + (size_t)q * s1 + 1, sizeof(T));
        }
        asm volatile("cp.async.commit_group;");
      };
      for (int q = 0; q < D; ++q) copy(q);
      T prev = zcopy ? ux[-(ptrdiff_t)s1] : T(0);  // row y = -1 (boundary)
      // Hand-over queues, UNROLL steps ahead.
      T qh[UNROLL]; T qzh[UNROLL];
#pragma unroll
      for (int i = 0; i < UNROLL; ++i) {
        const int y = i - lane;
        if (xhalo && y >= 0 && y < X1 && zin) qh[i] = u[(size_t)(y + 1) * s1 + z + 1];
        if (zhalo && i < X1) qzh[i] = u[(size_t)(x + 1) * s0 + (size_t)(i + 1) * s1];
      }
      for (int t0 = 0; t0 < steps; t0 += UNROLL) {
#pragma unroll
        for (int i = 0; i < UNROLL; ++i) {
          const int tau = t0 + i;
          copy(tau + D);
          { TIC asm volatile("cp.async.wait_group %0;" :: "n"(D - 1)); TOC(0) }
          TIC
          if (tau % G == 0 && warp < last) {
            { int n = 0; while (done[warp + 1] < tau + G - 1 - RR) { if (++n > (1 << 24)) { atomicAdd(&g_err[0], 1u); break; } } }
          }
          const int y = tau - lane;
          const bool act = zin && y >= 0 && y < X1;
          const int sy = ((y + RW) % RW) * 32 + lane, sy1 = ((y + 1 + RW) % RW) * 32 + lane;
          const T ahead = wu[sy1];
          T zp = __shfl_down_sync(0xffffffffu, ahead, 1);
          if (lane == 31) zp = we[(y + RW) % RW];
          T zm = __shfl_up_sync(0xffffffffu, prev, 1);
          TOC(1)
          { TIC
          if (zfrom) {
            if (act) { const volatile u64* p = zr + ((size_t)warp * RE + y % RE) * W; u64 wv[W]; int n = 0;
              do { wv[0] = p[0]; if (W == 2) wv[1] = p[1]; if (++n > (1 << 24)) { atomicAdd(&g_err[1], 1u); break; } } while (!ok<T>(wv, (unsigned)(y + 1) + base));
              zm = val<T>(wv); }
          } else if (zhalo) {
            zm = qzh[i];
            const int yn = y + UNROLL; if (yn < X1) qzh[i] = u[(size_t)(x + 1) * s0 + (size_t)(yn + 1) * s1];
          }
          TOC(2) }
          T xm; { TIC
          if (xfrom) {
            u64 wv[W]; wv[0] = 0; if (W == 2) wv[1] = 0;
            if (act) { const volatile u64* p = xr + ((size_t)(tau % RE) * 32 + lane) * W; int n = 0;
              do { wv[0] = p[0]; if (W == 2) wv[1] = p[1]; if (++n > (1 << 24)) { atomicAdd(&g_err[2], 1u); break; } } while (!ok<T>(wv, (unsigned)(tau + 1) + base)); }
            xm = val<T>(wv);
          } else if (xhalo) {
            xm = qh[i];
            const int tn = tau + UNROLL, yn = tn - lane; if (zin && yn >= 0 && yn < X1) qh[i] = u[(size_t)(yn + 1) * s1 + z + 1];
          } else {
            u64 wv[W];
            const u64* p = inring + ((size_t)(tau % RR) * 32 + lane) * W;
#ifdef ABL_NORING
            if (act) { wv[0] = ((volatile u64*)p)[0]; if (W == 2) wv[1] = ((volatile u64*)p)[1]; }
#else
            if (act) { int n = 0; do { wv[0] = ((volatile u64*)p)[0]; if (W == 2) wv[1] = ((volatile u64*)p)[1]; if (++n > (1 << 24)) { atomicAdd(&g_err[3], 1u); break; } } while (!ok<T>(wv, (unsigned)(tau + 1) + rbase)); }
#endif
            else { wv[0] = 0; if (W == 2) wv[1] = 0; }
            xm = val<T>(wv);
          }
          TOC(3) }
          if (lane == 0) done[warp] = tau;
          if (act) {
#ifdef ABL_DIV
            const T v = (xm + wn[sy] + prev + ahead + zm + zp + h2 * wf[sy]) * T(1.0 / 6.0);
#else
            const T v = (xm + wn[sy] + prev + ahead + zm + zp + h2 * wf[sy]) / T(6);
#endif
            prev = v;
            wu[sy] = v;
            u64 wv[W];
            put<T>(wv, v, (unsigned)(tau + 1) + rbase);
            if (warp < last) { u64* p = myring + ((size_t)(tau % RR) * 32 + lane) * W; p[0] = wv[0]; if (W == 2) p[1] = wv[1]; }
            if (xto) { put<T>(wv, v, (unsigned)(tau + 1) + base); u64* p = xout + (size_t)tau * 32 * W; p[0] = wv[0]; if (W == 2) p[1] = wv[1]; }
            if (zto) { put<T>(wv, v, (unsigned)(y + 1) + base); u64* p = zout + (size_t)y * W; p[0] = wv[0]; if (W == 2) p[1] = wv[1]; }
          }
          const int r = tau - 32;
#ifndef ABL_NOSTORE
          if (zin && r >= 0 && r < X1) ux[(size_t)r * s1] = wu[(r % RW) * 32 + lane];
#endif
        }
      }
      asm volatile("cp.async.wait_group 0;");
#ifdef PROF
      pr[4] = clock64() - _u0; pr[5] = steps;
      if (lane == 0) for (int k = 0; k < 6; ++k) atomicAdd(&g_prof[k], (unsigned long long)pr[k]);
      if (lane == 0) atomicAdd(&g_prof[6], 1ull);
#endif
    } else if (warp == Z) {
      // The receiver: polls the hand-overs from the blocks before, B steps at a time, into the shared rings.
      const bool xon = xg > 0 && zb * 32 + lane < X2, zon = zb > 0 && lane <= last;
      const u64* xin = xh + ((size_t)((xg - 1) * ZB + zb) * steps * 32 + lane) * W;
      const u64* zin_p = zh + ((size_t)((xg * ZB + zb - 1) * Z + lane) * X1) * W;
      if (xon || zon) {
        for (int k0 = 0; k0 < steps; k0 += B) {
          if (xon) { int n = 0; while (done[0] < k0 + B - 1 - RE) { if (++n > (1 << 24)) { atomicAdd(&g_err[0], 1u); break; } } }
          if (zon) { int n = 0; while (done[lane] < k0 + B - 1 - RE) { if (++n > (1 << 24)) { atomicAdd(&g_err[0], 1u); break; } } }
          unsigned nx = 0, nz = 0;
#pragma unroll
          for (int i = 0; i < B; ++i) {
            const int k = k0 + i;
            if (xon && k - lane >= 0 && k - lane < X1) nx |= 1u << i;
            if (zon && k < X1) nz |= 1u << i;
          }
          u64 xv[B][W], zv[B][W];
          int n = 0;
          while (nx | nz) {
#pragma unroll
            for (int i = 0; i < B; ++i) {
              if (nx >> i & 1) ldg_v<T>(xv[i], xin + (size_t)(k0 + i) * 32 * W);
              if (nz >> i & 1) ldg_v<T>(zv[i], zin_p + (size_t)(k0 + i) * W);
            }
#pragma unroll
            for (int i = 0; i < B; ++i) {
              const int k = k0 + i;
              if ((nx >> i & 1) && ok<T>(xv[i], (unsigned)(k + 1) + base)) {
                u64* p = xr + ((size_t)(k % RE) * 32 + lane) * W; p[0] = xv[i][0]; if (W == 2) p[1] = xv[i][1]; nx &= ~(1u << i);
              }
              if ((nz >> i & 1) && ok<T>(zv[i], (unsigned)(k + 1) + base)) {
                u64* p = zr + ((size_t)lane * RE + k % RE) * W; p[0] = zv[i][0]; if (W == 2) p[1] = zv[i][1]; nz &= ~(1u << i);
              }
            }
            if (++n > (1 << 22)) { atomicAdd(&g_err[3], 1u); break; }
          }
        }
      }
    }
  }
}

// The team: K compute warps doing only the chain, NL loaders copying the compute warps' rows a group
// of TG steps at a time TA groups ahead, NS storers storing finished rows, and the receiver as above. The
// compute warps, loader and storer meet at a named barrier every TG steps; compute warp w runs TL * w
// steps behind warp 0, so the x - 1 values it reads from warp w - 1's ring are at most a few steps old.
#ifndef TG
#define TG 4
#endif
#ifndef TA
#define TA 2
#endif
#ifndef TL
#define TL 2
#endif
#ifndef NL
#define NL 4
#endif
#ifndef NS
#define NS 2
#endif
#define TB (32 * (K + NL + NS))
#ifndef TRW
#define TRW 48
#endif
#define TRR 16
#if defined(NOXDEP) || defined(NOX)
#define NOXB true
#else
#define NOXB false
#endif
#if defined(NOXDEP) || defined(NOZ)
#define NOZB true
#else
#define NOZB false
#endif
static_assert(TRW > (TA + 2) * TG + 31, "the windows hold every row from the storer's to the loader's");
static_assert(TRR > TG + TL, "a ring holds every step between a producer's and its consumer's");

template <typename T, int K>
__global__ void __launch_bounds__(32 * (K + NL + NS + 1)) team(T* u, const T* __restrict__ f, T h2, int n0, int n1, int n2,
    u64* __restrict__ xh, u64* __restrict__ zh, unsigned* ticket, int XG, int ZB, unsigned base) {
  constexpr int W = sizeof(T) / 4;
  extern __shared__ __align__(16) unsigned char raw[];
  __shared__ volatile int done[K];
  __shared__ int unit_s;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int X0 = n0 - 2, X1 = n1 - 2, X2 = n2 - 2;
  const size_t s0 = (size_t)n1 * n2, s1 = n2;
  T* const wins = (T*)raw;                                   // per compute warp: wu, wn, wf [TRW][32], we [TRW]
  T* const wm = wins + (size_t)K * (3 * TRW * 32 + TRW);     // x - 1 boundary plane for warp 0 [TRW][32]
  T* const wzm = wm + TRW * 32;                              // z - 1 boundary column per warp [K][TRW]
  u64* const ring = (u64*)(raw + (((size_t)(K * (3 * TRW * 32 + TRW) + TRW * 32 + K * TRW) * sizeof(T) + 15) / 16) * 16);
  u64* const xr = ring + (size_t)K * TRR * 32 * W;
  u64* const zr = xr + (size_t)RE * 32 * W;
  const int words = K * TRR * 32 * W + RE * 32 * W + K * RE * W;
  const int steps = X1 + 32;
  const int groups = (X1 + 32 + TL * (K - 1) + TG - 1) / TG + 1;
  for (;;) {
    __syncthreads();
    if (threadIdx.x == 0) unit_s = atomicAdd(ticket, 1u);
    if (lane == 0 && warp < K) done[warp] = -1;
    for (int k = threadIdx.x; k < words; k += blockDim.x) ring[k] = 0;
    __syncthreads();
    const int unit = unit_s;
    if (unit >= XG * ZB) return;
    const int xg = unit / ZB, zb = unit % ZB;
    const int last = min(K, X0 - xg * K) - 1;
    const int z = zb * 32 + lane;
    if (warp < K) {
      const int x = xg * K + warp;
      const bool xin = warp <= last, zin = z < X2;
      T* const wu = wins + (size_t)warp * (3 * TRW * 32 + TRW);
      T* const wn = wu + TRW * 32; T* const wf = wn + TRW * 32; T* const we = wf + TRW * 32;
      T* const wz = wzm + warp * TRW;
#if defined(NOXDEP) || defined(NOX)
      const bool xfrom = false, xhalo = warp == 0;
#else
      const bool xfrom = warp == 0 && xg > 0, xhalo = warp == 0 && xg == 0;
#endif
#if defined(NOXDEP) || defined(NOZ)
      const bool zfrom = false, zhalo = lane == 0;
#else
      const bool zfrom = lane == 0 && zb > 0, zhalo = lane == 0 && zb == 0;
#endif
      const bool xto = warp == K - 1 && x + 1 < X0, zto = lane == 31 && zb + 1 < ZB;
      u64* const myring = ring + (size_t)warp * TRR * 32 * W;
      const u64* const inring = ring + (size_t)(warp - 1) * TRR * 32 * W;
      u64* const xout = xh + ((size_t)unit * steps * 32 + lane) * W;
      u64* const zout = zh + ((size_t)(unit * K + warp) * X1) * W;
      T prev = (xin && z <= X2) ? u[(size_t)(x + 1) * s0 + (z + 1)] : T(0);  // row y = -1
      asm volatile("bar.sync 1, %0;" :: "n"(TB));
      for (int g = 0; g < groups; ++g) {
#pragma unroll
        for (int i = 0; i < TG; ++i) {
          const int tau = g * TG + i - TL * warp;
          const int y = tau - lane;
          const bool act = xin && zin && y >= 0 && y < X1;
          const int sy = (y + 8 * TRW) % TRW, sy1 = (y + 1 + 8 * TRW) % TRW;
          const T ahead = wu[sy1 * 32 + lane];
          T zp = __shfl_down_sync(0xffffffffu, ahead, 1);
          if (lane == 31) zp = we[sy];
          T zm = __shfl_up_sync(0xffffffffu, prev, 1);
          if (act && zfrom) {
            const volatile u64* p = zr + ((size_t)warp * RE + y % RE) * W; u64 wv[W]; int n = 0;
            do { wv[0] = p[0]; if (W == 2) wv[1] = p[1]; if (++n > (1 << 24)) { atomicAdd(&g_err[1], 1u); break; } } while (!ok<T>(wv, (unsigned)(y + 1) + base));
            zm = val<T>(wv);
          } else if (zhalo) zm = wz[sy];
          T xm = T(0);
          if (xhalo) xm = wm[sy * 32 + lane];
          else if (act) {
            const volatile u64* p = xfrom ? xr + ((size_t)(tau % RE) * 32 + lane) * W : inring + ((size_t)(tau % TRR) * 32 + lane) * W;
            const unsigned tag = xfrom ? (unsigned)(tau + 1) + base : (unsigned)(tau + 1);
            u64 wv[W]; int n = 0;
            do { wv[0] = p[0]; if (W == 2) wv[1] = p[1]; if (++n > (1 << 24)) { atomicAdd(&g_err[2], 1u); break; } } while (!ok<T>(wv, tag));
            xm = val<T>(wv);
          }
          if (lane == 0) done[warp] = tau;
          if (act) {
#ifdef ABL_DIV
            const T v = (xm + wn[sy * 32 + lane] + prev + ahead + zm + zp + h2 * wf[sy * 32 + lane]) * T(1.0 / 6.0);
#else
            const T v = (xm + wn[sy * 32 + lane] + prev + ahead + zm + zp + h2 * wf[sy * 32 + lane]) / T(6);
#endif
            prev = v;
            wu[sy * 32 + lane] = v;
            u64 wv[W];
            if (warp < last) { put<T>(wv, v, (unsigned)(tau + 1)); u64* p = myring + ((size_t)(tau % TRR) * 32 + lane) * W; p[0] = wv[0]; if (W == 2) p[1] = wv[1]; }
            if (xto) { put<T>(wv, v, (unsigned)(tau + 1) + base); u64* p = xout + (size_t)tau * 32 * W; p[0] = wv[0]; if (W == 2) p[1] = wv[1]; }
            if (zto) { put<T>(wv, v, (unsigned)(y + 1) + base); u64* p = zout + (size_t)y * W; p[0] = wv[0]; if (W == 2) p[1] = wv[1]; }
          }
        }
        asm volatile("bar.sync 1, %0;" :: "n"(TB));
      }
    } else if (warp < K + NL) {
      // Loader l: group gg's rows of compute warps w = l, l + NL, ...: (gg * TG - TL * w, (gg + 1) * TG - TL * w],
      // and for group 0 every row from 0.
      auto copy_group = [&](int gg) {
#ifndef ABL_NOCOPY
        for (int w = warp - K; w < K; w += NL) {
          const int x = xg * K + w;
          if (x >= X0) break;
          T* const wu = wins + (size_t)w * (3 * TRW * 32 + TRW);
          T* const wn = wu + TRW * 32; T* const wf = wn + TRW * 32; T* const we = wf + TRW * 32;
          const int q0 = gg == 0 ? 0 : max(gg * TG - TL * w + 1, 0), q1 = min((gg + 1) * TG - TL * w, X1);
          const T* ux = u + (size_t)(x + 1) * s0 + s1 + (z + 1);
          const T* fx = f + (size_t)(x + 1) * s0 + s1 + (z + 1);
          for (int q = q0; q <= q1; ++q) {
            const int sl = q % TRW;
            if (z <= X2) { cp(&wu[sl * 32 + lane], ux + (size_t)q * s1, sizeof(T)); cp(&wn[sl * 32 + lane], ux + s0 + (size_t)q * s1, sizeof(T)); }
            if (z < X2 && q < X1) cp(&wf[sl * 32 + lane], fx + (size_t)q * s1, sizeof(T));
            if (lane == 31 && z + 1 <= X2) cp(&we[sl], ux + (size_t)q * s1 + 1, sizeof(T));
            if (lane == 0 && (zb == 0 || NOZB) && q < X1) cp(&wzm[w * TRW + sl], ux + (size_t)q * s1 - 1, sizeof(T));
            if (w == 0 && (xg == 0 || NOXB) && z < X2 && q < X1) cp(&wm[sl * 32 + lane], ux - s0 + (size_t)q * s1, sizeof(T));
          }
        }
#endif
        asm volatile("cp.async.commit_group;");
      };
      for (int a = 0; a < TA; ++a) copy_group(a);
      asm volatile("cp.async.wait_group %0;" :: "n"(TA - 1));
      asm volatile("bar.sync 1, %0;" :: "n"(TB));
      for (int g = 0; g < groups; ++g) {
        copy_group(g + TA);
        asm volatile("cp.async.wait_group %0;" :: "n"(TA - 1));
        asm volatile("bar.sync 1, %0;" :: "n"(TB));
      }
      asm volatile("cp.async.wait_group 0;");
    } else if (warp < K + NL + NS) {
      // Storer s: at the start of group g, the rows every lane of compute warp w = s, s + NS, ... had finished,
      // ((g - 1) * TG - TL * w - 32, g * TG - TL * w - 32].
      asm volatile("bar.sync 1, %0;" :: "n"(TB));
      for (int g = 0; g < groups; ++g) {
#ifndef ABL_NOSTORE
        for (int w = warp - K - NL; w < K; w += NS) {
          const int x = xg * K + w;
          if (x >= X0) break;
          const T* const wu = wins + (size_t)w * (3 * TRW * 32 + TRW);
          T* ux = u + (size_t)(x + 1) * s0 + s1 + (z + 1);
          const int r0 = max((g - 1) * TG - TL * w - 31, 0), r1 = min(g * TG - TL * w - 32, X1 - 1);
          if (z < X2) for (int r = r0; r <= r1; ++r) ux[(size_t)r * s1] = wu[(r % TRW) * 32 + lane];
        }
#endif
        asm volatile("bar.sync 1, %0;" :: "n"(TB));
      }
    } else {
      // The receiver, as in l3.
      const bool xon = xg > 0 && z < X2, zon = zb > 0 && lane <= last;
      const u64* xin = xh + ((size_t)((xg - 1) * ZB + zb) * steps * 32 + lane) * W;
      const u64* zin_p = zh + ((size_t)((xg * ZB + zb - 1) * K + lane) * X1) * W;
      if (xon || zon) {
        for (int k0 = 0; k0 < steps; k0 += B) {
          if (xon) { int n = 0; while (done[0] < k0 + B - 1 - RE) { if (++n > (1 << 24)) { atomicAdd(&g_err[0], 1u); break; } } }
          if (zon) { int n = 0; while (done[lane] < k0 + B - 1 - RE) { if (++n > (1 << 24)) { atomicAdd(&g_err[0], 1u); break; } } }
          unsigned nx = 0, nz = 0;
#pragma unroll
          for (int i = 0; i < B; ++i) {
            const int k = k0 + i;
            if (xon && k - lane >= 0 && k - lane < X1) nx |= 1u << i;
            if (zon && k < X1) nz |= 1u << i;
          }
          u64 xv[B][W], zv[B][W];
          int n = 0;
          while (nx | nz) {
#pragma unroll
            for (int i = 0; i < B; ++i) {
              if (nx >> i & 1) ldg_v<T>(xv[i], xin + (size_t)(k0 + i) * 32 * W);
              if (nz >> i & 1) ldg_v<T>(zv[i], zin_p + (size_t)(k0 + i) * W);
            }
#pragma unroll
            for (int i = 0; i < B; ++i) {
              const int k = k0 + i;
              if ((nx >> i & 1) && ok<T>(xv[i], (unsigned)(k + 1) + base)) {
                u64* p = xr + ((size_t)(k % RE) * 32 + lane) * W; p[0] = xv[i][0]; if (W == 2) p[1] = xv[i][1]; nx &= ~(1u << i);
              }
              if ((nz >> i & 1) && ok<T>(zv[i], (unsigned)(k + 1) + base)) {
                u64* p = zr + ((size_t)lane * RE + k % RE) * W; p[0] = zv[i][0]; if (W == 2) p[1] = zv[i][1]; nz &= ~(1u << i);
              }
            }
            if (++n > (1 << 22)) { atomicAdd(&g_err[3], 1u); break; }
          }
        }
      }
    }
  }
}

template <typename T> void cpu_sweep(std::vector<T>& u, const std::vector<T>& f, T h2, int n0, int n1, int n2) {
  const size_t s0 = (size_t)n1 * n2, s1 = n2;
  for (int x = 1; x < n0 - 1; ++x) for (int y = 1; y < n1 - 1; ++y) for (int z = 1; z < n2 - 1; ++z) {
    size_t p = x * s0 + y * s1 + z;
    u[p] = (u[p - s0] + u[p + s0] + u[p - s1] + u[p + s1] + u[p - 1] + u[p + 1] + h2 * f[p]) / T(6);
  }
}

__global__ void copy4(const float4* a, float4* b, size_t n4) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) b[i] = a[i];
}

template <typename T, int Z, bool TEAM = false> struct Run {
  int n0, n1, n2, XG, ZB; size_t smem; T* du; T* df; u64* xh; u64* zh; unsigned* tk; unsigned base = 0; int blocks;
  Run(int a, int b, int c) : n0(a), n1(b), n2(c) {
    XG = (n0 - 2 + Z - 1) / Z; ZB = (n2 - 2 + 31) / 32;
    size_t N = (size_t)n0 * n1 * n2;
    CK(cudaMalloc(&du, N * sizeof(T))); CK(cudaMalloc(&df, N * sizeof(T)));
    int steps = n1 - 2 + 32;
    CK(cudaMalloc(&xh, (size_t)XG * ZB * steps * 32 * 8 * sizeof(T) / 4));
    CK(cudaMalloc(&zh, (size_t)XG * ZB * Z * (n1 - 2) * 8 * sizeof(T) / 4 + 8));
    CK(cudaMemset(xh, 0, (size_t)XG * ZB * steps * 32 * 8 * sizeof(T) / 4));
    CK(cudaMemset(zh, 0, (size_t)XG * ZB * Z * (n1 - 2) * 8 * sizeof(T) / 4 + 8));
    CK(cudaMalloc(&tk, 4));
    if (TEAM) smem = ((size_t)(Z * (3 * TRW * 32 + TRW) + TRW * 32 + Z * TRW) * sizeof(T) + 15) / 16 * 16 + ((size_t)Z * TRR * 32 + RE * 32 + (size_t)Z * RE) * 8 * sizeof(T) / 4;
    else smem = ((size_t)Z * (3 * RW * 32 + RW) * sizeof(T) + 15) / 16 * 16 + ((size_t)Z * RR * 32 + RE * 32 + (size_t)Z * RE) * 8 * sizeof(T) / 4;
    CK(cudaFuncSetAttribute(kernel(), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int per = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel(), threads(), smem));
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    blocks = per * sms; if (blocks > XG * ZB) blocks = XG * ZB;
    if (per == 0) { printf("does not fit: smem %zu\n", smem); exit(1); }
  }
  static auto kernel() { return TEAM ? team<T, Z> : l3<T, Z>; }
  static int threads() { return 32 * (Z + (TEAM ? NL + NS + 1 : 1)); }
  void sweep(cudaStream_t s) {
    CK(cudaMemsetAsync(tk, 0, 4, s));
    kernel()<<<blocks, threads(), smem, s>>>(du, df, T(0.01), n0, n1, n2, xh, zh, tk, XG, ZB, base);
    base += (unsigned)(n1 + 40);
  }
};

template <typename T, int Z, bool TEAM = false> void test(int n0, int n1, int n2, bool check, int reps) {
  Run<T, Z, TEAM> r(n0, n1, n2);
  size_t N = (size_t)n0 * n1 * n2;
  std::vector<T> hu(N), hf(N);
  unsigned s = 12345u;
  for (size_t i = 0; i < N; ++i) { s = s * 1664525u + 1013904223u; hu[i] = T((s >> 8) & 0xffff) / T(65536) - T(0.5); s = s * 1664525u + 1013904223u; hf[i] = T((s >> 8) & 0xffff) / T(4096); }
  CK(cudaMemcpy(r.du, hu.data(), N * sizeof(T), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(r.df, hf.data(), N * sizeof(T), cudaMemcpyHostToDevice));
  if (check) {
    for (int k = 0; k < 2; ++k) { r.sweep(0); cpu_sweep(hu, hf, T(0.01), n0, n1, n2); }
    CK(cudaDeviceSynchronize());
    std::vector<T> g(N); CK(cudaMemcpy(g.data(), r.du, N * sizeof(T), cudaMemcpyDeviceToHost));
    size_t bad = 0; for (size_t i = 0; i < N; ++i) if (memcmp(&g[i], &hu[i], sizeof(T))) { if (bad < 4) printf("  bad at %zu %zu %zu: %g vs %g\n", i / ((size_t)n1 * n2), i / n2 % n1, i % n2, (double)g[i], (double)hu[i]); ++bad; }
    unsigned he[4]; CK(cudaMemcpyFromSymbol(he, g_err, sizeof(he))); if (he[0] | he[1] | he[2] | he[3]) printf("spin caps hit: flow %u z %u x %u ring %u\n", he[0], he[1], he[2], he[3]);
    printf("check %s%s Z=%d %dx%dx%d: %zu differing of %zu (blocks %d, smem %zu)\n", TEAM ? "team " : "", sizeof(T) == 4 ? "f32" : "f64", Z, n0, n1, n2, bad, N, r.blocks, r.smem);
  }
  if (reps > 0) {
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int k = 0; k < 3; ++k) r.sweep(0);
    float best = 1e30f;
    for (int rep = 0; rep < 3; ++rep) {
      CK(cudaEventRecord(a)); for (int k = 0; k < reps; ++k) r.sweep(0); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
      float ms; CK(cudaEventElapsedTime(&ms, a, b)); ms /= reps; if (ms < best) best = ms;
    }
    CK(cudaGetLastError());
    double pts = (double)(n0 - 2) * (n1 - 2) * (n2 - 2);
#ifdef PROF
    { unsigned long long z8[8] = {0}; CK(cudaMemcpyToSymbol(g_prof, z8, sizeof(z8))); r.sweep(0); CK(cudaDeviceSynchronize());
      unsigned long long h[8]; CK(cudaMemcpyFromSymbol(h, g_prof, sizeof(h)));
      double ws = (double)h[5]; printf("  prof per warp-step (cycles): cp.wait %.0f flow %.0f z %.0f x %.0f, unit %.0f; warp-units %llu, steps/unit %.0f\n",
        h[0] / ws, h[1] / ws, h[2] / ws, h[3] / ws, h[4] / ws, h[6], ws / h[6]); }
#endif
    printf("time %s%s Z=%d %d^3: %.1f us/sweep, %.1f Gpt/s\n", TEAM ? "team " : "", sizeof(T) == 4 ? "f32" : "f64", Z, n0 - 2, best * 1e3, pts / best / 1e6);
  }
}

double copy_probe(size_t bytes) {
  float4 *a, *b; CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes)); CK(cudaMemset(a, 1, bytes));
  size_t n4 = bytes / 16; cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  copy4<<<1320, 512>>>(a, b, n4); float best = 1e30f;
  for (int r = 0; r < 5; ++r) { CK(cudaEventRecord(e0)); for (int k = 0; k < 20; ++k) copy4<<<1320, 512>>>(a, b, n4); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ms /= 20; if (ms < best) best = ms; }
  CK(cudaFree(a)); CK(cudaFree(b));
  return 2.0 * bytes / (best * 1e-3) / 1e9;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int mode = argc > 1 ? atoi(argv[1]) : 0;
  if (mode == 0) {
    test<float, 8>(15, 13, 19, true, 0); test<float, 8>(10, 13, 19, true, 0); test<float, 8>(10, 13, 40, true, 0); test<float, 8>(15, 40, 19, true, 0); test<float, 8>(10, 30, 40, true, 0); test<float, 8>(10, 35, 40, true, 0); test<float, 8>(39, 47, 70, true, 0); test<float, 8>(8, 40, 34, true, 0);
    test<double, 4>(15, 13, 19, true, 0); test<double, 4>(39, 47, 70, true, 0);
    test<float, 8>(258, 258, 258, true, 0); test<double, 4>(130, 66, 98, true, 0);
  }
  if (mode == 2) {
    double gb = copy_probe((size_t)256 * 256 * 256 * 4);
    printf("copy probe 256^3 f32 bytes: %.0f GB/s -> bound f32 %.1f Gpt/s\n", gb, gb / 12);
    test<float, ZF>(258, 258, 258, false, 10);
  }
  if (mode == 3) {
    test<float, 8, true>(15, 13, 19, true, 0); test<float, 8, true>(10, 13, 40, true, 0); test<float, 8, true>(15, 40, 19, true, 0);
    test<float, 8, true>(10, 30, 40, true, 0); test<float, 8, true>(39, 47, 70, true, 0); test<float, 8, true>(8, 40, 34, true, 0);
    test<float, 5, true>(39, 47, 70, true, 0); test<double, 3, true>(15, 13, 19, true, 0); test<double, 3, true>(39, 47, 70, true, 0);
    test<float, 8, true>(258, 258, 258, true, 0); test<double, 3, true>(130, 66, 98, true, 0);
  }
  if (mode == 4) {
    for (int n : {256, 512}) {
      double gb = copy_probe((size_t)n * n * n * 4);
      printf("copy probe %d^3 f32 bytes: %.0f GB/s -> bound f32 %.1f Gpt/s, f64 %.1f Gpt/s\n", n, gb, gb / 12, gb / 24);
      test<float, 8, true>(n + 2, n + 2, n + 2, false, 10);
      test<float, 6, true>(n + 2, n + 2, n + 2, false, 10);
      test<double, 3, true>(n + 2, n + 2, n + 2, false, 10);
    }
  }
  if (mode == 6) {
    test<float, 7, true>(15, 13, 19, true, 0); test<float, 7, true>(10, 30, 40, true, 0); test<float, 7, true>(39, 47, 70, true, 0);
    test<float, 7, true>(258, 258, 258, true, 0);
  }
  if (mode == 5) {
    double gb = copy_probe((size_t)256 * 256 * 256 * 4);
    printf("copy probe 256^3 f32 bytes: %.0f GB/s -> bound f32 %.1f Gpt/s\n", gb, gb / 12);
    test<float, 7, true>(258, 258, 258, false, 10);
    test<float, 8, true>(258, 258, 258, false, 10);
  }
  if (mode == 1) {
    for (int n : {256, 512}) {
      double gb = copy_probe((size_t)n * n * n * 4);
      printf("copy probe %d^3 f32 bytes: %.0f GB/s -> bound f32 %.1f Gpt/s, f64 %.1f Gpt/s\n", n, gb, gb / 12, gb / 24);
      test<float, 8>(n + 2, n + 2, n + 2, false, 10);
      test<double, 4>(n + 2, n + 2, n + 2, false, 10);
    }
  }
  return 0;
}
