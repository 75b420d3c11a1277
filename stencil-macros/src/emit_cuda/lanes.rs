//! The lane kernel of a 2-D sweep whose wavefront is the antidiagonal: a lane per line (or
//! per M lines), each lane a step behind the lane before it, the values between them passed
//! in registers inside a lane, by warp shuffles inside a warp and by tagged words in global
//! memory between warps.
//!
//! With one line a lane (`LN_LINES`, M = 1), lane j of block w owns line g = 32·w + j
//! (stencil axis 1, in the sweep's order) and walks it along axis 0; at step t it computes
//! row k = t − j, so a warp computes a skewed row of 32 points per step. A point at oriented
//! offset (a, b) from (k, g) is computed at step t + a + b: a read the sweep sees new (earlier
//! in its order) has a + b < 0, an old one a + b > 0, which is what a hyperplane of (1, 1)
//! says. With M lines a lane, the block's line v = M·j + m is lane j's line m; a step
//! computes row t − j of each of the lane's lines in turn, so line m's line before is line
//! m − 1's output of the same step (a register) and only line 0's is lane j − 1's last line
//! (a shuffle): the lane's lines are one step of the wavefront, a block of 32·M lines is 31
//! steps deep. The new values a lane needs are its
//! own last outputs (registers) and, on the line before, lane j − 1's (a shuffle) or, for
//! lane 0, the block before's lane 31's: that lane stores each output with its row as a tag
//! in one 64-bit word per 32 bits, so the value is valid once the tag is, with no fence
//! between them. The old values are in a window of rows in shared memory, read a group of
//! steps ahead into registers. Each block is a team of four warps on its own streaming
//! multiprocessor — teams sharing one slowed each other's steps (measured): the compute
//! warp; a loader that copies the window's rows in asynchronously (`cp.async`) four groups
//! ahead; a storer that stores finished rows out whole (coalesced) a group at a time, in a
//! loop of its own, at each meeting the rows it loaded from the window at the one before (a
//! store right behind its load slows the compute warp's steps: measured); and a receiver
//! that polls the block before's hand-over and puts each row of the line before, as soon as
//! it arrives, into a ring of tagged words in shared memory. The
//! compute warp checks the ring's tags every LN_CHECK steps, for rows it loaded from the ring
//! steps before, so a block runs about 31 + LN_CHECK steps and the hand-over's latency behind
//! the block before, rather than a group's rows behind (measured: 1.12 → 1.08 ms a step). In
//! fast mode, where the point function is affine in a step's new reads, a fifth warp computes
//! what of each step is off the chain (the point function with those reads at zero, and the
//! slopes that vary) a group ahead, so the compute warp's step is a fused multiply–add per new
//! read — a warp of its own, because a warp's shared-memory load waits for its copies or
//! stores to global memory in flight (measured: the loader and storer doing it made the step
//! slower). With one line a lane in single precision, fast mode's step substitutes the line
//! before once (`lane_lookahead.rs`), so no shuffle is on the chain from one step to the next.
//! The compute warp, loader, storer and parts warp meet at one barrier a group, which
//! waits on no memory. Compute capability 8.0 on.

use super::common::*;
use super::lane_defines::lanes_defines;
use super::lane_lookahead::{emit_lookahead_setup, lookahead_slots};
use super::lane_parts::emit_parts_setup;
use super::lane_plan::{LanePlan, array, window_read};
use super::lane_sync::lanes_helpers;
use super::lane_update::{Update, emit_shuffles, emit_step_update};
use super::signature::{Kind, signature};
use super::slope::slope_name;
use crate::ir::Stencil;
use crate::writer::Writer;

