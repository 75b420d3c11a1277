//! The lane kernel's constants (`lanes.rs`): its fixed geometry, the stencil's reach and
//! directions, the window layout for the lines a lane owns, and the row and line addressing.

use super::lane_plan::{COLUMNS, DEPTH, EDGE, GROUP, LEAD, LINES, LanePlan, RING, pitch};
use super::lane_sync::{CHECK, CHECK_SINGLE_EXACT};
use super::signature::{Kind, define_defaults, signature};
use crate::ir::Stencil;
use crate::writer::Writer;

/// The lane kernel's constants: the fixed geometry, the stencil's reach, directions and the
/// window layout, and the row and line addressing.
pub(super) fn lanes_defines(w: &mut Writer, s: &Stencil, plan: &LanePlan) {
    w.line(
        "// Lane kernel: a lane per LN_LINES lines (stencil axis 1), walking them along axis 0 a step behind the lane",
    );
    w.line(
        "// before; a block per LN_WIDTH lines: the compute warp (0), its loader (1), its storer (2), its receiver (3)",
    );
    w.line("// and in fast mode its parts warp (LN_PARTS_WARP). Launch blockDim 224, one block per LN_WIDTH lines, LN_REALS");
    w.line("// reals of dynamic shared memory.");
    define_defaults(w, &signature(s, Kind::Lanes).defines);
    w.line(format!("#define LN_GROUP {GROUP}"));
    w.line("// Groups of rows the loader copies ahead of the compute warp's group.");
    w.line(format!("#define LN_LEAD {LEAD}"));
    emit_lines_defines(w, plan);
    w.line("// The warp that computes fast mode's parts: on the storer's quarter of the multiprocessor (warps are");
    w.line("// spread over the four by index), the lightest (measured, against warp 5: f64 fast 1.115 -> 1.067 ms).");
    w.line("#define LN_PARTS_WARP 6");
    w.line("// Threads at the helpers' meeting: the compute warp, the loader, the storer and fast mode's parts warp.");
    if plan.parts() > 0 {
        w.line("#ifdef STENCIL_FAST");
        w.line("#define LN_MEET 128");
        w.line("#else");
        w.line("#define LN_MEET 96");
        w.line("#endif");
    } else {
        w.line("#define LN_MEET 96");
    }
    w.line(
        "// Rows of the line before the compute warp checks at once, and steps ahead it loads a row's words (so the",
    );
    w.line(
        "// last row of a check was loaded a step before it): 2 in single precision's exact mode, else 4 (measured).",
    );
    w.line("#ifdef STENCIL_FAST");
    w.line(format!("#define LN_CHECK {CHECK}"));
    w.line("#else");
    w.line(format!("#define LN_CHECK (sizeof(real) == 4 ? {CHECK_SINGLE_EXACT} : {CHECK})"));
    w.line("#endif");
    w.line("#define LN_PEEK LN_CHECK");
    w.line(format!("#define LN_EDGE {EDGE}"));
    w.line(format!("#define LN_BEHIND {}", plan.behind));
    w.line(format!("#define LN_AHEAD {}", plan.ahead));
    w.line(format!("#define LN_BEFORE {}", plan.before));
    w.line(format!("#define LN_HISTORY {}", plan.history));
    w.line(format!("#define LN_WINDOWS {}", plan.windows.len()));
    w.line("#define LN_SPAN (LN_BEHIND + LN_GROUP + LN_AHEAD)");
    w.line("// A window's rows: the ring, and its first LN_SPAN rows again after it, so a group's reads never wrap.");
    w.line("#define LN_SLOTS (LN_RING + LN_SPAN)");
    w.line(format!("#define LN_PARTS {}", plan.parts()));

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
    w.line(
        "// The slot the compute warp wrote the output of row r of a line of lane j into: its group's first row's slot",
    );
    w.line(
        "// and as many on, so the twin past the ring where the row's slot is below its step in the group ((r + j) mod",
    );
    w.line("// LN_GROUP).");
    w.line("#define LN_OUT_SLOT(r, j) (((r) & (LN_RING - 1)) + (((r) & (LN_RING - 1)) < (((r) + (j)) & (LN_GROUP - 1)) ? LN_RING : 0))");
    w.line("// The same, copied asynchronously from global memory.");
    w.line("#define LN_COPY(at, r, src)                                              \\");
    w.line("  {                                                                      \\");
    w.line("    const int ln_s = (r) & (LN_RING - 1);                                \\");
    w.line("    ln_copy((at) + ln_s * LN_PITCH, (src));                              \\");
    w.line("    if (ln_s < LN_SPAN) ln_copy((at) + (ln_s + LN_RING) * LN_PITCH, (src)); \\");
    w.line("  }");
}

