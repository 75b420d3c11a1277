//! The lane kernel of a 2-D sweep whose wavefront is the antidiagonal: a lane per line,
//! each a step behind the lane of the line before it, the values between them passed by
//! warp shuffles, rings in shared memory and counters instead of block barriers.
//!
//! Lane j of a warp owns line g = 32·w + j (stencil axis 1, in the sweep's order) and walks
//! it along axis 0; at step t it computes row k = t − j, so a warp computes a skewed row of
//! 32 points per step. A point at oriented offset (a, b) from (k, g) is computed at step
//! t + a + b: a read the sweep sees new (earlier in its order) has a + b < 0, an old one
//! a + b > 0, which is what a hyperplane of (1, 1) says. The new values a lane needs are its
//! own last outputs (registers) and, on the line before, lane j − 1's (a shuffle) or, for
//! lane 0, the previous warp's lane 31's (a ring in shared memory, or global memory between
//! blocks); the old ones are in a window of rows in shared memory that a helper warp, one
//! per compute warp, fills and drains whole (coalesced) a group of steps ahead. The pair meets
//! at a named barrier once a group, so the compute warp's steps wait on neither memory nor a
//! block barrier.

use super::common::*;
use super::lane_plan::{EDGE, GROUP, LanePlan, PITCH, RING, Source};
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
    lanes_defines(w, s, &plan);
    lanes_helpers(w);
    let sig = signature(s, Kind::Lanes);
    sig.open(w);
    index_prologue(w);
    w.line("extern __shared__ __align__(16) unsigned char ln_raw[];");
    w.line("__shared__ int ln_block, ln_computed[LN_WARPS], ln_consumed[LN_WARPS];");
    w.line("const int X0 = (int)(N0 - 2 * R0), X1 = (int)(N2 - 2 * R2);");
    w.line("const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wl = warp % LN_WARPS;");
    w.line("const bool helper = warp >= LN_WARPS;");
    w.line(
        "// Blocks take their warps' lines in the order of a ticket: a block only waits for blocks already running.",
    );
    w.line("if (threadIdx.x == 0) ln_block = (int)atomicAdd(ticket, 1u);");
    w.open("if (helper && lane == 0)");
    w.line("ln_computed[wl] = 0;");
    w.line("ln_consumed[wl] = -LN_BEFORE;");
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
    w.open("if (!helper)");
    emit_compute(w, s, &plan, &unknown);
    w.close("");
    emit_helper(w, s, &plan, &unknown);
    w.close("");
    w.blank();
}

/// The lane kernel's constants: the fixed geometry, the stencil's reach, directions and the
/// window layout, and the row and line addressing.
fn lanes_defines(w: &mut Writer, s: &Stencil, plan: &LanePlan) {
    w.line("// Lane kernel: a lane per line (stencil axis 1), walking it along axis 0 a step behind the lane of the");
    w.line("// line before; a compute warp and its helper warp per 32 lines. Launch blockDim 64 * LN_WARPS (compute");
    w.line(
        "// warps first), one block per LN_WARPS * 32 lines, LN_WARPS * LN_WARP_REALS reals of dynamic shared memory.",
    );
    define_defaults(w, &signature(s, Kind::Lanes).defines);
    w.line(format!("#define LN_GROUP {GROUP}"));
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
}

/// Progress between warps (release and acquire), the pair barrier and a lane select.
fn lanes_helpers(w: &mut Writer) {
    w.line("#ifndef LN_HELPERS");
    w.line("#define LN_HELPERS");
    w.open("__device__ __forceinline__ int ln_acquire_cta(const int* p)");
    w.line("int v;");
    w.line("asm volatile(\"ld.acquire.cta.shared::cta.b32 %0, [%1];\" : \"=r\"(v) : \"r\"((unsigned)__cvta_generic_to_shared(p)) : \"memory\");");
    w.line("return v;");
    w.close("");
    w.open("__device__ __forceinline__ void ln_release_cta(int* p, int v)");
    w.line("asm volatile(\"st.release.cta.shared::cta.b32 [%0], %1;\" ::\"r\"((unsigned)__cvta_generic_to_shared(p)), \"r\"(v) : \"memory\");");
    w.close("");
    w.open("__device__ __forceinline__ int ln_acquire_gpu(const int* p)");
    w.line("int v;");
    w.line("asm volatile(\"ld.acquire.gpu.global.b32 %0, [%1];\" : \"=r\"(v) : \"l\"(p) : \"memory\");");
    w.line("return v;");
    w.close("");
    w.open("__device__ __forceinline__ void ln_release_gpu(int* p, int v)");
    w.line("asm volatile(\"st.release.gpu.global.b32 [%0], %1;\" ::\"l\"(p), \"r\"(v) : \"memory\");");
    w.close("");
    w.line("// The barrier of a compute warp and its helper (barrier 0 is __syncthreads); not `.aligned` (as bar.sync");
    w.line("// is), so a warp need not arrive converged.");
    w.open("__device__ __forceinline__ void ln_pair_barrier(const int pair)");
    w.line("asm volatile(\"barrier.sync %0, 64;\" ::\"r\"(pair + 1) : \"memory\");");
    w.close("");
    w.line("// Both operands evaluated by every lane (one is a shuffle), then one chosen.");
    w.open("__device__ __forceinline__ real ln_pick(const bool first, const real a, const real b)");
    w.line("return first ? a : b;");
    w.close("");
    w.line("#endif");
}