/// The lane kernel of `s` (`Kind::Lanes`), for a stencil [`LanePlan::new`] accepts.
pub(super) fn emit_lanes(w: &mut Writer, s: &Stencil) {
    let Some(plan) = LanePlan::new(s) else { return };
    w.line("// Asynchronous copies: compute capability 8.0 on (older devices run the pencils).");
    w.line("#if __CUDA_ARCH__ >= 800");
    lanes_defines(w, s, &plan);
    lanes_helpers(w);
    let varying = plan.slopes.as_ref().map(|slopes| slopes.varying());
    if let Some(slopes) = &plan.slopes {
        w.line("#ifdef STENCIL_FAST");
        slopes.emit(w, s);
        w.line("#endif");
    }
    let affine = varying.as_deref();
    let sig = signature(s, Kind::Lanes);
    sig.open(w);
    index_prologue(w);
    let line_before = plan.reads_line_before();
    emit_block_setup(w, line_before, affine.is_some());
    let unknown = c_name(&s.fields[s.unknown].name);
    if line_before {
        w.line(
            "// The hand-over between blocks (zeroed before the launch): block b's lane 31's output at row r in the",
        );
        w.line("// LN_LLW words from (b · X0 + r) · LN_LLW, each word 32 bits of it and the tag r + 1.");
        w.line("unsigned long long* const ln_ll = (unsigned long long*)handoff;");
        w.line("const int before_line = wg * LN_WIDTH - 1;");
        emit_receiver(w, &unknown);
    } else {
        w.line("if (warp == 3) return; // no line before to receive");
    }
    emit_compute_setup(w, s, &plan, &unknown, affine);
    emit_helper_setup(w, s, &plan, &unknown);
    if let Some(varying) = affine {
        emit_parts_setup(w, s, &plan, varying);
    }
    emit_storer_loop(w);
    w.line("// The loader and fast mode's parts warp run the compute warp's loop and meet at its one barrier, after");
    w.line("// which the compute warp runs group t0 while the loader copies rows in and the parts warp computes the");
    w.line("// next group's parts.");
    w.open("for (int t0 = 0; t0 < steps; t0 += LN_GROUP)");
    emit_helpers_turn(w, affine.is_some());
    w.open("else");
    match affine {
        Some(varying) => {
            w.line("#ifdef STENCIL_FAST");
            emit_compute_group(w, s, &plan, Update::Parts(varying));
            w.line("#else");
            emit_compute_group(w, s, &plan, Update::Point);
            w.line("#endif");
        }
        None => emit_compute_group(w, s, &plan, Update::Point),
    }
    w.close("");
    w.close("");
    w.line("if (loader) ln_copy_wait_all(); // nothing in flight into shared memory when the block ends");
    w.line("ln_meet(); // the last group done");
    w.close("");
    w.line("#endif");
    w.blank();
}

/// The storer's loop: it meets the others once a group, as the compute warp's loop does, and
/// at each meeting stores the rows it loaded at the meeting before, then loads the rows finished
/// since — lane 31's lines, 31 steps behind lane 0's, finished row t0 − 32 in group t0 − LN_GROUP.
/// A loop of its own, so the values it holds between meetings take registers in its code only
/// (measured: f32 exact 0.992 → 0.979 ms a step, f64 exact with two lines a lane 3.039 → 2.242;
/// holding them in the shared loop, 0.994 → 0.998 and 3.098 → 4.092).
fn emit_storer_loop(w: &mut Writer) {
    w.open("if (storer)");
    w.open("for (int t0 = 0; t0 < steps; t0 += LN_GROUP)");
    w.line("ln_meet();");
    w.line(
        "// Lane 31's lines, LN_DEPTH steps behind lane 0's, finished row t0 − LN_DEPTH − 1 in group t0 − LN_GROUP.",
    );
    w.line("store_rows(min(max(t0 - LN_DEPTH, 0), X0), false);");
    w.close("");
    w.line("ln_meet(); // the last group done");
    w.line("store_rows(X0, true);");
    w.line("return;");
    w.close("");
}

