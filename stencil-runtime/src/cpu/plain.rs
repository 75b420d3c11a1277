//! One Jacobi pass over the interior, parallel over planes of the slowest axis.

use rayon::prelude::*;

use crate::engine::Difference;
use crate::plan::Layout;
use crate::{Real, Stencil};

/// The difference over one contiguous span of new and old values, `base` its first flat
/// index. Four independent accumulators let the loop vectorise; a NaN or ±∞ makes the sum non-finite, and only then is the span
/// searched for the first such value.
fn of_span<T: Real>(new: &[T], old: &[T], base: usize) -> Difference {
    const LANES: usize = 4;
    let (mut sum, mut max) = ([0f64; LANES], [0f64; LANES]);
    let mut add = |lane: usize, n: T, o: T| {
        let d = (n - o).to_f64();
        sum[lane] += d * d;
        let a = d.abs();
        max[lane] = if a > max[lane] { a } else { max[lane] };
    };
    let (new4, old4) = (new.chunks_exact(LANES), old.chunks_exact(LANES));
    let (new_rest, old_rest) = (new4.remainder(), old4.remainder());
    for (n, o) in new4.zip(old4) {
        for lane in 0..LANES {
            add(lane, n[lane], o[lane]);
        }
    }
    for (n, o) in new_rest.iter().zip(old_rest) {
        add(0, *n, *o);
    }
    let sum_sq: f64 = sum.iter().sum();
    let first_non_finite =
        if sum_sq.is_finite() { None } else { new.iter().position(|v| !v.is_finite()).map(|j| base + j) };
    Difference { max_abs: max.iter().copied().fold(0.0, f64::max), sum_sq, first_non_finite }
}

/// Number of points a 1-D pass hands to one rayon task.
const CHUNK_1D: usize = 1 << 14;

/// Writes S(fields) into the interior of `out`; `fields` are in parameter order with the
/// unknown's current iterate at its place. With `measure`, also returns the difference
/// between `out` and the unknown's iterate.
pub(crate) fn apply<'a, S: Stencil<N>, T: Real, const N: usize>(
    layout: &Layout<N>,
    fields: &[&'a [T]],
    out: &mut [T],
    params: &S::Params<T>,
    measure: bool,
) -> Option<Difference> {
    let old = fields[S::META.unknown];
    // `reads` is scratch space reused across the spans of one task, so a pass allocates
    // once per task rather than once per row.
    let span = |reads: &mut Vec<&'a [T]>, base: usize, out_span: &mut [T]| {
        reads.clear();
        reads.extend(
            layout
                .reads
                .iter()
                .map(|&(field, offset)| &fields[field][(base as isize + offset) as usize..][..out_span.len()]),
        );
        S::apply_row(reads, out_span, params);
    };
    let total = if N == 1 {
        let start = layout.radius[0];
        out[start..start + layout.row_len()]
            .par_chunks_mut(CHUNK_1D)
            .enumerate()
            .map(|(c, chunk)| {
                let base = start + c * CHUNK_1D;
                span(&mut Vec::new(), base, chunk);
                if measure { of_span(chunk, &old[base..base + chunk.len()], base) } else { Difference::default() }
            })
            .reduce(Difference::default, Difference::merge)
    } else {
        let plane = layout.plane_len();
        let (r0, n0) = (layout.radius[0], layout.shape[0]);
        let (first, last) = layout.plane_span();
        out.par_chunks_mut(plane)
            .enumerate()
            .filter(|(p, _)| (r0..n0 - r0).contains(p))
            .map(|(p, plane_out)| {
                // One span from the plane's first interior point to its last: rows are
                // long enough to vectorise and the per-row cost is paid once per plane.
                // Every read stays inside the grid; the boundary points between interior
                // rows get a value too, and are then put back.
                let base = p * plane;
                span(&mut Vec::with_capacity(layout.reads.len()), base + first, &mut plane_out[first..last]);
                layout.for_each_gap_in_plane(|gap| {
                    plane_out[gap.clone()].copy_from_slice(&old[base + gap.start..base + gap.end])
                });
                if measure {
                    of_span(&plane_out[first..last], &old[base + first..base + last], base + first)
                } else {
                    Difference::default()
                }
            })
            .reduce(Difference::default, Difference::merge)
    };
    measure.then_some(total)
}
