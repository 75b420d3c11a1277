// A lane per line: the design of a wavefront kernel whose step waits on neither a block barrier
// nor global memory, written out by hand for the alternate-triangular step of
// `07_convection_diffusion` (the built-in sweeps `at_half1` and `at_half2`), so that its time per
// step can be measured before the generator emits it for every sweep stencil. It checks itself:
// the grid after two steps against the sequential sweep on the host, bit for bit in exact mode.
//
//   exact: nvcc -O3 -arch=sm_90 -fmad=false -prec-div=true -Xcompiler -ffp-contract=off -DGROUP=16 -o lanes tools/wavefront_lanes.cu
//   fast:  nvcc -O3 -arch=sm_90 -DFAST -prec-div=false -DGROUP=16 -o lanes_fast tools/wavefront_lanes.cu
//   ./lanes [nx ny steps]       (default 3600 1800 50)
//   -DDOUBLE: the f64 sweep (with -DWARPS=2: its windows are twice as large); -DIEEE_DIV: exact f32
//   division by the hardware's instruction; -DROW_LENGTH=n1: the row stride as a constant; -DTAGS: the
//   line before passed as tagged entries read a few steps ahead instead of through counters;
//   -DSPIN_SLEEP=ns: a helper's polls sleep; -DMBAR: hardware barriers instead of counters between the
//   warps of a block. Measured in docs/performance.md; -DTAGS is wrong (it hangs at 3600 x 1800 and
//   differs at 200 x 97). The generator's version of this design is stencil-macros/src/emit_cuda/lanes.rs.
//
// Each lane owns a line of the grid along the walk axis (axis 0, x) at one y and walks it in the
// sweep's direction; lane j is one step behind lane j − 1, whose line is the one before it in the
// sweep's order along y, so a warp's 32 lanes compute a skewed row of 32 points per step. At a
// step a lane needs two new values — its own previous point (a register) and lane j − 1's point
// at the same x, computed a step earlier (`__shfl_up_sync`) — and three old ones: its own point,
// the next along its line, and lane j + 1's point at the same x, which lane j + 1 read as its next
// point (`__shfl_down_sync`). Lane 0's line before is the previous warp's lane 31's (passed through
// a ring in shared memory, or for a block's first warp read from global memory once the previous
// block has stored it); lane 31's line after is old values.
//
// The rows live in a window in shared memory (a ring of rows, read along the skew without bank
// conflicts), filled and drained whole — coalesced — by a helper warp, one per compute warp, a
// group of steps ahead; the pair meets at a named barrier once a group. The compute warp's
// instruction stream is then the steps alone: its window reads for a group, two shuffles, the
// point function and a store of the new value per step. Progress between warps is a counter per
// warp (release/acquire in shared memory) and one per block (in global memory).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifndef GROUP
#define GROUP 16  // steps per group: the pair's barrier, the window's refill and progress, once a group
#endif
#ifndef WARPS
#define WARPS 4  // compute warps per block, each with its helper warp
#endif
#define RING 128   // rows of a warp's window: between two barriers the rows in use span 4·GROUP + 31
static_assert(4 * GROUP + 31 <= RING, "the window's rows in use would overlap");
#define PITCH 34   // φ's row pitch in the window: 34 ≡ 2 (mod 32), so the lanes' skewed reads hit 32 banks
#define QPITCH 32  // q's: the same reads, row pitch ≡ 0 (mod 32)
#define EDGE 256   // rows of the line-before ring a warp's predecessor fills

#ifdef DOUBLE
typedef double real;  // -DDOUBLE: the f64 sweep
#else
typedef float real;
#endif

// One half-step: the walk's direction along x, the lanes' order along y, and the point
// function's coefficients in the order of its reads: the point before along the walk (new), on
// the line before (new), after along the walk (old), on the line after (old).
struct Half {
  int dx, dy;
  real c1, c2, c3, c4;
  real nf, ht, den;  // 1 − τ·d/2 for the point itself, τ/2, 1 + τ·d'/2
};

