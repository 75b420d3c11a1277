//! The lane kernel of a 2-D sweep whose wavefront is the antidiagonal: a lane per line,
//! each a step behind the lane of the line before it, the values between them passed by
//! warp shuffles, rings in shared memory, mbarriers and counters instead of block barriers.
//!
//! Lane j of a warp owns line g = 32·w + j (stencil axis 1, in the sweep's order) and walks
//! it along axis 0; at step t it computes row k = t − j, so a warp computes a skewed row of
//! 32 points per step. A point at oriented offset (a, b) from (k, g) is computed at step
//! t + a + b: a read the sweep sees new (earlier in its order) has a + b < 0, an old one
//! a + b > 0, which is what a hyperplane of (1, 1) says. The new values a lane needs are its
//! own last outputs (registers) and, on the line before, lane j − 1's (a shuffle) or, for
//! lane 0, the previous warp's lane 31's (a ring in shared memory whose groups of rows that
//! lane signals on an mbarrier, or global memory between blocks); the old ones are in a window
//! of rows in shared memory. Two helper warps serve each compute warp: a loader copies the
//! window's rows in asynchronously (`cp.async`) two groups of steps ahead, a storer stores
//! finished rows out whole (coalesced) a group at a time — two warps, because a warp's load
//! issued after its store waits for the store to finish. The team of three meets at one
//! aligned named barrier once a group, so the compute warp's steps wait on neither memory
//! nor a block barrier. Compute capability 8.0 on.

use super::common::*;
use super::lane_plan::{EDGE, GROUP, LanePlan, PITCH, RING, STAGES, Source};
use super::signature::{Kind, define_defaults, signature};
use crate::ir::Stencil;
use crate::writer::Writer;

/// The array a compute warp holds a window's group of rows of line offset `b` in.
fn array(window: usize, b: i64) -> String {
    format!("ln_w{window}_{}", b + 1)
}

/// The lane kernel of `s` (`Kind::Lanes`), for a stencil [`LanePlan::new`] accepts.
pub(super) fn emit_lanes(w: &mut Writer, s: &Stencil) {
    let Some(plan) = LanePlan::new(s) else { return };
    w.line("// Asynchronous copies and mbarriers: compute capability 8.0 on (older devices run the pencils).");
    w.line("#if __CUDA_ARCH__ >= 800");
    lanes_defines(w, s, &plan);
    lanes_helpers(w);
    let sig = signature(s, Kind::Lanes);
    sig.open(w);
    index_prologue(w);
    w.line("extern __shared__ __align__(16) unsigned char ln_raw[];");
    w.line("__shared__ int ln_block, ln_consumed[LN_WARPS];");
    w.line("// ln_done[w][g % LN_STAGES]: compute warp w has finished group g (its lane 31 arrives once a group).");
    w.line("__shared__ unsigned long long ln_done[LN_WARPS][LN_STAGES];");
    w.line("const int X0 = (int)(N0 - 2 * R0), X1 = (int)(N2 - 2 * R2);");
    w.line("const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wl = warp % LN_WARPS;");
    w.line("// Warp roles: compute warps first, then their loaders, then their storers.");
    w.line(
        "const bool helper = warp >= LN_WARPS, loader = helper && warp < 2 * LN_WARPS, storer = warp >= 2 * LN_WARPS;",
    );
    w.line(
        "// Blocks take their warps' lines in the order of a ticket: a block only waits for blocks already running.",
    );
    w.line("if (threadIdx.x == 0) ln_block = (int)atomicAdd(ticket, 1u);");
    w.open("if (loader && lane == 0)");
    w.line("ln_consumed[wl] = -LN_BEFORE;");
    w.line("for (int i = 0; i < LN_STAGES; ++i) ln_init(&ln_done[wl][i]);");
    w.close("");
    w.line("__syncthreads();");
    w.line("const int block = ln_block;");
    w.line("const int wg = block * LN_WARPS + wl, warps = (X1 + 31) / 32;");
    w.line("if (wg >= warps) return;");
    w.line("real* const win = (real*)ln_raw + wl * LN_WARP_REALS;");
    w.line("real* const edge = win + LN_WINDOWS * LN_SLOTS * LN_PITCH;");
    w.line("const bool has_next = wl + 1 < LN_WARPS && wg + 1 < warps, has_prev = wl > 0;");
    w.line("const int g = wg * 32 + lane;");
    w.line("const bool active = g < X1;");
    w.line(
        "// Past the last line, a lane's column is the boundary line (or, without one, the last line): never written.",
    );
    w.line("const int line = min(g, X1 - 1 + R2);");
    w.line("const int steps = X0 + 31;");
    w.line("// The block's last warp carries its last line to the next block through global memory.");
    w.line("const bool publishes = (wl == LN_WARPS - 1 || wg + 1 == warps) && wg + 1 < warps;");
    let unknown = c_name(&s.fields[s.unknown].name);
    emit_compute_setup(w, &unknown);
    emit_helper_setup(w, s, &plan, &unknown);
    w.line("// The three warps of a team run the same loop and meet at its one barrier instruction (an aligned");
    w.line("// barrier must be the same instruction in every warp that takes part).");
    w.open("for (int t0 = 0; t0 < steps; t0 += LN_GROUP)");
    w.open("if (loader)");
    emit_loader_before(w, &plan, &unknown);
    w.close("");
    w.open("if (storer)");
    emit_storer_before(w, &plan);
    w.close("");
    w.line("ln_team_barrier(wl); // the compute warp finished group t0 − LN_GROUP and starts group t0");
    w.open("if (storer)");
    emit_storer_after(w, &plan);
    w.close("");
    w.open("else if (!helper)");
    emit_compute_group(w, s, &plan);
    w.close("");
    w.close("");
    w.line("if (loader) ln_copy_wait_all(); // nothing in flight into shared memory when the block ends");
    w.line("ln_team_barrier(wl); // the last group done");
    w.line("if (storer) store_rows(X0);");
    w.close("");
    w.line("#endif");
    w.blank();
}

