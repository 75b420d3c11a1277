//! One Jacobi pass over the interior, parallel over planes of the slowest axis.

use rayon::prelude::*;

use super::layout::Layout;
use crate::{Real, Stencil};

/// The difference between a pass's output and its input over the interior.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Difference {
    /// max |new − old|.
    pub max_abs: f64,
    /// Σ (new − old)².
    pub sum_sq: f64,
    /// Flat index of the first point (in memory order) whose new value is NaN or ±∞.
    pub first_non_finite: Option<usize>,
}

impl Difference {
    fn merge(self, other: Self) -> Self {
        Self {
            max_abs: self.max_abs.max(other.max_abs),
            sum_sq: self.sum_sq + other.sum_sq,
            first_non_finite: match (self.first_non_finite, other.first_non_finite) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }

    fn of_row<T: Real>(new: &[T], old: &[T], base: usize) -> Self {
        let mut d = Self::default();
        for (j, (&n, &o)) in new.iter().zip(old).enumerate() {
            if !n.is_finite() {
                d.first_non_finite.get_or_insert(base + j);
                continue;
            }
            let diff = (n - o).to_f64().abs();
            d.max_abs = d.max_abs.max(diff);
            d.sum_sq += diff * diff;
        }
        d
    }
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
    let len = layout.row_len();
    // `reads` is scratch space reused across the rows of one task, so a pass allocates
    // once per task rather than once per row.
    let row = |reads: &mut Vec<&'a [T]>, base: usize, out_row: &mut [T]| -> Difference {
        reads.clear();
        reads.extend(
            layout
                .reads
                .iter()
                .map(|&(field, offset)| &fields[field][(base as isize + offset) as usize..][..out_row.len()]),
        );
        S::apply_row(reads, out_row, params);
        if measure {
            Difference::of_row(out_row, &old[base..base + out_row.len()], base)
        } else {
            Difference::default()
        }
    };
    let total = if N == 1 {
        let start = layout.radius[0];
        out[start..start + len]
            .par_chunks_mut(CHUNK_1D)
            .enumerate()
            .map(|(c, chunk)| row(&mut Vec::new(), start + c * CHUNK_1D, chunk))
            .reduce(Difference::default, Difference::merge)
    } else {
        let plane = layout.plane_len();
        let (r0, n0) = (layout.radius[0], layout.shape[0]);
        out.par_chunks_mut(plane)
            .enumerate()
            .filter(|(p, _)| (r0..n0 - r0).contains(p))
            .map(|(p, plane_out)| {
                let mut d = Difference::default();
                let mut reads = Vec::with_capacity(layout.reads.len());
                layout.for_each_row_in_plane(|offset| {
                    d = d.merge(row(&mut reads, p * plane + offset, &mut plane_out[offset..offset + len]));
                });
                d
            })
            .reduce(Difference::default, Difference::merge)
    };
    measure.then_some(total)
}