#ifdef __CUDACC__
__device__ __forceinline__ float divide(const float a, const float b) {
#if defined(FAST)
  return __fdividef(a, b);  // a times the approximate reciprocal of b, which a loop hoists
#elif defined(IEEE_DIV)
  // The hardware's IEEE division, its zero dividend answered without the slow path.
  const bool zero = a == 0.0f && b == b && b != 0.0f;
  const float q = (zero ? 1.0f : a) / b;
  return zero ? __uint_as_float((__float_as_uint(a) ^ __float_as_uint(b)) & 0x80000000u) : q;
#else
  // The correctly rounded quotient without a slow path: a times the double-precision reciprocal
  // of b is within 2^-51.9 of a/b, and a quotient of two 24-bit significands is never closer than
  // 2^-49 (relative) to a midpoint between floats, so rounding it to float rounds a/b.
  return (float)((double)a * (1.0 / (double)b));
#endif
}

__device__ __forceinline__ double divide(const double a, const double b) {
  const bool zero = a == 0.0 && b == b && b != 0.0;
  const double q = (zero ? 1.0 : a) / b;
  return zero ? __longlong_as_double((__double_as_longlong(a) ^ __double_as_longlong(b)) & (1ll << 63)) : q;
}

__device__ __forceinline__ real point(const Half& h, real r0, real r1, real r2, real r3, real r4, real r5) {
  return divide((r0 * h.nf) + (h.ht * (((((h.c1 * r1) + (h.c2 * r2)) + (h.c3 * r3)) + (h.c4 * r4)) + r5)), h.den);
}

// A warp's window: the rows of its 32 lines (column 32: the line after, old values) and of q, in
// rings indexed by the row's walk index modulo RING, rows 0 … GROUP − 1 repeated after the last so
// that a group's reads (at most GROUP rows from any slot) never wrap; the line-before ring its
// predecessor in the block fills; and two counters, release-stored and acquire-loaded.
#define SLOTS (RING + GROUP)
#ifdef TAGS
// -DTAGS: the line before passes as tagged entries, a 32-bit half of a value beside its row + 1 in
// one 64-bit word (written and read whole, so a reader sees a value with its row or an older entry):
// a lane 0 reads each row as soon as it is written, LOOK steps ahead of its use, with no counter.
#ifndef LOOK
#define LOOK 8  // steps between a row's read and its use
#endif
#define LINK 1024  // rows of the global ring that carries a block's last line to the next block
#define HALVES ((int)(sizeof(real) / 4))
typedef unsigned long long entry;
static_assert(GROUP % LOOK == 0, "a group holds whole look-ahead windows");
#endif
#ifdef MBAR
// -DMBAR: the line before passes between the warps of a block through hardware barriers in shared
// memory (mbarrier), a stage of GROUP rows each, which compute-sanitizer follows, instead of counters:
// `full` completes when the predecessor has written a stage, `empty` when this warp has read it.
#define STAGES (EDGE / GROUP)
#endif
struct Window {
#ifdef MBAR
  unsigned long long full[STAGES], empty[STAGES];
#endif
  real phi[SLOTS * PITCH];
  real q[SLOTS * QPITCH];
  real edge[EDGE];
#ifdef TAGS
  entry tagged[EDGE * HALVES];
#endif
  int computed;  // rows this warp's lane 31 has computed (and written into the successor's edge)
  int consumed;  // rows of the edge ring this warp's lane 0 has read
};

__device__ __forceinline__ int load_acquire_cta(const int* p) {
  int v;
  asm volatile("ld.acquire.cta.shared::cta.b32 %0, [%1];" : "=r"(v) : "r"((unsigned)__cvta_generic_to_shared(p)) : "memory");
  return v;
}
__device__ __forceinline__ void store_release_cta(int* p, int v) {
  asm volatile("st.release.cta.shared::cta.b32 [%0], %1;" ::"r"((unsigned)__cvta_generic_to_shared(p)), "r"(v) : "memory");
}
__device__ __forceinline__ int load_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release_gpu(int* p, int v) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

#ifdef MBAR
__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(unsigned long long* b, const unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(b)) : "memory");
}
// Until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(unsigned long long* b, const unsigned parity) {
  unsigned done = 0;
  while (!done) {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(smem(b)), "r"(parity)
        : "memory");
  }
}
#endif

// A helper's wait for a counter. It shares a scheduler with a compute warp; -DSPIN_SLEEP=ns makes
// each poll sleep, leaving the issue slots to the compute warp.
#ifdef SPIN_SLEEP
#define SPIN() __nanosleep(SPIN_SLEEP)
#else
#define SPIN()
#endif