/// The lane kernel's constants: the fixed geometry, the stencil's reach, directions and the
/// window layout, and the row and line addressing.
fn lanes_defines(w: &mut Writer, s: &Stencil, plan: &LanePlan) {
    w.line("// Lane kernel: a lane per line (stencil axis 1), walking it along axis 0 a step behind the lane of the");
    w.line(
        "// line before; a compute warp, its loader and its storer per 32 lines. Launch blockDim LN_TEAM * LN_WARPS",
    );
    w.line(
        "// (compute warps, then loaders, then storers), one block per LN_WARPS * 32 lines, LN_WARPS * LN_WARP_REALS",
    );
    w.line("// reals of dynamic shared memory.");
    define_defaults(w, &signature(s, Kind::Lanes).defines);
    w.line("// Threads of a team: a compute warp, its loader and its storer.");
    w.line("#define LN_TEAM 96");
    w.line(format!("#define LN_GROUP {GROUP}"));
    w.line("// mbarriers a compute warp arrives at, one a group in turn (see ln_wait).");
    w.line(format!("#define LN_STAGES {STAGES}"));
    w.line(format!("#define LN_RING {RING}"));
    w.line(format!("#define LN_EDGE {EDGE}"));
    w.line(format!("#define LN_PITCH {PITCH}"));
    w.line(format!("#define LN_BEHIND {}", plan.behind));
    w.line(format!("#define LN_AHEAD {}", plan.ahead));
    w.line(format!("#define LN_BEFORE {}", plan.before));
    w.line(format!("#define LN_HISTORY {}", plan.history));
    w.line(format!("#define LN_WINDOWS {}", plan.windows.len()));
    w.line("#define LN_SPAN (LN_BEHIND + LN_GROUP + LN_AHEAD)");
    w.line("// A window's rows: the ring, and its first LN_SPAN rows again after it, so a group's reads never wrap.");
    w.line("#define LN_SLOTS (LN_RING + LN_SPAN)");
    w.line(format!("#define LN_WARP_REALS {}", plan.warp_reals()));
    w.line(format!("#define LN_D0 {}", plan.direction[0]));
    w.line(format!("#define LN_D1 {}", plan.direction[1]));
    w.line("// Memory offset of row r (oriented, 0 the first interior row) and of line g.");
    w.line("#define LN_ROW(r) ((LN_D0 > 0 ? (idx)R0 + (idx)(r) : N0 - 1 - (idx)R0 - (idx)(r)) * s0)");
    w.line("#define LN_LINE(g) (LN_D1 > 0 ? (idx)R2 + (idx)(g) : N2 - 1 - (idx)R2 - (idx)(g))");
    w.line("// Row r into its slot of a window column `at`, and into the slot's twin past the ring.");
    w.line("#define LN_PUT(at, r, x)                                          \\");
    w.line("  {                                                               \\");
    w.line("    const int ln_s = (r) & (LN_RING - 1);                         \\");
    w.line("    (at)[ln_s * LN_PITCH] = (x);                                  \\");
    w.line("    if (ln_s < LN_SPAN) (at)[(ln_s + LN_RING) * LN_PITCH] = (x);  \\");
    w.line("  }");
    w.line("// The same, copied asynchronously from global memory.");
    w.line("#define LN_COPY(at, r, src)                                              \\");
    w.line("  {                                                                      \\");
    w.line("    const int ln_s = (r) & (LN_RING - 1);                                \\");
    w.line("    ln_copy((at) + ln_s * LN_PITCH, (src));                              \\");
    w.line("    if (ln_s < LN_SPAN) ln_copy((at) + (ln_s + LN_RING) * LN_PITCH, (src)); \\");
    w.line("  }");
}

