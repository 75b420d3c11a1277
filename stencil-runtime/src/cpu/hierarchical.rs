//! The CPU twin of [`Schedule::Hierarchical`](crate::Schedule::Hierarchical): one cycle of
//! `sub` Jacobi subiterations inside every tile's working region (paper 003; docs/references.md).
//!
//! The interior is cut into disjoint core tiles of `tile` points per axis (the last ones
//! clipped). A tile's working region is its core plus `halo` points on every side of each
//! axis the stencil reads along (clipped at the grid's edge, except on a periodic axis, where
//! it goes on past the edge: each point there stands for the interior point it wraps to). The
//! region is loaded from the current iterate; each subiteration updates the points of the
//! region at distance ≥ r (the stencil's radius on that axis) from the region's edge, then
//! sets the region's points in a Neumann outer layer from their mirror points, and the outer
//! ring keeps its loaded values; after the last subiteration the core is written to the next
//! iterate. The GPU kernel (`<name>_hier`) has the same partition, the same points and the
//! same operation order, so in exact mode both give the same bits.

use rayon::prelude::*;

use crate::engine::Difference;
use crate::plan::Layout;
use crate::plan::fill::CycleEdges;
use crate::{Real, Result, Stencil};

/// The shape of one cycle: tile edge, halo per axis, subiterations, and the planes of axis 0
/// whose cores its tiles cover.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cycle<const N: usize> {
    pub tile: usize,
    pub halo: [usize; N],
    pub sub: usize,
    /// `[lo, hi)` along axis 0: the interior in one process; under an MPI rank, the planes of
    /// the whole grid's tiles that it computes (starting at a tile's edge).
    pub cores0: (usize, usize),
    /// How the working regions meet the grid's edges (periodic and Neumann sides).
    pub edges: CycleEdges<N>,
}

impl<const N: usize> Cycle<N> {
    /// The cycle of `sub` subiterations with tiles of `tile` points and `halo` points of
    /// working region on every side of each axis with a nonzero radius (no stencil reads
    /// along the others, so a halo there would only cost memory), over the whole interior.
    ///
    /// A tile or halo beyond the grid's largest axis is lowered to it (as the GPU kernel
    /// does): the tiles and working regions are clipped to the grid anyway, so nothing
    /// computed changes, and the boxes' arithmetic cannot overflow.
    pub fn new(layout: &Layout<N>, tile: usize, halo: usize, sub: usize) -> Self {
        let largest = layout.shape.iter().copied().max().unwrap_or(1);
        let cores0 = (layout.radius[0], layout.shape[0] - layout.radius[0]);
        let halo = halo.min(largest);
        let halo = layout.radius.map(|r| if r == 0 { 0 } else { halo });
        Self { tile: tile.min(largest), halo, sub, cores0, edges: CycleEdges::default() }
    }

    /// Number of tiles per axis.
    pub fn tiles(&self, layout: &Layout<N>) -> [usize; N] {
        std::array::from_fn(|a| match a {
            0 => (self.cores0.1 - self.cores0.0).div_ceil(self.tile),
            _ => (layout.shape[a] - 2 * layout.radius[a]).div_ceil(self.tile),
        })
    }
}

/// The boxes of one tile, as `[lo, hi)` per axis in grid coordinates; a working region
/// may reach past the grid's edge on a periodic axis.
struct TileBoxes<const N: usize> {
    core: ([usize; N], [usize; N]),
    region: ([isize; N], [isize; N]),
}

fn tile_boxes<const N: usize>(layout: &Layout<N>, cycle: &Cycle<N>, tile: [usize; N]) -> TileBoxes<N> {
    let (n, r) = (layout.shape, layout.radius);
    let cores = |a: usize| if a == 0 { cycle.cores0 } else { (r[a], n[a] - r[a]) };
    let core_lo: [usize; N] = std::array::from_fn(|a| cores(a).0 + tile[a] * cycle.tile);
    let core_hi: [usize; N] = std::array::from_fn(|a| (core_lo[a] + cycle.tile).min(cores(a).1));
    // Grids and halos are far below isize::MAX (they are allocated).
    let lo = |a: usize| core_lo[a] as isize - cycle.halo[a] as isize;
    let hi = |a: usize| (core_hi[a] + cycle.halo[a]) as isize;
    let wrap = cycle.edges.wrap;
    TileBoxes {
        core: (core_lo, core_hi),
        region: (
            std::array::from_fn(|a| if wrap[a] { lo(a) } else { lo(a).max(0) }),
            std::array::from_fn(|a| if wrap[a] { hi(a) } else { hi(a).min(n[a] as isize) }),
        ),
    }
}

/// The grid coordinate a working region's coordinate `x` on `axis` stands for: itself, or
/// on a wrapping axis the interior point it wraps to.
fn wrapped<const N: usize>(layout: &Layout<N>, edges: &CycleEdges<N>, axis: usize, x: isize) -> usize {
    let (n, r) = (layout.shape[axis] as isize, layout.radius[axis] as isize);
    if edges.wrap[axis] { (r + (x - r).rem_euclid(n - 2 * r)) as usize } else { x as usize }
}