#ifdef TAGS
__device__ __forceinline__ unsigned half_bits(const float v, int) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned half_bits(const double v, const int h) {
  return (unsigned)((unsigned long long)__double_as_longlong(v) >> (32 * h));
}
__device__ __forceinline__ float from_halves(const entry* e, float) { return __uint_as_float((unsigned)e[0]); }
__device__ __forceinline__ double from_halves(const entry* e, double) {
  return __longlong_as_double((long long)(((e[1] & 0xffffffffull) << 32) | (e[0] & 0xffffffffull)));
}
// Row r's entries (both halves of an f64) from a ring of `mask + 1` rows.
__device__ __forceinline__ void read_row(entry* e, const entry* ring, const int mask, const int r) {
#pragma unroll
  for (int h = 0; h < HALVES; ++h) e[h] = *(const volatile entry*)&ring[(r & mask) * HALVES + h];
}
__device__ __forceinline__ bool row_is(const entry* e, const int r) {
  bool ok = true;
#pragma unroll
  for (int h = 0; h < HALVES; ++h) ok = ok && (unsigned)(e[h] >> 32) == (unsigned)(r + 1);
  return ok;
}
__device__ __forceinline__ void write_row(entry* ring, const int mask, const int r, const real v) {
#pragma unroll
  for (int h = 0; h < HALVES; ++h) {
    *(volatile entry*)&ring[(r & mask) * HALVES + h] = ((entry)(unsigned)(r + 1) << 32) | half_bits(v, h);
  }
}
#endif

// Walk index k is the point x = 1 + k (walking up) or NX − k (down); k = −1 and NX are the boundary
// planes. Line g (0 … NY − 1 in the sweep's order along y; −1 and NY the boundary lines) is at
// y = 1 + g or NY − g. A column pointer is a line's k = 0 point; a step along the walk is `stride`.
#define YLINE(g) (DY > 0 ? 1 + (g) : NY - (g))

// Row r into slot s = (r & (RING − 1)) + u of a window array (column already added), which may lie
// past the ring: slots s and s − RING hold the same row, as do s < GROUP and s + RING.
#define PUT_ROW(array, pitch, s, x)                                  \
  {                                                                   \
    (array)[(s) * (pitch)] = (x);                                     \
    if ((s) >= RING) (array)[((s) - RING) * (pitch)] = (x);           \
    if ((s) < GROUP) (array)[((s) + RING) * (pitch)] = (x);           \
  }

__device__ __forceinline__ void pair_barrier(const int pair) {
  asm volatile("bar.sync %0, 64;" ::"r"(pair + 1) : "memory");  // barrier 0 is __syncthreads
}

