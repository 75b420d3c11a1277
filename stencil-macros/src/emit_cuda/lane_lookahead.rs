//! Fast mode's step with the line before substituted once (`LN_LOOKAHEAD`): for a point
//! function affine in exactly its own last output and the line before's value at the same
//! row, with slopes the same everywhere,
//!
//! ```text
//! u[k, j] = p[k, j] + s₁·u[k − 1, j] + s₂·u[k, j − 1]
//!         = p[k, j] + s₁·u[k − 1, j] + s₂·a[k, j − 1] + s₂²·u[k, j − 2],
//! a[k, j − 1] = p[k, j − 1] + s₁·u[k − 1, j − 1],
//! ```
//!
//! so lane j's step t (row k = t − j) reads lane j − 1's `a` of step t − 1 and lane j − 2's
//! output of step t − 2, each shuffled as soon as it is known, a step or two before it is
//! used (the latter held a step in a register): the shuffle leaves the
//! chain from one step to the next, which is then one fused multiply–add (the lane's own last
//! output times s₁), while the lanes keep their one-step skew. Lane 0 takes the line before
//! from the ring as before, and lane 1 takes the ring's row of the step before in place of
//! lane −1's output. Equal in real arithmetic to the point function; its rounding differs from
//! the plain update's (measured in `docs/performance.md`). One line a lane only.

use super::lane_plan::{LanePlan, Source};
use crate::writer::Writer;

/// The read slots of the own last output and of the line before at the same row, where the
/// look-ahead applies: those are the step's only new reads and neither slope varies.
pub(super) fn lookahead_slots(plan: &LanePlan, varying: &[bool]) -> Option<(usize, usize)> {
    let new = plan.new_reads();
    if varying.iter().any(|&v| v) || new.len() != 2 || plan.before != 0 {
        return None;
    }
    let (own, before) = (new[0], new[1]);
    (plan.sources[own] == Source::History(1) && plan.sources[before] == Source::LineBefore(0)).then_some((own, before))
}

/// The switch (`ln_lookahead`: one line a lane in single precision, unless `-DLN_LOOKAHEAD=0`)
/// and the values carried from one step to the next, before the compute warp's first group.
pub(super) fn emit_lookahead_setup(w: &mut Writer, before: usize) {
    w.line("#ifndef LN_LOOKAHEAD");
    w.line("#define LN_LOOKAHEAD 1");
    w.line("#endif");
    w.line("// The line before substituted once (see the step): single precision only, where it shortens the step");
    w.line("// (measured: f32 fast 0.777 → 0.755 ms a step; f64 fast 1.063 → 1.080, two more 64-bit shuffles a step).");
    w.line("const bool ln_lookahead = LN_LOOKAHEAD && LN_LINES == 1 && sizeof(real) == 4;");
    w.line("// Lane j − 1's own part of its last step, lane j − 2's output of two steps ago (shuffled last step, held");
    w.line("// a step), the ring's row of the last step, and s₂².");
    w.line("real la_x = 0, la_y = 0, la_y2 = 0, la_bw = 0;");
    w.line(format!("const real la_s22 = ln_slope{before} * ln_slope{before};"));
}

/// The step's output `v[0]` with the look-ahead, and its shuffles for the steps after (in place
/// of the plain update and its shuffle).
pub(super) fn emit_lookahead_update(w: &mut Writer, (own, before): (usize, usize)) {
    w.line("// This lane's own part, for lane j + 1's next step: shuffled at once, before the output is known.");
    w.line(format!("const real la_a = fma(ln_slope{own}, hist[0][1], part[0][u][0]);"));
    w.line("const real la_up = __shfl_up_sync(0xffffffffu, la_a, 1);");
    w.line("// u[k, j − 1] = a[k, j − 1] + s₂·u[k, j − 2]: lane 0 takes the ring's row, lane 1 the ring's row of the");
    w.line("// step before for lane −1's output; only the lane's own last output is on the chain.");
    w.line("const real la_far = lane == 0 ? (real)0 : ln_pick(lane == 1, la_bw, la_y);");
    w.line(format!(
        "v[0] = fma(ln_slope{own}, hist[0][1], fma(ln_slope{before}, ln_pick(lane == 0, bw[0], la_x), fma(la_s22, la_far, part[0][u][0])));"
    ));
    w.line("la_x = la_up;");
    w.line("la_bw = bw[0];");
    w.line("la_y = la_y2;");
    w.line("la_y2 = __shfl_up_sync(0xffffffffu, v[0], 2);");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The look-ahead's slots of a sweep's lane plan in fast mode, if it is affine in its new reads.
    fn slots(tokens: proc_macro2::TokenStream) -> Option<(usize, usize)> {
        let item = syn::parse2(tokens).expect("parses");
        let plan = LanePlan::new(&crate::validate::lower(&item).expect("lowers")).expect("a lane kernel");
        let varying = plan.slopes.as_ref().expect("affine in its new reads").varying();
        lookahead_slots(&plan, &varying)
    }

    #[test]
    fn a_five_point_sweep_with_constant_slopes_takes_the_look_ahead() {
        // u[−1, 0] (slot 1) is the own last output, u[0, 1] on a descending axis (slot 2) the
        // line before at the same row.
        let five = quote::quote! {
            sweep(+, -) fn at(mut u: Field2, q: Field2, w: Real) -> Real {
                (u[0, 0] + w * u[-1, 0] + u[0, 1] + u[1, 0] + u[0, -1] + q[0, 0]) / 6.0
            }
        };
        assert_eq!(slots(five), Some((1, 2)));
    }

    #[test]
    fn other_new_reads_or_varying_slopes_keep_the_plain_update() {
        for tokens in [
            // A slope that varies from point to point (a field times the line before).
            quote::quote! { sweep(+, +) fn vary(mut u: Field2, k: Field2) -> Real { (u[-1, 0] + k[0, 0] * u[0, -1]) / 2.0 } },
            // The line before a row back as well.
            quote::quote! { sweep(+, +) fn back(mut u: Field2) -> Real { (u[0, -1] + u[-1, 0] + u[-1, -1]) / 3.0 } },
            // Two rows back on the own line.
            quote::quote! { sweep(+, +) fn two(mut u: Field2) -> Real { (u[-2, 0] + u[-1, 0] + u[0, -1]) / 3.0 } },
        ] {
            assert_eq!(slots(tokens), None);
        }
    }
}