/// The mirror point of a region point `at` that lies in a mirrored (Neumann) outer layer and
/// in no other outer layer, or `None`.
fn mirror_of<const N: usize>(layout: &Layout<N>, edges: &CycleEdges<N>, at: [isize; N]) -> Option<[isize; N]> {
    let mut source = at;
    let mut mirrored = false;
    for a in (0..N).filter(|&a| !edges.wrap[a]) {
        let (n, r, x) = (layout.shape[a] as isize, layout.radius[a] as isize, at[a]);
        let (low, high) = edges.mirror[a];
        if x < r {
            if !low {
                return None;
            }
            source[a] = 2 * r - 1 - x;
            mirrored = true;
        } else if x >= n - r {
            if !high {
                return None;
            }
            source[a] = 2 * (n - r) - 1 - x;
            mirrored = true;
        }
    }
    mirrored.then_some(source)
}

/// Calls `f` with every point of the box `[lo, hi)`, in memory order.
fn for_each_in_box<X, const N: usize>(lo: [X; N], hi: [X; N], mut f: impl FnMut([X; N]))
where
    X: Copy + PartialOrd + std::ops::AddAssign + From<u8>,
{
    if (0..N).any(|a| lo[a] >= hi[a]) {
        return;
    }
    let mut at = lo;
    loop {
        f(at);
        let mut axis = N;
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            at[axis] += X::from(1);
            if at[axis] < hi[axis] {
                break;
            }
            at[axis] = lo[axis];
        }
    }
}

/// The output grid, written by tiles in parallel at disjoint points (their cores).
struct DisjointWrites<T>(*mut T, usize);

// SAFETY: tiles write disjoint sets of indices (their cores partition the interior), each
// index is checked against the length, and nothing reads the slice while they write.
unsafe impl<T: Send> Send for DisjointWrites<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Send> Sync for DisjointWrites<T> {}

impl<T> DisjointWrites<T> {
    /// # Safety
    /// No other thread may write or read index `i` during the cycle.
    unsafe fn write(&self, i: usize, v: T) {
        assert!(i < self.1, "write outside the grid");
        // SAFETY: in bounds (checked above); exclusive per the caller's contract.
        unsafe { self.0.add(i).write(v) }
    }
}

/// One cycle from the current iterates (`fields` at the unknowns' places) into `targets`,
/// the next iterate of every unknown in declaration order, whose boundary layers already hold
/// the Dirichlet values. With `measure = Some(step)`, also returns ‖S(w) − w‖ over the cores
/// and every unknown, w being the working regions' values before subiteration `step` (for
/// step 0, and for any step of exact blocking, one plain application: see
/// `StopRule::next_cycle`), and the first non-finite value of the new iterates.
///
/// **Errors**: [`Error::OutOfMemory`](crate::Error::OutOfMemory) when a tile's working region cannot be allocated; the
/// current iterates are intact, `targets` partly written.
pub(crate) fn cycle<S: Stencil<N>, T: Real, const N: usize>(
    layout: &Layout<N>,
    cycle: &Cycle<N>,
    fields: &[&[T]],
    targets: Vec<&mut [T]>,
    params: &S::Params<T>,
    measure: Option<usize>,
) -> Result<Option<Difference>> {
    let tiles = cycle.tiles(layout);
    let count: usize = tiles.iter().product();
    let outs: Vec<DisjointWrites<T>> = targets.into_iter().map(|t| DisjointWrites(t.as_mut_ptr(), t.len())).collect();
    let outs = &outs[..];
    let difference = (0..count)
        .into_par_iter()
        .map(|t| {
            let mut index = [0usize; N];
            let mut rest = t;
            for a in (0..N).rev() {
                index[a] = rest % tiles[a];
                rest /= tiles[a];
            }
            one_tile::<S, T, N>(layout, cycle, fields, params, tile_boxes(layout, cycle, index), measure, outs)
        })
        .try_reduce(Difference::default, |a, b| Ok(a.merge(b)))?;
    Ok(measure.map(|_| difference))
}

/// A tile's working region of every unknown, twice (Jacobi ping-pong), local flat indices.
struct Regions<T> {
    current: Vec<Vec<T>>,
    next: Vec<Vec<T>>,
}

/// A tile's working region `[lo, hi)` in the grid's coordinates (beyond the grid on a
/// wrapping axis): the grid point each of its points stands for, and their local indices.
struct Region<'l, const N: usize> {
    layout: &'l Layout<N>,
    edges: CycleEdges<N>,
    lo: [isize; N],
    hi: [isize; N],
    strides: [usize; N],
}

impl<'l, const N: usize> Region<'l, N> {
    fn new(layout: &'l Layout<N>, edges: CycleEdges<N>, (lo, hi): ([isize; N], [isize; N])) -> Self {
        let mut strides = [1usize; N];
        for a in (0..N.saturating_sub(1)).rev() {
            strides[a] = strides[a + 1] * (hi[a + 1] - lo[a + 1]) as usize;
        }
        Self { layout, edges, lo, hi, strides }
    }

    fn width(&self) -> [usize; N] {
        std::array::from_fn(|a| (self.hi[a] - self.lo[a]) as usize)
    }