/// The meeting at the top of a group, and the helpers' work during the group: the loader's
/// copies and (fast mode, with `parts`) the parts warp's next parts.
fn emit_helpers_turn(w: &mut Writer, parts: bool) {
    w.line(
        "// Rows up to t0 + (LN_LEAD − 1)·LN_GROUP − 1 are in the window, past the t0 + 2·LN_GROUP − 1 + LN_AHEAD the",
    );
    w.line("// compute warp reads in group t0; the copies issued at the last meeting may still be on their way.");
    w.line("if (loader) ln_copy_wait_prior();");
    w.line("ln_meet(); // the compute warp finished group t0 − LN_GROUP and starts group t0");
    w.line("// The rows that will be read LN_LEAD groups on; they fill the slots of rows LN_RING earlier, which every");
    w.line(
        "// warp is done with: in the ring meanwhile rows t0 − LN_DEPTH − LN_GROUP (the storer's loads) to t0 + (LN_LEAD + 1)·",
    );
    w.line("// LN_GROUP − 1, LN_DEPTH + (LN_LEAD + 2)·LN_GROUP ≤ LN_RING of them.");
    w.line("if (loader) copy_rows(t0 + LN_LEAD * LN_GROUP);");
    if parts {
        w.line("#ifdef STENCIL_FAST");
        w.line("else if (parts_warp) compute_parts(t0 + LN_GROUP);");
        w.line("#endif");
    }
}

/// The block's shared memory, its warps' roles, its ticket and each lane's line.
fn emit_block_setup(w: &mut Writer, line_before: bool, parts: bool) {
    w.line("extern __shared__ __align__(16) unsigned char ln_raw[];");
    w.line("__shared__ int ln_ticket;");
    w.line("const int X0 = (int)(N0 - 2 * R0), X1 = (int)(N2 - 2 * R2);");
    w.line("const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;");
    w.line("// Warp roles: the compute warp, the loader, the storer, the receiver.");
    w.line("const bool helper = warp > 0, loader = warp == 1, storer = warp == 2;");
    w.line("real* const win = (real*)ln_raw;");
    if line_before {
        w.line(
            "// The line before's rows for lane 0, as the receiver puts them: LN_LLW tagged words a row (tag row + 1),",
        );
        w.line("// in a ring of LN_EDGE rows that starts with no row in it.");
        w.line("__shared__ int ln_taken; // rows of the line before the compute warp has taken from the ring");
        w.line("unsigned long long* const edge = (unsigned long long*)(win + LN_WINDOWS * LN_SLOTS * LN_PITCH);");
        w.line("for (int i = threadIdx.x; i < LN_EDGE * LN_LLW; i += blockDim.x) edge[i] = 0;");
        w.line("if (threadIdx.x == 0) ln_taken = 0;");
    }
    if parts {
        w.line("#ifdef STENCIL_FAST");
        w.line("// Fast mode's parts of two groups (see compute_parts), after the ring.");
        w.line("real* const ln_parts = win + LN_WINDOWS * LN_SLOTS * LN_PITCH + 2 * LN_EDGE;");
        w.line("#endif");
    }
    w.line("// Blocks take their lines in the order of a ticket: a block only waits for blocks already running.");
    w.line("if (threadIdx.x == 0) ln_ticket = (int)atomicAdd(ticket, 1u);");
    w.line("__syncthreads();");
    w.line("const int wg = ln_ticket;");
    w.line("// The lane's lines, LN_V(m) of the block's for m < LN_LINES. Past the last line, a line's column is the");
    w.line("// boundary line (or, without one, the last line): never written.");
    w.line("int line[LN_LINES];");
    w.line("bool active[LN_LINES];");
    w.line("#pragma unroll");
    w.open("for (int m = 0; m < LN_LINES; ++m)");
    w.line("const int g = wg * LN_WIDTH + LN_V(m);");
    w.line("active[m] = g < X1;");
    w.line("line[m] = min(g, X1 - 1 + R2);");
    w.close("");
    if parts {
        w.line("#ifdef STENCIL_FAST");
        w.line("const bool parts_warp = warp == LN_PARTS_WARP;");
        w.line("if (warp >= 4 && !parts_warp) return;");
        w.line("#else");
        w.line("if (warp >= 4) return;");
        w.line("#endif");
    } else {
        w.line("if (warp >= 4) return;");
    }
    w.line("const int steps = X0 + LN_DEPTH; // lane 31 runs LN_DEPTH steps behind lane 0");
}

