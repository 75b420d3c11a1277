//! One Jacobi pass over the interior, parallel over planes of the slowest axis.

use rayon::prelude::*;

use crate::engine::Difference;
use crate::plan::Layout;
use crate::{Real, Stencil};

/// `S::apply_rows`, compiled for the widest vectors the processor has: with AVX2 on x86-64,
/// else for the baseline the crate is built for. The values
/// are the same either way: no operation is contracted or reordered (Rust never fuses a
/// multiply and an add it was not asked to), only the vector width changes.
fn apply_rows<S: Stencil<N>, T: Real, const N: usize>(reads: &[&[T]], outs: &mut [&mut [T]], params: &S::Params<T>) {
    #[cfg(target_arch = "x86_64")]
    if wide_vectors() {
        // SAFETY: the processor has AVX2 and FMA (checked by `wide_vectors`).
        return unsafe { apply_rows_avx2::<S, T, N>(reads, outs, params) };
    }
    S::apply_rows(reads, outs, params);
}

/// Whether this x86-64 processor has AVX2 and FMA (the standard library caches the answer).
#[cfg(target_arch = "x86_64")]
fn wide_vectors() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
}

/// `S::apply_rows` compiled with AVX2 and FMA enabled (the point function inlined into it).
///
/// # Safety
///
/// The processor must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn apply_rows_avx2<S: Stencil<N>, T: Real, const N: usize>(
    reads: &[&[T]],
    outs: &mut [&mut [T]],
    params: &S::Params<T>,
) {
    S::apply_rows(reads, outs, params);
}

/// Number of points a 1-D pass hands to one rayon task.
const CHUNK_1D: usize = 1 << 14;

/// Lists of equal length, each split in the same number of parts, regrouped by part: the
/// `i`-th list of the result holds the `i`-th part of every list.
fn by_part<X>(lists: Vec<Vec<X>>) -> Vec<Vec<X>> {
    let mut lists: Vec<_> = lists.into_iter().map(Vec::into_iter).collect();
    let parts = lists.first().map_or(0, ExactSizeIterator::len);
    (0..parts).map(|_| lists.iter_mut().filter_map(Iterator::next).collect()).collect()
}

/// Writes S(fields) into the interior of `outs`, the next iterate of every unknown in
/// declaration order; `fields` are in parameter order with each unknown's current iterate at
/// its place. With `measure`, also returns the difference between the new and the current
/// iterates, over every unknown.
pub(crate) fn apply_all<'a, S: Stencil<N>, T: Real, const N: usize>(
    layout: &Layout<N>,
    fields: &[&'a [T]],
    outs: Vec<&mut [T]>,
    params: &S::Params<T>,
    measure: bool,
) -> Option<Difference> {
    let olds: Vec<&[T]> = S::META.unknowns.iter().map(|&f| fields[f]).collect();
    // `reads` is scratch space reused across the spans of one task, so a pass allocates
    // once per task rather than once per row.
    let span = |reads: &mut Vec<&'a [T]>, base: usize, spans: &mut [&mut [T]]| {
        let len = spans[0].len();
        reads.clear();
        reads.extend(
            layout.reads.iter().map(|&(field, offset)| &fields[field][(base as isize + offset) as usize..][..len]),
        );
        apply_rows::<S, T, N>(reads, spans, params);
    };
    // The difference of the spans of new values at flat index `base` from the current ones.
    let changed = |spans: Vec<&[T]>, base: usize| {
        let changes =
            spans.into_iter().zip(&olds).map(|(new, old)| Difference::of_span(new, &old[base..base + new.len()], base));
        changes.fold(Difference::default(), Difference::merge)
    };
    let total = if N == 1 {
        let start = layout.radius[0];
        let chunks = outs.into_iter().map(|o| o[start..start + layout.row_len()].chunks_mut(CHUNK_1D).collect());
        by_part(chunks.collect())
            .into_par_iter()
            .enumerate()
            .map(|(c, mut spans)| {
                let base = start + c * CHUNK_1D;
                span(&mut Vec::new(), base, &mut spans);
                if measure { changed(spans.iter().map(|s| &**s).collect(), base) } else { Difference::default() }
            })
            .reduce(Difference::default, Difference::merge)
    } else {
        let plane = layout.plane_len();
        let (r0, n0) = (layout.radius[0], layout.shape[0]);
        let (first, last) = layout.plane_span();
        by_part(outs.into_iter().map(|o| o.chunks_mut(plane).collect()).collect())
            .into_par_iter()
            .enumerate()
            .filter(|(p, _)| (r0..n0 - r0).contains(p))
            .map(|(p, mut planes)| {
                // One span from the plane's first interior point to its last: rows are
                // long enough to vectorise and the per-row cost is paid once per plane.
                // Every read stays inside the grid; the boundary points between interior
                // rows get a value too, and are then put back.
                let base = p * plane;
                let mut spans: Vec<&mut [T]> = planes.iter_mut().map(|o| &mut o[first..last]).collect();
                span(&mut Vec::with_capacity(layout.reads.len()), base + first, &mut spans);
                for (plane_out, old) in planes.iter_mut().zip(&olds) {
                    layout.for_each_gap_in_plane(|gap| {
                        plane_out[gap.clone()].copy_from_slice(&old[base + gap.start..base + gap.end])
                    });
                }
                let spans = planes.iter().map(|o| &o[first..last]).collect();
                if measure { changed(spans, base + first) } else { Difference::default() }
            })
            .reduce(Difference::default, Difference::merge)
    };
    measure.then_some(total)
}