/// The compute warp: groups of steps, each reading the group's window rows and line-before
/// rows first, then running the steps on registers and shuffles.
fn emit_compute(w: &mut Writer, s: &Stencil, plan: &LanePlan, unknown: &str) {
    w.line("// hist[d]: the lane's value d rows back (its outputs, first the boundary rows before its line).");
    w.line("real hist[LN_HISTORY + 1];");
    w.line("#pragma unroll");
    w.line(format!(
        "for (int d = 1; d <= LN_HISTORY; ++d) hist[d] = __ldcg(&f_{unknown}[LN_ROW(max(-d, -R0)) + LN_LINE(line)]);"
    ));
    w.line("real* const next_edge = has_next ? edge + LN_WARP_REALS : nullptr;");
    w.open("for (int t0 = 0; t0 < steps; t0 += LN_GROUP)");
    w.line("ln_pair_barrier(wl); // the window holds the group's rows, the ring the line before's");
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
        w.line("// Lane 0's line before: rows t0 − LN_BEFORE … t0 + LN_GROUP − 1 (one address for every lane).");
        w.line("real before[LN_BEFORE + LN_GROUP];");
        w.line("#pragma unroll");
        w.line(
            "for (int i = 0; i < LN_BEFORE + LN_GROUP; ++i) before[i] = edge[(t0 - LN_BEFORE + i) & (LN_EDGE - 1)];",
        );
    }
    w.line("__syncwarp(); // every lane's reads of the group before a lane writes a row another lane read");
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
    w.line("if (on && lane == 31 && next_edge) next_edge[k & (LN_EDGE - 1)] = v;");
    w.line("#pragma unroll");
    w.line("for (int d = LN_HISTORY; d > 1; --d) hist[d] = on ? hist[d - 1] : hist[d];");
    w.line("hist[1] = on ? v : hist[1];");
    w.close("");
    w.close("");
    w.line("ln_pair_barrier(wl); // the last group done");
    w.line("return;");
}

/// The helper warp: loads the window's rows a group ahead, stores finished rows, passes the
/// line before between warps and blocks, and meets its compute warp once a group.
fn emit_helper(w: &mut Writer, s: &Stencil, plan: &LanePlan, unknown: &str) {
    let fields: Vec<String> = plan.windows.iter().map(|&f| c_name(&s.fields[f].name)).collect();
    let needs = |window: usize, side: i64| plan.reads_side(window, side);
    let line_before = plan.reads_line_before();
    w.line("// The helper. Rows past the walk's ends are clamped onto its boundary rows (their slots are not read).");
    let sides = |side: i64| (0..fields.len()).any(|k| needs(k, side));
    if sides(1) {
        w.line("const int after_line = min(wg * 32 + 32, X1 - 1 + R2);");
    }
    if sides(-1) || line_before {
        w.line("const int before_line = wg * 32 - 1;");
    }
    w.line("const auto clamp_row = [&](const int r) { return min(max(r, -R0), X0 - 1 + R0); };");
    w.line("real pv[LN_WINDOWS][LN_GROUP];");
    if sides(1) || sides(-1) {
        w.line("real ev[LN_WINDOWS];");
    }
    w.line("// Rows [r0, r0 + LN_GROUP) of the lane's line of every window; lane u < LN_GROUP: row r0 + u of the line");
    w.line("// before, lane LN_GROUP + u: of the line after, where a window is read there.");
    w.open("const auto fetch = [&](const int r0)");
    for (k, f) in fields.iter().enumerate() {
        let load = if plan.windows[k] == s.unknown { "__ldcg" } else { "__ldg" };
        w.line("#pragma unroll");
        w.line(format!(
            "for (int u = 0; u < LN_GROUP; ++u) pv[{k}][u] = {load}(&f_{f}[LN_ROW(clamp_row(r0 + u)) + LN_LINE(line)]);"
        ));
        if needs(k, -1) {
            w.line(format!(
                "if (lane < LN_GROUP) ev[{k}] = {load}(&f_{f}[LN_ROW(clamp_row(r0 + lane)) + LN_LINE(before_line)]);"
            ));
        }
        if needs(k, 1) {
            w.line(format!(
                "if (lane >= LN_GROUP && lane < 2 * LN_GROUP) ev[{k}] = {load}(&f_{f}[LN_ROW(clamp_row(r0 + lane - LN_GROUP)) + LN_LINE(after_line)]);"
            ));
        }
    }
    w.close(";");
    w.line("// The fetched rows into the windows.");
    w.open("const auto put = [&](const int r0)");
    for k in 0..fields.len() {
        w.line(format!("real* const at{k} = win + {k} * LN_SLOTS * LN_PITCH;"));
        w.line("#pragma unroll");
        w.line(format!("for (int u = 0; u < LN_GROUP; ++u) LN_PUT(at{k} + lane + 1, r0 + u, pv[{k}][u]);"));
        if needs(k, -1) {
            w.line(format!("if (lane < LN_GROUP) LN_PUT(at{k}, r0 + lane, ev[{k}]);"));
        }
        if needs(k, 1) {
            w.line(format!(
                "if (lane >= LN_GROUP && lane < 2 * LN_GROUP) LN_PUT(at{k} + 33, r0 + lane - LN_GROUP, ev[{k}]);"
            ));
        }
    }
    w.close(";");
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
    emit_helper_loop(w, plan, unknown);
}