/// Progress between warps (mbarriers, and a counter with release and acquire), the team
/// barrier, the asynchronous copies and a lane select. Compute capability 8.0 on.
fn lanes_helpers(w: &mut Writer) {
    w.line("#ifndef LN_HELPERS");
    w.line("#define LN_HELPERS");
    w.open("__device__ __forceinline__ unsigned ln_smem(const void* p)");
    w.line("return (unsigned)__cvta_generic_to_shared(p);");
    w.close("");
    w.line(
        "// An mbarrier whose phase completes at each arrival; arriving releases the arriving thread's writes and a",
    );
    w.line("// wait that sees the phase complete acquires them.");
    w.open("__device__ __forceinline__ void ln_init(unsigned long long* bar)");
    w.line("asm volatile(\"mbarrier.init.shared::cta.b64 [%0], 1;\" ::\"r\"(ln_smem(bar)) : \"memory\");");
    w.close("");
    w.open("__device__ __forceinline__ void ln_arrive(unsigned long long* bar)");
    w.line("unsigned long long state;");
    w.line("asm volatile(\"mbarrier.arrive.shared::cta.b64 %0, [%1];\" : \"=l\"(state) : \"r\"(ln_smem(bar)) : \"memory\");");
    w.close("");
    w.line("// Waits for the completion of the phase of parity `parity` (the barrier's (2k + parity)-th arrival). The");
    w.line("// ring's counter keeps the arriving warp fewer than LN_STAGES groups ahead of the wait, so the barrier's");
    w.line("// next phase never completes first.");
    w.open("__device__ __forceinline__ void ln_wait(unsigned long long* bar, const unsigned parity)");
    w.line("unsigned done;");
    w.line("do asm volatile(\"{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }\" : \"=r\"(done) : \"r\"(ln_smem(bar)), \"r\"(parity) : \"memory\");");
    w.line("while (!done);");
    w.close("");
    w.open("__device__ __forceinline__ int ln_acquire_cta(const int* p)");
    w.line("int v;");
    w.line("asm volatile(\"ld.acquire.cta.shared::cta.b32 %0, [%1];\" : \"=r\"(v) : \"r\"(ln_smem(p)) : \"memory\");");
    w.line("return v;");
    w.close("");
    w.open("__device__ __forceinline__ void ln_release_cta(int* p, int v)");
    w.line("asm volatile(\"st.release.cta.shared::cta.b32 [%0], %1;\" ::\"r\"(ln_smem(p)), \"r\"(v) : \"memory\");");
    w.close("");
    w.open("__device__ __forceinline__ int ln_acquire_gpu(const int* p)");
    w.line("int v;");
    w.line("asm volatile(\"ld.acquire.gpu.global.b32 %0, [%1];\" : \"=r\"(v) : \"l\"(p) : \"memory\");");
    w.line("return v;");
    w.close("");
    w.open("__device__ __forceinline__ void ln_release_gpu(int* p, int v)");
    w.line("asm volatile(\"st.release.gpu.global.b32 [%0], %1;\" ::\"l\"(p), \"r\"(v) : \"memory\");");
    w.close("");
    w.line("// The barrier of a compute warp, its loader and its storer (barrier 0 is __syncthreads). Aligned: the");
    w.line("// warps arrive converged, at the same instruction.");
    w.open("__device__ __forceinline__ void ln_team_barrier(const int team)");
    w.line("asm volatile(\"bar.sync %0, %1;\" ::\"r\"(team + 1), \"n\"(LN_TEAM) : \"memory\");");
    w.close("");
    w.line("// An asynchronous copy of one value from global into shared memory, the end of a group of them, and the");
    w.line("// waits for every group but the last one and for all.");
    w.open("__device__ __forceinline__ void ln_copy(real* dst, const real* src)");
    w.line("// L2 fetches whole 128-byte lines (a row's values for the neighbouring warps too): measured 1 % faster.");
    w.line("asm volatile(\"cp.async.ca.shared.global.L2::128B [%0], [%1], %2;\" ::\"r\"(ln_smem(dst)), \"l\"(src), \"n\"(sizeof(real)) : \"memory\");");
    w.close("");
    w.open("__device__ __forceinline__ void ln_copy_commit()");
    w.line("asm volatile(\"cp.async.commit_group;\" ::: \"memory\");");
    w.close("");
    w.open("__device__ __forceinline__ void ln_copy_wait_prior()");
    w.line("asm volatile(\"cp.async.wait_group 1;\" ::: \"memory\");");
    w.close("");
    w.open("__device__ __forceinline__ void ln_copy_wait_all()");
    w.line("asm volatile(\"cp.async.wait_all;\" ::: \"memory\");");
    w.close("");
    w.line("// Both operands evaluated by every lane (one is a shuffle), then one chosen.");
    w.open("__device__ __forceinline__ real ln_pick(const bool first, const real a, const real b)");
    w.line("return first ? a : b;");
    w.close("");
    w.line("#endif");
}