/// The compute warp's state across groups: its history (first the boundary rows before its
/// line) and its window arrays.
fn emit_compute_setup(w: &mut Writer, s: &Stencil, plan: &LanePlan, unknown: &str, affine: Option<&[bool]>) {
    if let Some(varying) = affine {
        let zeros: Vec<&str> = vec!["(real)0"; plan.sources.len()];
        w.line("#ifdef STENCIL_FAST");
        w.line("// The slopes that are the same at every point (they read nothing), computed once.");
        for (slot, _) in plan.new_reads().into_iter().zip(varying).filter(|(_, varying)| !**varying) {
            w.line(format!(
                "const real ln_slope{slot} = {}({}{});",
                slope_name(s, slot),
                zeros.join(", "),
                scalar_args(s)
            ));
        }
        if let Some((_, before)) = lookahead_slots(plan, varying) {
            emit_lookahead_setup(w, before);
        }
        w.line("#endif");
    }
    w.line("// hist[m][d]: line m's value d rows back (its outputs, first the boundary rows before the line).");
    w.line("real hist[LN_LINES][LN_HISTORY + 1];");
    w.line("#pragma unroll");
    w.line("for (int m = 0; m < LN_LINES; ++m)");
    w.line("#pragma unroll");
    w.line(format!(
        "  for (int d = 1; d <= LN_HISTORY; ++d) hist[m][d] = helper ? (real)0 : __ldcg(&f_{unknown}[LN_ROW(max(-d, -R0)) + LN_LINE(line[m])]);"
    ));
    w.line("// The first step's shuffles; each step then shuffles for the next as soon as its output is known.");
    emit_shuffles(w, plan, "real ");
    w.line(
        "// The window's values of a group for each line, read during the group before (each once its slot's last use",
    );
    w.line("// is past).");
    if affine.is_some() {
        w.line("#ifndef STENCIL_FAST");
    }
    for (window, b, _, _) in plan.window_reads() {
        w.line(format!("real {}[LN_LINES][LN_SPAN];", array(window, b)));
    }
    if affine.is_some() {
        w.line("#endif");
    }
    if plan.reads_line_before() {
        w.line(
            "// Lane 31 hands its last line's outputs to the next block (whose line before is this block's last line).",
        );
        w.line("const bool hands_over = lane == 31 && wg + 1 < (X1 + LN_WIDTH - 1) / LN_WIDTH;");
        w.line("// Lane 0's line before at rows t − LN_BEFORE … t of step t (first the boundary rows before the walk), and");
        w.line(
            "// the ring's words of the LN_PEEK rows after t, loaded that many steps before they are used (every lane",
        );
        w.line("// loads the same word, so all see whether it has come).");
        w.line("real bw[LN_BEFORE + 1];");
        w.line("#pragma unroll");
        w.line(format!(
            "for (int d = 0; d < LN_BEFORE; ++d) bw[d + 1] = helper ? (real)0 : __ldcg(&f_{unknown}[LN_ROW(d - LN_BEFORE) + LN_LINE(before_line)]);"
        ));
        w.line("ln_word peek[LN_PEEK];");
        w.line("#pragma unroll");
        w.line("for (int i = 0; i < LN_PEEK; ++i) peek[i] = ln_edge_load(&edge[i * LN_LLW]);");
    }
}

