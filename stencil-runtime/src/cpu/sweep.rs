//! Gauss–Seidel-like sweeps in place: the sequential sweep in declared order, and the
//! rayon wavefront over tiles that computes the same values bit for bit.
//!
//! Both walk *tiles* in the skewed coordinates of [`SweepMeta::skew`]: with x' the
//! direction-oriented interior coordinates (0 at the first point visited on each axis),
//! z₀ = x'₀ and zₖ = x'ₖ + cₖ·zₖ₋₁. In z every read of the unknown that comes earlier in
//! the sweep has all components ≤ 0 and every later read all ≥ 0, so tiles that are
//! rectangles in z can run in order of their index sum τ = ΣTₖ, and all tiles of one τ are
//! independent. Inside a tile, points run in the declared (lexicographic x') order. The
//! sequential sweep is the special case of a single tile holding the whole interior.

use rayon::prelude::*;

use std::ops::Range;

use crate::plan::Layout;
use crate::{Direction, Real, Result, Schedule, Stencil, SweepMeta};

/// The unknown's memory, shared by the tasks of one wavefront.
#[derive(Clone, Copy)]
struct SharedMut<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: tasks that run at the same time touch disjoint tiles and never read a point that
// another task of the same wavefront writes (see the module documentation), so sharing the
// pointer across threads creates no data race.
unsafe impl<T: Send> Send for SharedMut<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedMut<T> {}

/// A sweep stencil laid over a grid: per axis, the interior extent and how an oriented
/// coordinate maps to an index.
struct Walk<'a, const N: usize> {
    layout: &'a Layout<N>,
    /// Interior points per axis.
    extent: [usize; N],
    directions: [Direction; N],
    skew: [i64; N],
    /// Per read slot: `None` for the unknown, else the field index; and the flat offset.
    loads: Vec<(Option<usize>, isize)>,
}

impl<'a, const N: usize> Walk<'a, N> {
    fn new(layout: &'a Layout<N>, sweep: &SweepMeta, unknown: usize, skewed: bool) -> Self {
        let extent = std::array::from_fn(|a| layout.shape[a] - 2 * layout.radius[a]);
        let directions = std::array::from_fn(|a| sweep.directions[a]);
        let skew = std::array::from_fn(|a| if skewed { sweep.skew[a] as i64 } else { 0 });
        let loads = layout.reads.iter().map(|&(f, off)| ((f != unknown).then_some(f), off)).collect();
        Self { layout, extent, directions, skew, loads }
    }

    /// Index on `axis` of oriented coordinate `x`.
    fn index(&self, axis: usize, x: i64) -> usize {
        let r = self.layout.radius[axis];
        match self.directions[axis] {
            Direction::Ascending => r + x as usize,
            Direction::Descending => self.layout.shape[axis] - 1 - r - x as usize,
        }
    }

    /// Largest z on each axis (the smallest is 0).
    fn z_max(&self) -> [i64; N] {
        let mut z = [0i64; N];
        for a in 0..N {
            z[a] = self.extent[a] as i64 - 1 + if a > 0 { self.skew[a] * z[a - 1] } else { 0 };
        }
        z
    }

    /// Updates, in declared order, every interior point whose z lies in `[lo, hi)`.
    fn run_box<S: Stencil<N>, T: Real>(
        &self,
        u: SharedMut<T>,
        fields: &[&[T]],
        params: &S::Params<T>,
        lo: [i64; N],
        hi: [i64; N],
    ) {
        self.visit::<S, T>(0, 0, 0, u, fields, params, &lo, &hi);
    }

    #[allow(clippy::too_many_arguments)]
    fn visit<S: Stencil<N>, T: Real>(
        &self,
        axis: usize,
        z_prev: i64,
        flat: usize,
        u: SharedMut<T>,
        fields: &[&[T]],
        params: &S::Params<T>,
        lo: &[i64; N],
        hi: &[i64; N],
    ) {
        let shift = self.skew[axis] * z_prev;
        let first = (lo[axis] - shift).max(0);
        let last = (hi[axis] - shift).min(self.extent[axis] as i64);
        let stride = self.layout.strides[axis];
        for x in first..last {
            let here = flat + self.index(axis, x) * stride;
            if axis + 1 < N {
                self.visit::<S, T>(axis + 1, x + shift, here, u, fields, params, lo, hi);
            } else {
                let load = |s: usize| {
                    let (field, offset) = self.loads[s];
                    let at = (here as isize + offset) as usize;
                    match field {
                        Some(f) => fields[f][at],
                        None => {
                            debug_assert!(at < u.len);
                            // SAFETY: `at` is inside the grid (the layout checked the radius)
                            // and no task writes this point concurrently (module docs).
                            unsafe { u.ptr.add(at).read() }
                        }
                    }
                };
                let value = S::point(load, params);
                debug_assert!(here < u.len);
                // SAFETY: `here` is an interior point of this task's tile; no other task
                // reads or writes it during this wavefront (module docs).
                unsafe { u.ptr.add(here).write(value) };
            }
        }
    }
}