// Lanes own lines, a warp 32 consecutive ones; lane j computes row k = t − j at step t, in groups
// of GROUP steps. A compute warp's steps read only its window and shuffles; its helper warp (the
// same index among the block's second WARPS warps) moves rows between global memory and the window
// (whole rows, coalesced) and publishes progress, a group ahead, meeting it at a barrier of the
// pair before each group.
template <int DX, int DY>
__global__ void __launch_bounds__(64 * WARPS)
    lanes_sweep(real* __restrict__ phi, const real* __restrict__ q, const int n0, const int n1, const Half h,
                int* __restrict__ stored, unsigned long long* __restrict__ links) {
  extern __shared__ __align__(16) unsigned char raw[];
  Window* const windows = (Window*)raw;
  const int NX = n0 - 2, NY = n1 - 2;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wl = warp % WARPS;
  const bool helper = warp >= WARPS;
  const int w = blockIdx.x * WARPS + wl, warps = (NY + 31) / 32;
  Window& me = windows[wl];
  if (helper) {
    for (int i = lane; i < SLOTS * PITCH; i += 32) me.phi[i] = 0;
    for (int i = lane; i < SLOTS * QPITCH; i += 32) me.q[i] = 0;
    for (int i = lane; i < EDGE; i += 32) me.edge[i] = 0;
#ifdef TAGS
    for (int i = lane; i < EDGE * HALVES; i += 32) me.tagged[i] = 0;
#endif
    if (lane == 0) me.computed = me.consumed = 0;
#ifdef MBAR
    if (lane == 0) {
      for (int i = 0; i < STAGES; ++i) {
        mbar_init(&me.full[i], 1);   // the predecessor's lane 31, once a stage is written
        mbar_init(&me.empty[i], 1);  // this warp's lane 0, once a stage is read
      }
    }
#endif
  }
  __syncthreads();  // every window initialised before a predecessor writes into it
  if (w >= warps) return;
  Window* const next = wl + 1 < WARPS && w + 1 < warps ? &windows[wl + 1] : nullptr;
  const Window* const prev = wl > 0 ? &windows[wl - 1] : nullptr;
  const int g = w * 32 + lane;
  const bool active = g < NY;
#ifdef ROW_LENGTH
  constexpr int stride = DX * ROW_LENGTH;
#else
  const int stride = DX * n1;  // the host checks that offsets fit an int
#endif
  real* const col = phi + (DX > 0 ? 1 : NX) * n1 + YLINE(min(g, NY));  // past the last line: the boundary
  const int steps = NX + 31;
  // The block's last warp carries its last line to the next block.
  const bool publishes = (wl == WARPS - 1 || w + 1 == warps) && blockIdx.x + 1 < gridDim.x;

  if (!helper) {
    real out = __ldcg(col - stride);  // row −1: the boundary plane
    real mine = 0;                    // the lane's old value at its current row
#ifdef MBAR
    int claimed = 0, arrived = 0;  // stages of the successor's ring this warp may write, and has written
#endif
#ifdef TAGS
    // Lane 0's line before: the previous warp's entries, the previous block's, or (block 0's first
    // warp) the boundary line's, which its helper writes; rows in flight, LOOK of them.
    const entry* const src = prev ? prev->tagged : blockIdx.x > 0 ? links + (blockIdx.x - 1) * LINK * HALVES : me.tagged;
    const int src_mask = prev || blockIdx.x == 0 ? EDGE - 1 : LINK - 1;
    entry* const dst = next ? next->tagged : publishes ? links + blockIdx.x * LINK * HALVES : nullptr;
    const int dst_mask = next ? EDGE - 1 : LINK - 1;
    entry inflight[LOOK][HALVES];
#pragma unroll
    for (int i = 0; i < LOOK; ++i) read_row(inflight[i], src, src_mask, i);
#endif
    for (int t0 = 0; t0 < steps; t0 += GROUP) {
      pair_barrier(wl);  // rows up to t0 + GROUP in the window, the line before up to t0 + GROUP − 1
#ifdef MBAR
      if (prev && t0 < NX) mbar_wait(&me.full[(t0 / GROUP) % STAGES], (t0 / GROUP / STAGES) & 1);
      if (next && t0 + GROUP - 32 >= 0) {  // stages lane 31 writes into in this group, read by then
        const int touched = min(t0 + GROUP - 32, NX - 1) / GROUP + 1;
        for (; claimed < touched; ++claimed) {
          if (claimed >= STAGES) mbar_wait(&next->empty[claimed % STAGES], (claimed / STAGES - 1) & 1);
        }
      }
#endif
      // The group's window values, the reads issued together; slot c + u is row t0 − lane + u (no
      // wrap: the first rows are repeated past the ring).
      const int c = (t0 - lane) & (RING - 1);
      real ahead[GROUP], qk[GROUP], before[GROUP], after[GROUP];
      if (t0 == 0) mine = me.phi[c * PITCH + lane];
#pragma unroll
      for (int u = 0; u < GROUP; ++u) {
        ahead[u] = me.phi[(c + u + 1) * PITCH + lane];  // old, row k + 1
        qk[u] = me.q[(c + u) * QPITCH + lane];
        before[u] = lane == 0 ? me.edge[(t0 & (EDGE - 1)) + u] : (real)0;
        after[u] = lane == 31 ? me.phi[(c + u) * PITCH + 32] : (real)0;
      }
#pragma unroll
      for (int u = 0; u < GROUP; ++u) {
        const int k = t0 + u - lane;
        const real up = __shfl_up_sync(0xffffffffu, out, 1);          // lane j − 1's new value at row k
        const real down = __shfl_down_sync(0xffffffffu, ahead[u], 1);  // lane j + 1's old value at row k
#ifdef TAGS
        real first = 0;  // lane 0's line before at row t0 + u, read by every lane (one address: no divergence)
        if (t0 + u < NX) {
          entry* const e = inflight[u % LOOK];
          while (!row_is(e, t0 + u)) read_row(e, src, src_mask, t0 + u);
          first = from_halves(e, (real)0);
          read_row(e, src, src_mask, t0 + u + LOOK);
        }
#else
        const real first = before[u];
#endif
        const real v = point(h, mine, out, lane == 0 ? first : up, ahead[u], lane == 31 ? after[u] : down, qk[u]);
        const bool on = active && (unsigned)k < (unsigned)NX;
        out = on ? v : out;
        if (on) me.phi[(k & (RING - 1)) * PITCH + lane] = v;
#ifdef TAGS
        if (on && lane == 31 && dst) write_row(dst, dst_mask, k, v);
#else
        if (on && lane == 31 && next) next->edge[k & (EDGE - 1)] = v;
#endif
        mine = ahead[u];
      }
#ifdef MBAR
      __syncwarp();
      if (prev && t0 < NX && lane == 0) mbar_arrive(&me.empty[(t0 / GROUP) % STAGES]);
      if (next) {  // stages lane 31 has finished writing
        const int done = min(max(t0 + GROUP - 31, 0), NX);
        const int written = done == NX ? (NX + GROUP - 1) / GROUP : done / GROUP;
        for (; arrived < written; ++arrived) {
          if (lane == 31) mbar_arrive(&next->full[arrived % STAGES]);
        }
      }
#endif
    }
    pair_barrier(wl);  // the last group done
    return;
  }

  // The helper.
  const real* const qcol = q + (col - phi);
  const real* const after_col = phi + (DX > 0 ? 1 : NX) * n1 + YLINE(min(w * 32 + 32, NY));
  const real* const before_col = phi + (DX > 0 ? 1 : NX) * n1 + YLINE(w * 32 - 1);  // a block's first warp
  real pv[GROUP], qv[GROUP], av;
  // Rows [r0, r0 + GROUP) of the lane's column, of q and (lane u) of the line after into registers
  // (rows past the boundary clamped onto it: their slots are not read), and into the window.
  auto fetch = [&](const int r0) {
#pragma unroll
    for (int u = 0; u < GROUP; ++u) {
      pv[u] = __ldcg(col + min(r0 + u, NX) * stride);
      qv[u] = __ldg(qcol + min(r0 + u, NX - 1) * stride);
    }
    av = __ldcg(after_col + min(r0 + (lane & (GROUP - 1)), NX) * stride);
  };
  auto put = [&](const int r0) {
    const int sb = r0 & (RING - 1);  // row r0 + u into slot sb + u, and its twin
#pragma unroll
    for (int u = 0; u < GROUP; ++u) {
      PUT_ROW(me.phi + lane, PITCH, sb + u, pv[u]);
      PUT_ROW(me.q + lane, QPITCH, sb + u, qv[u]);
    }
    if (lane < GROUP) PUT_ROW(me.phi + 32, PITCH, sb + lane, av);
  };
  // A block's first warp's line before, rows [r0, r0 + GROUP), once the previous block stored them
  // (with -DTAGS only block 0's, the boundary line, as tagged entries).
  auto before_rows = [&](const int r0) {
    const int rb = r0 + (lane & (GROUP - 1));
#ifdef TAGS
    if (blockIdx.x == 0 && lane < GROUP && rb < NX) write_row(me.tagged, EDGE - 1, rb, __ldcg(before_col + rb * stride));
#else
    if (blockIdx.x > 0) {
      const int need = min(r0 + GROUP, NX);
      while (load_acquire_gpu(&stored[blockIdx.x - 1]) < need) {
        SPIN();
      }
    }
    const real b = rb < NX ? __ldcg(before_col + rb * stride) : (real)0;
    if (lane < GROUP) me.edge[rb & (EDGE - 1)] = b;
#endif
  };

  int stored_rows = 0;  // rows of this warp's lines in global memory
  auto store_rows = [&](const int upto) {
    for (; stored_rows < upto; ++stored_rows) {
      if (active) col[stored_rows * stride] = me.phi[(stored_rows & (RING - 1)) * PITCH + lane];
    }
  };
  fetch(0);
  put(0);
  fetch(GROUP);
  put(GROUP);  // rows 0 … 2·GROUP − 1
  fetch(2 * GROUP);
#ifdef TAGS
  int* const taken = stored + gridDim.x;  // rows of the previous block's line a block's first warp has used
  if (wl == 0) before_rows(0);
#endif
  for (int t0 = 0; t0 < steps; t0 += GROUP) {
    // Before group t0 (while the compute warp runs group t0 − GROUP): rows up to t0 + GROUP are in
    // the window since the last interval; rows t0 + 2·GROUP … go in now, the next ones are fetched.
    if (t0 > 0) {
      put(t0 + GROUP);
      fetch(t0 + 2 * GROUP);
    }
    // Rows lane 31 finished by group t0 − 2·GROUP, stored and published.
    store_rows(min(max(t0 - GROUP - 31, 0), NX));
#if !defined(TAGS)  // (-DTAGS carries the block's last line through tagged entries instead)
    __syncwarp();
    if (lane == 0 && publishes) store_release_gpu(&stored[blockIdx.x], stored_rows);
#endif
#ifdef TAGS
    if (wl == 0) before_rows(t0 + GROUP);
    if (publishes && t0 + GROUP - 31 - LINK > 0) {  // the link's rows below t0 + GROUP − 31 − LINK are overwritten
      while (load_acquire_gpu(&taken[blockIdx.x + 1]) < t0 + GROUP - 31 - LINK) {
        SPIN();
      }
    }
#else
    if (wl == 0) before_rows(t0);
#ifndef MBAR
    if (prev) {  // the compute warp's lane 0 reads rows [t0, t0 + GROUP) of the line before
      const int need = min(t0 + GROUP, NX);
      while (load_acquire_cta(&prev->computed) < need) {
        SPIN();
      }
    }
#endif
#endif
#ifndef MBAR
    if (next && t0 + GROUP - 31 - EDGE > 0) {  // its lane 31 overwrites edge rows below t0 + GROUP − 31 − EDGE
      while (load_acquire_cta(&next->consumed) < t0 + GROUP - 31 - EDGE) {
        SPIN();
      }
    }
#endif
    pair_barrier(wl);  // the compute warp finished group t0 − GROUP and starts group t0
#if !defined(MBAR)  // the counters (-DMBAR passes the line before through its barriers)
    if (lane == 0 && next) store_release_cta(&me.computed, min(max(t0 - 31, 0), NX));
    if (lane == 0 && prev) store_release_cta(&me.consumed, min(t0, NX));
#endif
#ifdef TAGS
    if (lane == 0 && wl == 0 && blockIdx.x > 0) store_release_gpu(&taken[blockIdx.x], min(t0, NX));
#endif
  }
  pair_barrier(wl);  // the last group done
  if (lane == 0 && next) store_release_cta(&me.computed, NX);
  store_rows(NX);
  __syncwarp();
  if (lane == 0 && publishes) store_release_gpu(&stored[blockIdx.x], NX);
}
#endif