/// A compute warp's group of steps: the first group's window rows (or the group's parts) and
/// the line-before rows read first, then the steps on registers and shuffles.
fn emit_compute_group(w: &mut Writer, s: &Stencil, plan: &LanePlan, update: Update<'_>) {
    match update {
        Update::Point => {
            w.line("// Line m's column at slots c and cn, where slot c + i holds row t0 − LN_SKEW − LN_BEHIND + i and slot cn + i");
            w.line("// row t0 + LN_GROUP − LN_SKEW − LN_BEHIND + i: a group's reads are at constant offsets (they never wrap),");
            w.line("// so each is one shared-memory load with no address arithmetic (measured: 1.097 → 1.066 ms a step, f32).");
            w.line("const real* wc[LN_LINES];");
            w.line("const real* wcn[LN_LINES];");
            w.line("#pragma unroll");
            w.open("for (int m = 0; m < LN_LINES; ++m)");
            w.line("const int c = (t0 - LN_SKEW - LN_BEHIND) & (LN_RING - 1), cn = (c + LN_GROUP) & (LN_RING - 1);");
            w.line("wc[m] = win + c * LN_PITCH + LN_POS(m);");
            w.line("wcn[m] = win + cn * LN_PITCH + LN_POS(m);");
            w.close("");
        }
        Update::Parts(_) => {
            w.line("// The group's parts, loaded before the steps' stores into shared memory (which the compiler cannot tell");
            w.line("// apart from them, so would load each after the step before's store, on the chain).");
            w.line(
                "const real* const pin = ln_parts + ((t0 / LN_GROUP) & 1) * (LN_PARTS * LN_GROUP * LN_WIDTH) + lane;",
            );
            w.line("real part[LN_PARTS][LN_GROUP][LN_LINES];");
            w.line("#pragma unroll");
            w.line("for (int p = 0; p < LN_PARTS; ++p)");
            w.line("#pragma unroll");
            w.line("  for (int u = 0; u < LN_GROUP; ++u)");
            w.line("#pragma unroll");
            w.line(
                "    for (int m = 0; m < LN_LINES; ++m) part[p][u][m] = pin[((p * LN_GROUP + u) * LN_LINES + m) * 32];",
            );
        }
    }
    w.line("// Line m's column at row t0 − LN_SKEW's slot: step u writes its output u slots on, into the twin slots past the");
    w.line("// ring where it wraps (LN_OUT_SLOT), so each write is one store at a constant offset (measured with e0 and e1");
    w.line("// below: f32 exact 1.057 → 1.034 ms a step, fast 0.893 → 0.836, f64 unchanged).");
    w.line("real* wout[LN_LINES];");
    w.line("#pragma unroll");
    w.line(
        "for (int m = 0; m < LN_LINES; ++m) wout[m] = win + ((t0 - LN_SKEW) & (LN_RING - 1)) * LN_PITCH + LN_POS(m);",
    );
    if plan.reads_line_before() {
        w.line("// The ring's words of rows t0 … t0 + LN_GROUP − 1 and of the next group's (t0 and LN_EDGE are multiples of");
        w.line("// LN_GROUP, so neither group wraps): a step's load LN_PEEK rows on is at a constant offset from one of them.");
        w.line("const unsigned long long* const e0 = edge + (t0 & (LN_EDGE - 1)) * LN_LLW;");
        w.line("const unsigned long long* const e1 = edge + ((t0 + LN_GROUP) & (LN_EDGE - 1)) * LN_LLW;");
    }
    if let Update::Point = update {
        w.open("if (t0 == 0)");
        w.line("#pragma unroll");
        w.open("for (int m = 0; m < LN_LINES; ++m)");
        for (window, b, lo, hi) in plan.window_reads() {
            w.line("#pragma unroll");
            w.line(format!(
                "for (int i = {lo}; i <= {hi}; ++i) {}[m][i] = {};",
                array(window, b),
                window_read("wc[m]", window, b, "i")
            ));
        }
        w.close("");
        w.close("");
    }
    if plan.reads_line_before() {
        w.line("// Rows before t0 are in registers: their slots may take rows LN_EDGE on (an atomic store, read volatile).");
        w.line("if (lane == 0) atomicExch(&ln_taken, t0);");
    }
    w.line("__syncwarp(); // every lane's reads of the group before a lane writes a row another lane read");
    emit_steps(w, s, plan, update);
}