/// The helper's groups: rows into the window and finished rows out, the line before passed
/// on, the counters waited for and published around the meeting with the compute warp.
fn emit_helper_loop(w: &mut Writer, plan: &LanePlan, unknown: &str) {
    let line_before = plan.reads_line_before();
    w.line("int stored_rows = 0; // rows of this warp's lines in global memory");
    w.open("const auto store_rows = [&](const int upto)");
    w.open("for (; stored_rows < upto; ++stored_rows)");
    w.line(format!(
        "if (active) f_{unknown}[LN_ROW(stored_rows) + LN_LINE(line)] = win[(stored_rows & (LN_RING - 1)) * LN_PITCH + lane + 1];"
    ));
    w.close("");
    w.line("__syncwarp();");
    w.line("if (lane == 0 && publishes) ln_release_gpu(&progress[block], stored_rows);");
    w.close(";");
    w.line("fetch(0);");
    w.line("put(0);");
    w.line("fetch(LN_GROUP);");
    w.line("put(LN_GROUP);");
    w.line("fetch(2 * LN_GROUP);");
    w.open("for (int t0 = 0; t0 < steps; t0 += LN_GROUP)");
    w.line("// While the compute warp runs group t0 − LN_GROUP, rows up to t0 + LN_GROUP − 1 are in the window: rows");
    w.line(
        "// t0 + LN_GROUP … go in, the next ones are fetched. In use meanwhile: rows from t0 − 2·LN_GROUP − 31 (being",
    );
    w.line("// stored) to t0 + 2·LN_GROUP − 1, 4·LN_GROUP + 31 ≤ LN_RING of them.");
    w.open("if (t0 > 0)");
    w.line("put(t0 + LN_GROUP);");
    w.line("fetch(t0 + 2 * LN_GROUP);");
    w.close("");
    w.line("// Rows every lane finished by group t0 − 2·LN_GROUP: stored, and published to the next block.");
    w.line("store_rows(min(max(t0 - LN_GROUP - 31, 0), X0));");
    if line_before {
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
        w.open("if (has_prev)");
        w.line("// The compute warp's lane 0 reads rows up to t0 + LN_GROUP − 1 of the line before.");
        w.line("if (lane == 0) while (ln_acquire_cta(&ln_computed[wl - 1]) < min(t0 + LN_GROUP, X0)) {}");
        w.close("");
        w.open("if (has_next && t0 + LN_GROUP - 31 - LN_EDGE > 0)");
        w.line("// Lane 31 overwrites the next warp's ring rows below t0 + LN_GROUP − 31 − LN_EDGE.");
        w.line("if (lane == 0) while (ln_acquire_cta(&ln_consumed[wl + 1]) < t0 + LN_GROUP - 31 - LN_EDGE) {}");
        w.close("");
        w.line("// One lane polls (the others would leave the loop at different times); the pair barrier then orders");
        w.line("// what the counters published before every thread of the pair.");
        w.line("__syncwarp();");
    }
    w.line("ln_pair_barrier(wl); // the compute warp finished group t0 − LN_GROUP and starts group t0");
    if line_before {
        w.line("if (lane == 0 && has_next) ln_release_cta(&ln_computed[wl], min(max(t0 - 31, 0), X0));");
        w.line("if (lane == 0 && has_prev) ln_release_cta(&ln_consumed[wl], min(t0, X0) - LN_BEFORE);");
    }
    w.close("");
    w.line("ln_pair_barrier(wl); // the last group done");
    if line_before {
        w.line("if (lane == 0 && has_next) ln_release_cta(&ln_computed[wl], X0);");
    }
    w.line("store_rows(X0);");
}