/// The compute warp's state across groups: its history (first the boundary rows before its
/// line) and the ring of the next warp's lane 0.
fn emit_compute_setup(w: &mut Writer, unknown: &str) {
    w.line("// hist[d]: the lane's value d rows back (its outputs, first the boundary rows before its line).");
    w.line("real hist[LN_HISTORY + 1];");
    w.line("#pragma unroll");
    w.line(format!(
        "for (int d = 1; d <= LN_HISTORY; ++d) hist[d] = helper ? (real)0 : __ldcg(&f_{unknown}[LN_ROW(max(-d, -R0)) + LN_LINE(line)]);"
    ));
    w.line("real* const next_edge = has_next ? edge + LN_WARP_REALS : nullptr;");
    w.line("// Lane 31 passes its outputs to the next warp's lane 0.");
    w.line("const bool passes = active && lane == 31 && next_edge;");
}

/// A compute warp's group of steps: the group's window rows and line-before rows read first,
/// then the steps on registers and shuffles.
fn emit_compute_group(w: &mut Writer, s: &Stencil, plan: &LanePlan) {
    w.line("// Slot c + i holds row t0 − lane − LN_BEHIND + i.");
    w.line("const int c = (t0 - lane - LN_BEHIND) & (LN_RING - 1);");
    for (window, b, lo, hi) in plan.window_reads() {
        let name = array(window, b);
        w.line(format!("real {name}[LN_SPAN];"));
        w.line("#pragma unroll");
        w.line(format!(
            "for (int i = {lo}; i <= {hi}; ++i) {name}[i] = win[({window} * LN_SLOTS + c + i) * LN_PITCH + lane + {}];",
            1 + b
        ));
    }
    if plan.reads_line_before() {
        w.open("if (has_prev)");
        w.line(
            "// Lane 0 reads rows up to t0 + LN_GROUP − 1 of the line before (or its last row): the previous warp's",
        );
        w.line("// lane 31 outputs that row at step t0 + LN_GROUP + 30, in its group j.");
        w.line("const int j = (min(t0 + LN_GROUP, X0) + 30) / LN_GROUP;");
        w.line("if (lane == 0) ln_wait(&ln_done[wl - 1][j % LN_STAGES], (unsigned)(j / LN_STAGES) & 1u);");
        w.line("__syncwarp(); // the lanes' reads of the ring after lane 0's wait");
        w.close("");
        w.line("// Lane 0's line before: rows t0 − LN_BEFORE … t0 + LN_GROUP − 1 (one address for every lane).");
        w.line("real before[LN_BEFORE + LN_GROUP];");
        w.line("#pragma unroll");
        w.line(
            "for (int i = 0; i < LN_BEFORE + LN_GROUP; ++i) before[i] = edge[(t0 - LN_BEFORE + i) & (LN_EDGE - 1)];",
        );
    }
    w.line("__syncwarp(); // every lane's reads of the group before a lane writes a row another lane read");
    emit_steps(w, s, plan);
    if plan.reads_line_before() {
        w.line("// Lane 31's outputs of the group are in the next warp's ring.");
        w.line("if (lane == 31 && next_edge) ln_arrive(&ln_done[wl][(t0 / LN_GROUP) % LN_STAGES]);");
    }
}