fn sweep_meta<S: Stencil<N>, const N: usize>() -> &'static SweepMeta {
    S::META.sweep.as_ref().expect("sweep schedules are only chosen for sweep stencils")
}

/// One sweep in the declared order, on the calling thread. `fields` holds every field in
/// parameter order; the entry of the unknown is not read (`u` is).
pub(crate) fn sequential<S: Stencil<N>, T: Real, const N: usize>(
    layout: &Layout<N>,
    u: &mut [T],
    fields: &[&[T]],
    params: &S::Params<T>,
) {
    let walk = Walk::new(layout, sweep_meta::<S, N>(), S::META.unknown, false);
    let shared = SharedMut { ptr: u.as_mut_ptr(), len: u.len() };
    let hi = walk.z_max().map(|z| z + 1);
    walk.run_box::<S, T>(shared, fields, params, [0; N], hi);
}

/// One sweep as a rayon wavefront over tiles of `tile` points per axis (in skewed
/// coordinates); equal to [`sequential`] bit for bit.
pub(crate) fn wavefront<S: Stencil<N>, T: Real, const N: usize>(
    layout: &Layout<N>,
    u: &mut [T],
    fields: &[&[T]],
    params: &S::Params<T>,
    tile: usize,
) {
    let walk = Walk::new(layout, sweep_meta::<S, N>(), S::META.unknown, true);
    let shared = SharedMut { ptr: u.as_mut_ptr(), len: u.len() };
    // A tile beyond the largest skewed extent is one tile: the sequential sweep.
    let largest = walk.z_max().into_iter().max().unwrap_or(0) + 1;
    let tile = (tile.max(1) as u64).min(largest as u64) as i64;
    let tiles: [i64; N] = walk.z_max().map(|z| z / tile + 1);
    let waves = tiles.iter().map(|t| t - 1).sum::<i64>() as usize + 1;
    let mut by_wave: Vec<Vec<[i64; N]>> = vec![Vec::new(); waves];
    let mut t = [0i64; N];
    'all: loop {
        by_wave[t.iter().sum::<i64>() as usize].push(t);
        for a in (0..N).rev() {
            t[a] += 1;
            if t[a] < tiles[a] {
                continue 'all;
            }
            t[a] = 0;
        }
        break;
    }
    for wave in &by_wave {
        wave.par_iter().for_each(|t| {
            let lo = t.map(|ti| ti * tile);
            let hi = lo.map(|l| l + tile);
            walk.run_box::<S, T>(shared, fields, params, lo, hi);
        });
    }
}

/// One sweep of a sweep stencil in place: the rayon wavefront for `Wavefront { tile }`, the
/// sequential sweep in declared order otherwise (the same values). `fields` holds every
/// field in declaration order; the unknown's entry is not read.
pub(crate) fn once<S: Stencil<N>, T: Real, const N: usize>(
    layout: &Layout<N>,
    u: &mut [T],
    fields: &[&[T]],
    params: &S::Params<T>,
    schedule: Schedule,
) {
    match schedule {
        Schedule::Wavefront { tile } => wavefront::<S, T, N>(layout, u, fields, params, tile),
        _ => sequential::<S, T, N>(layout, u, fields, params),
    }
}

/// Sweeps interior `planes` (of axis 0) of `u`, a grid of `shape`, in place with `S`, whose
/// read-only fields are `inputs` (`None` at the unknown) over the same grid.
pub(crate) fn planes<S: Stencil<N>, T: Real, const N: usize>(
    u: &mut [T],
    shape: [usize; N],
    inputs: &[Option<&[T]>],
    params: &S::Params<T>,
    schedule: Schedule,
    planes: Range<usize>,
) -> Result<()> {
    if planes.is_empty() {
        return Ok(());
    }
    // The planes and the `r` around them, seen as a grid whose interior is `planes`.
    let r = S::META.radius[0];
    let plane_len: usize = shape[1..].iter().product();
    let elements = (planes.start - r) * plane_len..(planes.end + r) * plane_len;
    let mut window = shape;
    window[0] = planes.len() + 2 * r;
    let layout = Layout::new(S::META, window)?;
    let fields: Vec<&[T]> = inputs.iter().map(|f| f.map_or(&[][..], |f| &f[elements.clone()])).collect();
    once::<S, T, N>(&layout, &mut u[elements], &fields, params, schedule);
    Ok(())
}