    /// The flat index of the grid point the region's point `at` stands for.
    fn global(&self, at: [isize; N]) -> usize {
        (0..N).map(|a| wrapped(self.layout, &self.edges, a, at[a]) * self.layout.strides[a]).sum()
    }

    /// The local index of the region's point `at`.
    fn local(&self, at: [isize; N]) -> usize {
        (0..N).map(|a| (at[a] - self.lo[a]) as usize * self.strides[a]).sum()
    }

    /// Every unknown's values over the region, from the current iterates in `fields`, twice.
    fn load<S: Stencil<N>, T: Real>(&self, fields: &[&[T]]) -> Result<Regions<T>> {
        let width = self.width();
        // At most the grid's size, or tile + 2 · halo per axis on a periodic one.
        let len: usize = width.iter().product();
        let what = || format!("a hierarchical tile's working region ({width:?} points)");
        let mut regions = Regions { current: Vec::new(), next: Vec::new() };
        for &field in S::META.unknowns {
            let mut current = crate::memory::with_capacity(len, what)?;
            for_each_in_box(self.lo, self.hi, |at| current.push(fields[field][self.global(at)]));
            // Points that are never updated keep their loaded values in both buffers.
            regions.next.push(crate::memory::copy_of(&current, what)?);
            regions.current.push(current);
        }
        Ok(regions)
    }

    /// The region's points in a Neumann outer layer, each with its mirror point (local).
    fn mirrored(&self) -> Vec<(usize, usize)> {
        let mut mirrored = Vec::new();
        if self.edges.any() {
            for_each_in_box(self.lo, self.hi, |at| {
                if let Some(source) = mirror_of(self.layout, &self.edges, at) {
                    mirrored.push((self.local(at), self.local(source)));
                }
            });
        }
        mirrored
    }
}

fn one_tile<S: Stencil<N>, T: Real, const N: usize>(
    layout: &Layout<N>,
    cycle: &Cycle<N>,
    fields: &[&[T]],
    params: &S::Params<T>,
    boxes: TileBoxes<N>,
    measure: Option<usize>,
    outs: &[DisjointWrites<T>],
) -> Result<Difference> {
    let meta = S::META;
    let region = Region::new(layout, cycle.edges, boxes.region);
    // Per read slot: the unknown it reads (its place in declaration order) or `None` for a
    // read-only field, the field, and its flat offset in the grid and in the working region.
    // A read-only field is read around the grid point the region point stands for, as one
    // plain iteration reads it there.
    let slots: Vec<(Option<usize>, usize, isize, isize)> = meta
        .reads
        .iter()
        .zip(&layout.reads)
        .map(|(read, &(field, flat))| {
            let local_flat = (0..N).map(|a| read.offset[a] as isize * region.strides[a] as isize).sum();
            (meta.unknowns.iter().position(|&u| u == field), field, flat, local_flat)
        })
        .collect();
    let mut regions = region.load::<S, T>(fields)?;
    let mirrored = region.mirrored();
    let r = |a: usize| layout.radius[a] as isize;
    let updated: ([isize; N], [isize; N]) =
        (std::array::from_fn(|a| region.lo[a] + r(a)), std::array::from_fn(|a| region.hi[a] - r(a)));
    let (core_lo, core_hi) = (boxes.core.0.map(|x| x as isize), boxes.core.1.map(|x| x as isize));
    let in_core = |at: [isize; N]| (0..N).all(|a| core_lo[a] <= at[a] && at[a] < core_hi[a]);

    let mut difference = Difference::default();
    let mut values = vec![T::ZERO; meta.unknowns.len()];
    for step in 0..cycle.sub {
        let Regions { current, next } = &mut regions;
        for_each_in_box(updated.0, updated.1, |at| {
            let (g, l) = (region.global(at), region.local(at));
            let load = |slot: usize| {
                let (unknown, field, flat, local_flat) = slots[slot];
                match unknown {
                    Some(k) => current[k][l.wrapping_add_signed(local_flat)],
                    None => fields[field][g.wrapping_add_signed(flat)],
                }
            };
            S::point_all(load, params, &mut values);
            for (k, &v) in values.iter().enumerate() {
                if measure == Some(step) && in_core(at) {
                    let d = (v - current[k][l]).to_f64();
                    difference.sum_sq += d * d;
                    difference.max_abs = difference.max_abs.max(d.abs());
                }
                next[k][l] = v;
            }
        });
        for next in next.iter_mut() {
            for &(to, from) in &mirrored {
                next[to] = next[from];
            }
        }
        std::mem::swap(&mut regions.current, &mut regions.next);
    }
    for_each_in_box(core_lo, core_hi, |at| {
        let g = region.global(at);
        for (current, out) in regions.current.iter().zip(outs) {
            let v = current[region.local(at)];
            if measure.is_some() && !v.is_finite() && difference.first_non_finite.is_none_or(|first| g < first) {
                difference.first_non_finite = Some(g);
            }
            // SAFETY: `at` is in this tile's core, and the cores of the tiles are disjoint.
            unsafe { out.write(g, v) };
        }
    });
    Ok(difference)
}