/// A group's steps on registers and shuffles.
fn emit_steps(w: &mut Writer, s: &Stencil, plan: &LanePlan) {
    w.line("#pragma unroll");
    w.open("for (int u = 0; u < LN_GROUP; ++u)");
    w.line("const int k = t0 + u - lane;");
    let mut shuffled: Vec<i64> = Vec::new();
    for source in &plan.sources {
        if let Source::LineBefore(a) = *source
            && !shuffled.contains(&a)
        {
            shuffled.push(a);
            w.line(format!("const real up{} = __shfl_up_sync(0xffffffffu, hist[{}], 1);", -a, 1 - a));
        }
    }
    let args: Vec<String> = plan
        .sources
        .iter()
        .map(|source| match *source {
            Source::History(d) => format!("hist[{d}]"),
            Source::LineBefore(a) => format!("ln_pick(lane == 0, before[u + LN_BEFORE + ({a})], up{})", -a),
            Source::Window { window, a, b } => format!("{}[u + LN_BEHIND + ({a})]", array(window, b)),
        })
        .collect();
    w.line(format!("const real v = {}_point({}{});", s.name, args.join(", "), scalar_args(s)));
    w.line("const bool on = active && (unsigned)k < (unsigned)X0;");
    w.line("if (on) win[(k & (LN_RING - 1)) * LN_PITCH + lane + 1] = v;");
    w.line("if (on && passes) next_edge[k & (LN_EDGE - 1)] = v;");
    w.line("#pragma unroll");
    w.line("for (int d = LN_HISTORY; d > 1; --d) hist[d] = on ? hist[d - 1] : hist[d];");
    w.line("hist[1] = on ? v : hist[1];");
    w.close("");
}