// The same point function on the host: the same operations in the same order.
static real host_point(const Half& h, real r0, real r1, real r2, real r3, real r4, real r5) {
  return ((r0 * h.nf) + (h.ht * (((((h.c1 * r1) + (h.c2 * r2)) + (h.c3 * r3)) + (h.c4 * r4)) + r5))) / h.den;
}

// The sequential sweep of one half-step, in the declared order.
static void host_sweep(std::vector<real>& phi, const std::vector<real>& q, int n0, int n1, const Half& h) {
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
  if (nx < 1 || ny < 1 || steps < 1) {
    fprintf(stderr, "usage: %s [nx ny steps], each at least 1 (cells along x and y, steps timed)\n", argv[0]);
    return 1;
  }
  const int n0 = nx + 1, n1 = ny + 1;
  // Paper 002's problem as `07_convection_diffusion` sets it: a domain of 40 × 20, u = 1,
  // v = −0.5, μ = 0.5, σ = 0, τ = 0.002 (coefficients in f64, then f32, as parameters are).
  const double hx = 40.0 / nx, hy = 20.0 / ny, mu = 0.5, u = 1.0, v = -0.5;
  const real aw = (real)(mu / (hx * hx) + u / hx), ae = (real)(mu / (hx * hx));
  const real an = (real)(mu / (hy * hy) - v / hy), as = (real)(mu / (hy * hy));
  const real tau = (real)0.002, sigma = 0, one = 1, two = 2;
  const real dm = (aw + an) + sigma / two, dp = (ae + as) + sigma / two;
  const Half h1 = {1, -1, aw, an, ae, as, one - (tau * dp) / two, tau / two, one + (tau * dm) / two};
  const Half h2 = {-1, 1, ae, as, aw, an, one - (tau * dm) / two, tau / two, one + (tau * dp) / two};

  const size_t points = (size_t)n0 * n1;
  if (points >= (size_t)1 << 31) {
    fprintf(stderr, "%zu points: the kernel's offsets are ints\n", points);
    return 1;
  }
  std::vector<real> phi0(points, 0.0), q(points, 0.0);
  phi0[(size_t)(n0 / 2) * n1 + n1 / 2] = (real)(1.0 / (hx * hy));
  real *d_phi, *d_q;
  int* d_stored;
  const int warps = (n1 - 2 + 31) / 32, blocks = (warps + WARPS - 1) / WARPS;
  const size_t shared = WARPS * sizeof(Window);
  const void* kernels[2] = {(const void*)lanes_sweep<1, -1>, (const void*)lanes_sweep<-1, 1>};  // h1, h2
#ifdef ROW_LENGTH
  if (n1 != ROW_LENGTH) {
    fprintf(stderr, "built for rows of %d points, not %d\n", ROW_LENGTH, n1);
    return 1;
  }
#endif
  for (const void* k : kernels) {
    CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
  }
  int sms = 0, per_sm = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernels[0], 64 * WARPS, shared));
  if (blocks > sms * per_sm) {  // a block waits for the one before it: all must be resident
    fprintf(stderr, "%d blocks would not all be resident (%d per multiprocessor, %d multiprocessors)\n", blocks,
            per_sm, sms);
    return 1;
  }
  CHECK(cudaMalloc(&d_phi, points * sizeof(real)));
  CHECK(cudaMalloc(&d_q, points * sizeof(real)));
  CHECK(cudaMalloc(&d_stored, 2 * blocks * sizeof(int)));
  unsigned long long* d_links = nullptr;  // -DTAGS: a ring of tagged rows per block