/// A step's load of the ring's words LN_PEEK rows on (`u` is a constant: the compiler chooses).
const PEEK_LOAD: &str = "ln_edge_load((u + LN_PEEK < LN_GROUP ? e0 : e1) + ((u + LN_PEEK) % LN_GROUP) * LN_LLW)";

/// A group's steps on registers and shuffles, and where every lane's every step is inside the
/// walk, the same steps without the selects that keep a lane outside it still (measured 2 %
/// faster: the selects are on the chain from one step to the next).
fn emit_steps(w: &mut Writer, s: &Stencil, plan: &LanePlan, update: Update<'_>) {
    w.open("if (t0 >= LN_DEPTH && t0 + LN_GROUP <= X0 && (wg + 1) * LN_WIDTH <= X1)");
    emit_step_loop(w, s, plan, true, update);
    w.close("");
    w.open("else");
    emit_step_loop(w, s, plan, false, update);
    w.close("");
}

/// The unrolled steps of a group; after step u, the window values of the next group whose
/// slot in the arrays step u used last (where the step reads them).
fn emit_step_loop(w: &mut Writer, s: &Stencil, plan: &LanePlan, inside: bool, update: Update<'_>) {
    w.line("#pragma unroll");
    w.open("for (int u = 0; u < LN_GROUP; ++u)");
    w.line("// Line m's row, and whether it is inside the walk.");
    w.line("int k[LN_LINES];");
    w.line("bool on[LN_LINES];");
    w.line("#pragma unroll");
    w.open("for (int m = 0; m < LN_LINES; ++m)");
    w.line("k[m] = t0 + u - LN_SKEW;");
    if inside {
        w.line("on[m] = true; // the compiler drops the selects");
    } else {
        w.line("on[m] = active[m] && (unsigned)k[m] < (unsigned)X0;");
    }
    w.close("");
    if plan.reads_line_before() {
        emit_line_before_check(w, inside);
    }
    emit_step_update(w, s, plan, update);
    w.line("#pragma unroll");
    w.line("for (int m = 0; m < LN_LINES; ++m) if (on[m]) wout[m][u * LN_PITCH] = v[m];");
    if plan.reads_line_before() {
        w.line(format!("if (sizeof(real) == 8) peek[u % LN_PEEK] = {PEEK_LOAD};"));
        w.line("if (on[LN_LINES - 1] && hands_over)");
        w.line("  ln_ll_put(&ln_ll[((idx)wg * X0 + k[LN_LINES - 1]) * LN_LLW], v[LN_LINES - 1], (unsigned)k[LN_LINES - 1] + 1u);");
    }
    if let Update::Parts(_) = update {
        w.close("");
        return;
    }
    w.line("#pragma unroll");
    w.open("for (int m = 0; m < LN_LINES; ++m)");
    for (window, b, lo, hi) in plan.window_reads() {
        let name = array(window, b);
        w.line(format!(
            "if ({lo} + u <= {hi}) {name}[m][{lo} + u] = {};",
            window_read("wcn[m]", window, b, &format!("{lo} + u"))
        ));
        w.line("#pragma unroll");
        w.line(format!(
            "for (int i = {lo} + LN_GROUP; i <= {hi}; ++i) if (u == LN_GROUP - 1) {name}[m][i] = {};",
            window_read("wcn[m]", window, b, "i")
        ));
    }
    w.close("");
    w.close("");
}

/// A step's row of the line before for lane 0: the ring's tags of the next LN_CHECK rows
/// checked every LN_CHECK steps (waiting until they have come), the row's value taken, and
/// the word LN_PEEK rows on loaded.
fn emit_line_before_check(w: &mut Writer, inside: bool) {
    w.line("// Lane 0's line before at rows t0 + u … t0 + u + LN_CHECK − 1 (up to the walk's end): loaded LN_PEEK");
    w.line("// steps ago and, until they have come, again.");
    let rows = if inside { "LN_CHECK" } else { "X0 - (t0 + u)" };
    w.line(format!("if (u % LN_CHECK == 0) ln_edge_wait(peek, edge, t0 + u, {rows});"));
    w.line("ln_word& word = peek[u % LN_PEEK];");
    w.line("#pragma unroll");
    w.line("for (int d = 0; d < LN_BEFORE; ++d) bw[d] = bw[d + 1];");
    w.line("bw[LN_BEFORE] = ln_word_value(word);");
    w.line("// The slot's next word: loaded here in single precision, after the step's output in double (measured).");
    w.line(format!("if (sizeof(real) == 4) word = {PEEK_LOAD};"));
}