/// The helpers' copies into the window (the loader's) and stores out of it (the storer's),
/// and the loader's first rows: the boundary rows before the walk and the first two groups.
fn emit_helper_setup(w: &mut Writer, s: &Stencil, plan: &LanePlan, unknown: &str) {
    let fields: Vec<String> = plan.windows.iter().map(|&f| c_name(&s.fields[f].name)).collect();
    let needs = |window: usize, side: i64| plan.reads_side(window, side);
    let line_before = plan.reads_line_before();
    w.line("// The helpers. Rows past the walk's ends are clamped onto its boundary rows (their slots are not read).");
    let sides = |side: i64| (0..fields.len()).any(|k| needs(k, side));
    if sides(1) {
        w.line("const int after_line = min(wg * 32 + 32, X1 - 1 + R2);");
    }
    if sides(-1) || line_before {
        w.line("const int before_line = wg * 32 - 1;");
    }
    w.line("const auto clamp_row = [&](const int r) { return min(max(r, -R0), X0 - 1 + R0); };");
    w.line(
        "// Rows [r0, r0 + LN_GROUP) of the lane's line of every window, copied asynchronously into their slots; lane",
    );
    w.line(
        "// u < LN_GROUP: row r0 + u of the line before, lane LN_GROUP + u: of the line after, where a window is read",
    );
    w.line("// there. Every value read here is one no warp has written yet in this sweep, so the copies may use L1.");
    w.open("const auto copy_rows = [&](const int r0)");
    for (k, f) in fields.iter().enumerate() {
        w.line(format!("real* const at{k} = win + {k} * LN_SLOTS * LN_PITCH;"));
        w.line("#pragma unroll");
        w.line(format!(
            "for (int u = 0; u < LN_GROUP; ++u) LN_COPY(at{k} + lane + 1, r0 + u, &f_{f}[LN_ROW(clamp_row(r0 + u)) + LN_LINE(line)]);"
        ));
        if needs(k, -1) {
            w.line(format!(
                "if (lane < LN_GROUP) LN_COPY(at{k}, r0 + lane, &f_{f}[LN_ROW(clamp_row(r0 + lane)) + LN_LINE(before_line)]);"
            ));
        }
        if needs(k, 1) {
            w.line(format!(
                "if (lane >= LN_GROUP && lane < 2 * LN_GROUP) LN_COPY(at{k} + 33, r0 + lane - LN_GROUP, &f_{f}[LN_ROW(clamp_row(r0 + lane - LN_GROUP)) + LN_LINE(after_line)]);"
            ));
        }
    }
    w.line("ln_copy_commit();");
    w.close(";");
    emit_store_rows(w, unknown);
    w.open("if (loader)");
    w.line("// Rows before the walk's first (boundary rows, never written), where a window reads them.");
    w.open("for (int r = -LN_BEHIND; r < 0; ++r)");
    for (k, f) in fields.iter().enumerate() {
        let at = format!("win + {k} * LN_SLOTS * LN_PITCH");
        w.line(format!("LN_PUT({at} + lane + 1, r, f_{f}[LN_ROW(r) + LN_LINE(line)]);"));
        if needs(k, -1) {
            w.line(format!("if (lane == 0) LN_PUT({at}, r, f_{f}[LN_ROW(r) + LN_LINE(before_line)]);"));
        }
        if needs(k, 1) {
            w.line(format!("if (lane == 1) LN_PUT({at} + 33, r, f_{f}[LN_ROW(r) + LN_LINE(after_line)]);"));
        }
    }
    w.close("");
    if line_before {
        w.line("// The line before's boundary rows, before the walk's first.");
        w.line(format!(
            "if (lane < LN_BEFORE) edge[(lane - LN_BEFORE) & (LN_EDGE - 1)] = __ldcg(&f_{unknown}[LN_ROW(lane - LN_BEFORE) + LN_LINE(before_line)]);"
        ));
    }
    w.line("copy_rows(0);");
    w.line("copy_rows(LN_GROUP);");
    w.close("");
}