#ifdef TAGS
  const size_t link_bytes = (size_t)blocks * LINK * HALVES * sizeof(entry);
  CHECK(cudaMalloc(&d_links, link_bytes));
#endif
  CHECK(cudaMemcpy(d_q, q.data(), points * sizeof(real), cudaMemcpyHostToDevice));
  auto step = [&]() {
    for (int i = 0; i < 2; ++i) {
      const Half* h = i == 0 ? &h1 : &h2;
      CHECK(cudaMemsetAsync(d_stored, 0, 2 * blocks * sizeof(int)));  // stored, then (-DTAGS) taken
#ifdef TAGS
      CHECK(cudaMemsetAsync(d_links, 0, link_bytes));  // tags from the previous half-step would match
#endif
      int a0 = n0, a1 = n1;
      Half half = *h;
      void* args[] = {&d_phi, &d_q, &a0, &a1, &half, &d_stored, &d_links};
      CHECK(cudaLaunchKernel(kernels[i], dim3(blocks), dim3(64 * WARPS), args, shared, 0));
    }
  };

  // Two steps against the sequential sweep.
  CHECK(cudaMemcpy(d_phi, phi0.data(), points * sizeof(real), cudaMemcpyHostToDevice));
  step();
  step();
  std::vector<real> gpu(points), cpu = phi0;
  CHECK(cudaMemcpy(gpu.data(), d_phi, points * sizeof(real), cudaMemcpyDeviceToHost));
  for (int s = 0; s < 2; ++s) {
    host_sweep(cpu, q, n0, n1, h1);
    host_sweep(cpu, q, n0, n1, h2);
  }
  size_t differing = 0, nonzero = 0;
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < points; ++i) {
    differing += memcmp(&gpu[i], &cpu[i], sizeof(real)) != 0;
    nonzero += cpu[i] != 0.0;
    scale = fmax(scale, fabs((double)cpu[i]));
    worst = fmax(worst, fabs((double)gpu[i] - (double)cpu[i]));
  }

  // The time per step.
  CHECK(cudaMemcpy(d_phi, phi0.data(), points * sizeof(real), cudaMemcpyHostToDevice));
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
  printf("lanes %s %s %d x %d cells, group %d, %d warps in %d blocks: %.3f ms per step (%d steps); "
         "after 2 steps %zu of %zu points differ from the sequential sweep (max |difference| %.3e of %.3e; %zu "
         "nonzero)\n",
         mode, sizeof(real) == 8 ? "f64" : "f32", nx, ny, GROUP, warps, blocks, ms / steps, steps, differing, points, worst, scale, nonzero);
#ifdef FAST
  return 0;  // approximate division: the difference is reported, not required to be zero
#else
  return differing == 0 ? 0 : 2;
#endif
}
