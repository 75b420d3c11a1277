//! Fast mode's parts of the lane kernel's steps: where the point function is affine in a
//! step's new reads, what of the step is off the chain from one step to the next (the point
//! function with those reads at zero, and each slope that varies from point to point) is
//! computed a group ahead by a warp of its own, and the compute warp's step adds each new read
//! times its slope to it.

use super::common::*;
use super::lane_plan::{LanePlan, Source, window_read};
use super::slope::slope_name;
use crate::ir::Stencil;
use crate::writer::Writer;

/// The parts warp's `compute_parts` and the first group's parts, before the compute warp
/// starts (fast mode only).
pub(super) fn emit_parts_setup(w: &mut Writer, s: &Stencil, plan: &LanePlan, varying: &[bool]) {
    w.line("#ifdef STENCIL_FAST");
    emit_compute_parts(w, s, plan, varying);
    w.line("// The first group's parts before the compute warp starts: the rows they read are in once every group of");
    w.line("// copies but the last has landed, as at each meeting.");
    w.line("if (loader) ln_copy_wait_prior();");
    w.line("ln_meet();");
    w.line("if (parts_warp) compute_parts(0);");
    w.line("#endif");
}

/// For each new read (slot, in [`LanePlan::new_reads`]' order), the part its slope is, where it
/// varies from point to point (part 0 is the point function with the new reads at zero).
fn slope_parts(plan: &LanePlan, varying: &[bool]) -> Vec<(usize, Option<usize>)> {
    let mut parts = 0;
    (plan.new_reads().into_iter().zip(varying))
        .map(|(slot, &varying)| {
            parts += usize::from(varying);
            (slot, varying.then_some(parts))
        })
        .collect()
}

/// `v[m]`, line m's output of the step in fast mode: its first part (the point function with the new reads
/// at zero) plus each new read times its slope, the latest-known last (measured:
/// `docs/performance.md`).
pub(super) fn emit_parts_update(w: &mut Writer, plan: &LanePlan, varying: &[bool], args: &[String]) {
    let mut sum = "part[0][u][m]".to_string();
    for (slot, part) in slope_parts(plan, varying) {
        let slope = match part {
            Some(part) => format!("part[{part}][u][m]"),
            None => format!("ln_slope{slot}"),
        };
        sum = format!("fma({slope}, {}, {sum})", args[slot]);
    }
    w.line("// Equal in real arithmetic to the point function; off the chain but for the fused multiply-adds.");
    w.line(format!("v[m] = {sum};"));
}

/// The parts warp's `compute_parts(t0)` in fast mode: for each step u of the compute warp's group
/// t0, what is off the chain from one step to the next — the point function with the step's
/// new reads at zero, then each slope that varies — into buffer (t0 / LN_GROUP) mod 2 of
/// `ln_parts`, part p of step u of lane l's line m at (((buffer · LN_PARTS + p) · LN_GROUP + u) ·
/// LN_LINES + m) · 32 + l.
/// It runs during the group before t0, when the window holds the rows it reads (the rows the
/// compute warp itself would read then).
fn emit_compute_parts(w: &mut Writer, s: &Stencil, plan: &LanePlan, varying: &[bool]) {
    let new = plan.new_reads();
    let args: Vec<String> = (plan.sources.iter().enumerate())
        .map(|(slot, source)| match *source {
            Source::Window { window, a, b } if !new.contains(&slot) => {
                window_read("wc", window, b, &format!("u + LN_BEHIND + ({a})"))
            }
            _ => "(real)0".into(),
        })
        .collect();
    let call = format!("({}{})", args.join(", "), scalar_args(s));
    w.line("// Fast mode: the off-chain parts of the compute warp's steps, a group ahead (the parts warp's).");
    w.open("const auto compute_parts = [&](const int t0)");
    w.line("real* const out = ln_parts + ((t0 / LN_GROUP) & 1) * (LN_PARTS * LN_GROUP * LN_WIDTH) + lane;");
    w.line("#pragma unroll");
    w.open("for (int m = 0; m < LN_LINES; ++m)");
    w.line("const real* const wc = win + ((t0 - LN_SKEW - LN_BEHIND) & (LN_RING - 1)) * LN_PITCH + LN_POS(m);");
    w.line("#pragma unroll");
    w.open("for (int u = 0; u < LN_GROUP; ++u)");
    w.line(format!("out[(u * LN_LINES + m) * 32] = {}_point{call};", s.name));
    for (slot, part) in slope_parts(plan, varying) {
        if let Some(part) = part {
            w.line(format!("out[(({part} * LN_GROUP + u) * LN_LINES + m) * 32] = {}{call};", slope_name(s, slot)));
        }
    }
    w.close("");
    w.close("");
    w.close(";");
}