/// The storer's `store_rows(upto)`: finished rows of its lines from the window to global
/// memory, and their count published to the next block where this warp's last line is its
/// line before.
fn emit_store_rows(w: &mut Writer, unknown: &str) {
    w.line("int stored_rows = 0; // rows of this warp's lines in global memory");
    w.line("// Finished rows from the window to global memory, a group of rows at a time (the loads first, then the stores).");
    w.open("const auto store_rows = [&](const int upto)");
    w.open("while (stored_rows < upto)");
    w.line("const int n = min(upto - stored_rows, LN_GROUP);");
    w.line("real out[LN_GROUP];");
    w.line("#pragma unroll");
    w.line("for (int u = 0; u < LN_GROUP; ++u) out[u] = u < n ? win[((stored_rows + u) & (LN_RING - 1)) * LN_PITCH + lane + 1] : (real)0;");
    w.line("// Stored at L2 (`st.global.cg`): the block never reads these rows back (measured 1–2 % faster).");
    w.line("#pragma unroll");
    w.line(format!(
        "for (int u = 0; u < LN_GROUP; ++u) if (active && u < n) __stcg(&f_{unknown}[LN_ROW(stored_rows + u) + LN_LINE(line)], out[u]);"
    ));
    w.line("stored_rows += n;");
    w.close("");
    w.line("__syncwarp();");
    w.line("if (lane == 0 && publishes) ln_release_gpu(&progress[block], stored_rows);");
    w.close(";");
}

/// The loader's part of a group before the meeting: rows copied in, the first warp's line
/// before passed on.
fn emit_loader_before(w: &mut Writer, plan: &LanePlan, unknown: &str) {
    w.line("// While the compute warp runs group t0 − LN_GROUP, rows t0 + 2·LN_GROUP … are copied in (and, by the");
    w.line("// storer, the rows every lane finished by group t0 − 2·LN_GROUP stored). In the ring meanwhile: rows");
    w.line("// t0 − 2·LN_GROUP − 31 (being stored) to t0 + 3·LN_GROUP − 1, 5·LN_GROUP + 31 ≤ LN_RING of them.");
    w.line("copy_rows(t0 + 2 * LN_GROUP);");
    if plan.reads_line_before() {
        w.open("if (wl == 0)");
        w.line("// The block's first warp's line before, rows [t0, t0 + LN_GROUP): the boundary line, or the previous");
        w.line("// block's last line once that block has stored it.");
        w.open("if (block > 0)");
        w.line("if (lane == 0) while (ln_acquire_gpu(&progress[block - 1]) < min(t0 + LN_GROUP, X0)) {}");
        w.line("__syncwarp(); // the lanes' loads below after lane 0's acquire");
        w.close("");
        w.line("const int r = t0 + (lane & (LN_GROUP - 1));");
        w.line(format!(
            "if (lane < LN_GROUP && r < X0) edge[r & (LN_EDGE - 1)] = __ldcg(&f_{unknown}[LN_ROW(r) + LN_LINE(before_line)]);"
        ));
        w.close("");
    }
    w.line("ln_copy_wait_prior(); // rows up to t0 + 2·LN_GROUP − 1 are in the window");
    w.line("// One lane polls (the others would leave the loop at different times): the warp arrives converged.");
    w.line("__syncwarp();");
}

/// The storer's part of a group before the meeting: finished rows stored out (and published),
/// the next warp's ring waited for. A warp of its own: a warp's load issued after its store
/// waits for the store to finish.
fn emit_storer_before(w: &mut Writer, plan: &LanePlan) {
    w.line("store_rows(min(max(t0 - LN_GROUP - 31, 0), X0));");
    if plan.reads_line_before() {
        w.open("if (has_next && t0 + LN_GROUP - 31 - LN_EDGE > 0)");
        w.line("// Lane 31 overwrites the next warp's ring rows below t0 + LN_GROUP − 31 − LN_EDGE.");
        w.line("if (lane == 0) while (ln_acquire_cta(&ln_consumed[wl + 1]) < t0 + LN_GROUP - 31 - LN_EDGE) {}");
        w.close("");
    }
    w.line("__syncwarp();");
}

/// The storer's part of a group after the meeting: the ring rows its compute warp has read.
fn emit_storer_after(w: &mut Writer, plan: &LanePlan) {
    if plan.reads_line_before() {
        w.line("if (lane == 0 && has_prev) ln_release_cta(&ln_consumed[wl], min(t0, X0) - LN_BEFORE);");
    }
}