/// The lines a lane owns (`LN_LINES`, defined by the runtime) and what depends on them: the
/// block's lines, the window's ring, pitch and columns, and the block's shared memory.
fn emit_lines_defines(w: &mut Writer, plan: &LanePlan) {
    let by_lines = |value: &dyn Fn(usize) -> usize| {
        LINES.iter().rev().skip(1).fold(value(LINES[LINES.len() - 1]).to_string(), |rest, &lines| {
            format!("(LN_LINES == {lines} ? {} : {rest})", value(lines))
        })
    };
    let lines: Vec<String> = LINES.iter().map(|lines| format!("LN_LINES != {lines}")).collect();
    w.line("// Lines a lane owns: lane j owns the block's lines j·LN_LINES … j·LN_LINES + LN_LINES − 1 and computes the same");
    w.line("// row of each in a step, in order, a step behind lane j − 1: a block takes LN_WIDTH lines, its last lane LN_DEPTH");
    w.line("// steps behind its first.");
    w.line("#ifndef LN_LINES");
    w.line("#define LN_LINES 1");
    w.line("#endif");
    w.line(format!("#if {}", lines.join(" && ")));
    w.line(format!(
        "#error \"LN_LINES: {} lines a lane\"",
        LINES.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(" or ")
    ));
    w.line("#endif");
    w.line("#define LN_WIDTH (32 * LN_LINES)");
    w.line(
        "// The block's line v = LN_V(m) of lane `lane`'s line m, and its column in a window row; LN_OFF(m, b): the",
    );
    w.line("// column of line v + b less line v's (b = −1 of the first line: the line before the block, column");
    w.line("// LN_COLUMNS · (LN_LINES − 1); b = 1 of the last: the line after it, column LN_COLUMNS − 1).");
    w.line(format!("#define LN_COLUMNS {COLUMNS}"));
    w.line("#define LN_V(m) (lane * LN_LINES + (m))");
    w.line("// The steps lane `lane`'s lines run behind lane 0's: at step t they compute row t − LN_SKEW. LN_DEPTH,");
    w.line("// lane 31's: the steps from a block's first line to its last.");
    w.line("#define LN_SKEW lane");
    w.line(format!("#define LN_DEPTH {DEPTH}"));
    w.line("#define LN_POS(m) (LN_COLUMNS * (m) + 1 + lane)");
    w.line("#define LN_OFF(m, b) (((m) + (b) + LN_LINES) % LN_LINES * LN_COLUMNS + ((m) + (b) + LN_LINES) / LN_LINES - 1 - (m) * LN_COLUMNS)");
    w.line(
        "// Rows of a window's ring (the rows in use at once, LN_DEPTH + (LN_LEAD + 2) · LN_GROUP, rounded up to a power of",
    );
    w.line("// two), a window row's pitch, and the reals of a block's shared memory.");
    w.line(format!("#define LN_RING {RING}"));
    w.line(format!("#define LN_PITCH {}", by_lines(&pitch)));
    w.line(format!("#define LN_REALS {}", by_lines(&|lines| plan.block_reals(lines))));
}