/// The helpers' copies into the window (the loader's) and stores out of it (the storer's),
/// and the loader's first rows: the boundary rows before the walk and the first LN_LEAD groups.
fn emit_helper_setup(w: &mut Writer, s: &Stencil, plan: &LanePlan, unknown: &str) {
    let fields: Vec<String> = plan.windows.iter().map(|&f| c_name(&s.fields[f].name)).collect();
    let needs = |window: usize, side: i64| plan.reads_side(window, side);
    let line_before = plan.reads_line_before();
    w.line("// The helpers. Rows past the walk's ends are clamped onto its boundary rows (their slots are not read).");
    let sides = |side: i64| (0..fields.len()).any(|k| needs(k, side));
    if sides(1) {
        w.line("const int after_line = min((wg + 1) * LN_WIDTH, X1 - 1 + R2);");
    }
    if sides(-1) && !line_before {
        w.line("const int before_line = wg * LN_WIDTH - 1;");
    }
    w.line("const auto clamp_row = [&](const int r) { return min(max(r, -R0), X0 - 1 + R0); };");
    w.line(
        "// Rows [r0, r0 + LN_GROUP) of the lane's lines of every window, copied asynchronously into their slots; lane",
    );
    w.line(
        "// u < LN_GROUP: row r0 + u of the line before, lane LN_GROUP + u: of the line after, where a window is read",
    );
    w.line("// there. Every value read here is one no warp has written yet in this sweep, so the copies may use L1.");
    w.open("const auto copy_rows = [&](const int r0)");
    for (k, f) in fields.iter().enumerate() {
        w.line(format!("real* const at{k} = win + {k} * LN_SLOTS * LN_PITCH;"));
        w.line("#pragma unroll");
        w.line("for (int m = 0; m < LN_LINES; ++m)");
        w.line("#pragma unroll");
        w.line(format!(
            "  for (int u = 0; u < LN_GROUP; ++u) LN_COPY(at{k} + LN_POS(m), r0 + u, &f_{f}[LN_ROW(clamp_row(r0 + u)) + LN_LINE(line[m])]);"
        ));
        if needs(k, -1) {
            w.line(format!(
                "if (lane < LN_GROUP) LN_COPY(at{k} + LN_COLUMNS * (LN_LINES - 1), r0 + lane, &f_{f}[LN_ROW(clamp_row(r0 + lane)) + LN_LINE(before_line)]);"
            ));
        }
        if needs(k, 1) {
            w.line(format!(
                "if (lane >= LN_GROUP && lane < 2 * LN_GROUP) LN_COPY(at{k} + LN_COLUMNS - 1, r0 + lane - LN_GROUP, &f_{f}[LN_ROW(clamp_row(r0 + lane - LN_GROUP)) + LN_LINE(after_line)]);"
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
        w.line("#pragma unroll");
        w.line(format!(
            "for (int m = 0; m < LN_LINES; ++m) LN_PUT({at} + LN_POS(m), r, f_{f}[LN_ROW(r) + LN_LINE(line[m])]);"
        ));
        if needs(k, -1) {
            w.line(format!(
                "if (lane == 0) LN_PUT({at} + LN_COLUMNS * (LN_LINES - 1), r, f_{f}[LN_ROW(r) + LN_LINE(before_line)]);"
            ));
        }
        if needs(k, 1) {
            w.line(format!("if (lane == 1) LN_PUT({at} + LN_COLUMNS - 1, r, f_{f}[LN_ROW(r) + LN_LINE(after_line)]);"));
        }
    }
    w.close("");
    w.line("for (int g = 0; g < LN_LEAD; ++g) copy_rows(g * LN_GROUP);");
    w.close("");
}

/// The storer's `store_rows(upto, last)`: the rows it holds stored, then finished rows of its
/// lines up to `upto` loaded from the window a group at a time, the last group held for the next
/// meeting unless `last`.
fn emit_store_rows(w: &mut Writer, unknown: &str) {
    w.line("int stored_rows = 0; // rows of this warp's lines loaded from the window (stored, or held to be)");
    w.line("// The rows loaded at the storer's last meeting, stored at its next before it loads again: no store waits");
    w.line("// on a load from shared memory just issued.");
    w.line("real held[LN_LINES][LN_GROUP];");
    w.line("int held_row = 0, held_n = 0;");
    w.line("// Stored at L2 (`st.global.cg`): the block never reads these rows back (measured 1–2 % faster).");
    w.open("const auto store_held = [&]()");
    w.line("#pragma unroll");
    w.line("for (int m = 0; m < LN_LINES; ++m)");
    w.line("#pragma unroll");
    w.line(format!(
        "  for (int u = 0; u < LN_GROUP; ++u) if (active[m] && u < held_n) __stcg(&f_{unknown}[LN_ROW(held_row + u) + LN_LINE(line[m])], held[m][u]);"
    ));
    w.line("held_n = 0;");
    w.close(";");
    w.open("const auto store_rows = [&](const int upto, const bool last)");
    w.line("store_held();");
    w.open("while (stored_rows < upto)");
    w.line("const int n = min(upto - stored_rows, LN_GROUP);");
    w.line("#pragma unroll");
    w.line("for (int m = 0; m < LN_LINES; ++m)");
    w.line("#pragma unroll");
    w.line("  for (int u = 0; u < LN_GROUP; ++u)");
    w.line("    held[m][u] = u < n ? win[LN_OUT_SLOT(stored_rows + u, LN_SKEW) * LN_PITCH + LN_POS(m)] : (real)0;");
    w.line("held_row = stored_rows;");
    w.line("held_n = n;");
    w.line("stored_rows += n;");
    w.line("if (last || stored_rows < upto) store_held();");
    w.close("");
    w.close(";");
}

/// The receiver warp: the line before's rows into the block's ring as they come, from the
/// block before's hand-over (or, for block 0, the boundary line). Lane j takes rows j, j + 32,
/// …, each put as soon as it has arrived and the lane goes on to its next, never more than the
/// ring's rows ahead of the compute warp. (Taking 32 rows at a time, every 32nd row waited for
/// the 31 before it, measured 1.033 against 1.022 ms a step in f32, 1.444 against 1.454 in f64.)
fn emit_receiver(w: &mut Writer, unknown: &str) {
    w.open("if (warp == 3)");
    w.line("// A lane polls its row until it has come, whatever the other lanes' rows do: a row waits for no other.");
    w.open("for (int r = lane; __any_sync(0xffffffffu, r < X0);)");
    w.line("const bool room = r < X0 && r < *(volatile int*)&ln_taken + LN_EDGE;");
    w.line("if (!__any_sync(0xffffffffu, room)) __nanosleep(100); // the ring is full");
    w.line("real x;");
    w.line("if (!room) continue;");
    w.line(format!("if (wg == 0) x = __ldcg(&f_{unknown}[LN_ROW(r) + LN_LINE(before_line)]);"));
    w.line("else if (!ln_ll_get(&ln_ll[((idx)(wg - 1) * X0 + r) * LN_LLW], (unsigned)r + 1u, &x)) continue;");
    w.line("ln_edge_put(&edge[(r & (LN_EDGE - 1)) * LN_LLW], x, (unsigned)r + 1u);");
    w.line("r += 32;");
    w.close("");
    w.line("return;");
    w.close("");
}
