//! The boundary fill: the copies, slice by slice, that set a grid's periodic and Neumann
//! outer layers from its interior. Every backend runs the same copies in the same order,
//! so a filled grid is the same everywhere (copies are exact).

use std::ops::Range;

use crate::boundary::{Boundaries, Boundary};

/// `count` slices of `axis` (every point of the other axes, their outer layers included)
/// copied within one grid: slice `from + k·from_step` to slice `to + k·to_step`, k < count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FillCopy {
    pub axis: usize,
    pub from: usize,
    pub from_step: isize,
    pub to: usize,
    pub to_step: isize,
    pub count: usize,
}

impl FillCopy {
    /// The `k`-th slice copied: (from, to).
    pub fn slices(&self, k: usize) -> (usize, usize) {
        let at = |start: usize, step: isize| start.checked_add_signed(step * k as isize).expect("within the axis");
        (at(self.from, self.from_step), at(self.to, self.to_step))
    }
}

/// Which sides of axis 0 a grid's outer layer is on: all in one process; under an MPI rank
/// only the first rank's low side and the last rank's high side (the rest are ghost planes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Edges {
    pub low: bool,
    pub high: bool,
}

/// A run's boundary fill: its conditions on a grid of `shape` (radius `radius` per axis)
/// whose outer layers of axis 0 are where `edges` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fill<const N: usize> {
    pub boundaries: Boundaries<N>,
    pub radius: [usize; N],
    pub shape: [usize; N],
    pub edges: Edges,
}

impl<const N: usize> Fill<N> {
    /// The copies that fill the whole grid.
    pub fn whole(&self) -> Vec<FillCopy> {
        fill_plan(&self.boundaries, self.radius, self.shape, self.edges)
    }

    /// The copies that fill the planes `view` of axis 0 (an out-of-core slab's region), seen
    /// as a grid of their own: first the Neumann layers of axis 0 that the view holds, in
    /// part or whole, from their mirrors (which must be in the view), then the other axes'
    /// layers over the view's planes. Periodic layers of axis 0 are not filled here: a
    /// region does not hold the grid's other end.
    pub fn view(&self, view: &Range<usize>) -> Vec<FillCopy> {
        let mut shape = self.shape;
        shape[0] = view.len();
        let (r, n, b) = (self.radius[0], self.shape[0], &self.boundaries);
        let mut copies = Vec::new();
        if self.edges.low && b.low[0] == Boundary::Neumann && view.start < r {
            // Planes view.start..r: r − 1 − k ← r + k.
            let count = r - view.start;
            copies.push(FillCopy { axis: 0, from: r - view.start, from_step: 1, to: count - 1, to_step: -1, count });
        }
        if self.edges.high && b.high[0] == Boundary::Neumann && view.end > n - r {
            // Planes n − r..view.end: n − r + k ← n − r − 1 − k.
            let count = view.end - (n - r);
            let (from, to) = ((n - r - 1) - view.start, (n - r) - view.start);
            copies.push(FillCopy { axis: 0, from, from_step: -1, to, to_step: 1, count });
        }
        copies.extend(fill_plan(&self.boundaries, self.radius, shape, Edges { low: false, high: false }));
        copies
    }

    /// Whether any side is filled.
    pub fn any(&self) -> bool {
        !self.boundaries.is_dirichlet()
    }

    /// Whether the grid holds both ends of a periodic axis 0 (one process), so that a
    /// slab's planes there are the grid's other end.
    pub fn wraps_axis0(&self) -> bool {
        self.edges.low && self.edges.high && self.boundaries.is_periodic(0)
    }

    /// The copies that fill the periodic outer planes of axis 0 alone, when the grid holds
    /// both ends ([`wraps_axis0`](Self::wraps_axis0)); none otherwise.
    pub fn axis0_wrap(&self) -> Vec<FillCopy> {
        match self.wraps_axis0() {
            true => fill_plan(&Boundaries::default().axis(0, Boundary::Periodic), self.radius, self.shape, self.edges),
            false => Vec::new(),
        }
    }

    /// How a hierarchical cycle's working regions meet the edges of the planes `window` of
    /// axis 0 (seen as a grid of their own): a periodic axis wraps where the window holds both
    /// of its ends, and a Neumann side is mirrored where the window holds that outer layer.
    pub fn cycle_edges(&self, window: &Range<usize>) -> CycleEdges<N> {
        let b = &self.boundaries;
        let whole = window.start == 0 && window.end == self.shape[0];
        let holds = |axis: usize, low: bool| match axis {
            0 if low => self.edges.low && window.start == 0,
            0 => self.edges.high && window.end == self.shape[0],
            _ => true,
        };
        CycleEdges {
            wrap: std::array::from_fn(|a| {
                self.radius[a] > 0 && b.is_periodic(a) && (a > 0 || (whole && self.edges.low && self.edges.high))
            }),
            mirror: std::array::from_fn(|a| {
                let neumann =
                    |side: Boundary, low: bool| self.radius[a] > 0 && side == Boundary::Neumann && holds(a, low);
                (neumann(b.low[a], true), neumann(b.high[a], false))
            }),
        }
    }
}

/// How a hierarchical cycle's working regions meet a grid's edges, per axis (all `false`
/// for Dirichlet boundaries). A periodic axis has no edge: a region near one end goes on
/// past it, each point standing for the interior point it wraps to (the grid's outer layer
/// holds those values too). A Neumann side's outer layer in a region takes its mirror
/// points' values after every subiteration, as the fill does before every iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CycleEdges<const N: usize> {
    pub wrap: [bool; N],
    /// (low side, high side).
    pub mirror: [(bool, bool); N],
}

impl<const N: usize> Default for CycleEdges<N> {
    fn default() -> Self {
        Self { wrap: [false; N], mirror: [(false, false); N] }
    }
}

impl<const N: usize> CycleEdges<N> {
    /// Whether a cycle meets an edge other than a Dirichlet one.
    pub fn any(&self) -> bool {
        self.wrap.iter().any(|&w| w) || self.mirror.iter().any(|&(l, h)| l || h)
    }

    /// The kernels' flags per kernel axis (`axes`: the kernel axis of each grid axis):
    /// 1 wraps, 2 mirrors the low side, 4 the high side.
    pub fn flags(&self, axes: &[usize]) -> [i32; 3] {
        let mut flags = [0; 3];
        for (a, &k) in axes.iter().enumerate().take(N) {
            flags[k] = i32::from(self.wrap[a]) | i32::from(self.mirror[a].0) << 1 | i32::from(self.mirror[a].1) << 2;
        }
        flags
    }
}

/// The copies that fill the outer layers of a grid of `shape` (radius `radius` per axis)
/// under `boundaries`: axis by axis from the slowest, low side then high side, on the sides
/// of axis 0 that `edges` says the grid has. Empty when every side is Dirichlet.
pub(crate) fn fill_plan<const N: usize>(
    boundaries: &Boundaries<N>,
    radius: [usize; N],
    shape: [usize; N],
    edges: Edges,
) -> Vec<FillCopy> {
    let mut copies = Vec::new();
    for axis in 0..N {
        let (r, n) = (radius[axis], shape[axis]);
        if r == 0 {
            continue;
        }
        let has = |low: bool| axis > 0 || if low { edges.low } else { edges.high };
        let copy = |from, from_step, to, to_step| FillCopy { axis, from, from_step, to, to_step, count: r };
        match boundaries.low[axis] {
            _ if !has(true) => {}
            Boundary::Dirichlet => {}
            // [0, r) ← [n − 2r, n − r)
            Boundary::Periodic => copies.push(copy(n - 2 * r, 1, 0, 1)),
            // r − 1 − k ← r + k
            Boundary::Neumann => copies.push(copy(r, 1, r - 1, -1)),
        }
        match boundaries.high[axis] {
            _ if !has(false) => {}
            Boundary::Dirichlet => {}
            // [n − r, n) ← [r, 2r)
            Boundary::Periodic => copies.push(copy(r, 1, n - r, 1)),
            // n − r + k ← n − r − 1 − k
            Boundary::Neumann => copies.push(copy(n - r - 1, -1, n - r, 1)),
        }
    }
    copies
}

/// One axis of the boundary fill as a single launch runs it: the low outer slices
/// `[0, low)` take slice `low_from + low_step · x`, the high ones `[high, n)` slice
/// `high_from + high_step · x`. A fill's copies (at most one per axis and side, every slice
/// read an inner one) composed this way set each point of the outer layers to the value at
/// its coordinates mapped on every axis, which is what running them in order does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ShellMap {
    pub low: i64,
    pub low_from: i64,
    pub low_step: i64,
    pub high: i64,
    pub high_from: i64,
    pub high_step: i64,
}

impl ShellMap {
    /// An axis of `n` slices whose outer slices keep their values.
    pub fn keeping(n: usize) -> Self {
        Self { low: 0, low_from: 0, low_step: 1, high: n as i64, high_from: 0, high_step: 1 }
    }

    /// Adds `copy`, of an axis of `n` slices: the side of the slices it writes (the high one
    /// when they end the axis).
    pub fn add(&mut self, copy: &FillCopy, n: usize) -> Result<(), String> {
        if copy.count == 0 {
            return Ok(());
        }
        let (to, to_step) = (copy.to as i64, copy.to_step as i64);
        let last = to + (copy.count as i64 - 1) * to_step;
        let (first, end) = (to.min(last), to.max(last) + 1);
        // Slice t = to + k·to_step reads from + k·from_step = from − to·step + step·t.
        let step = copy.from_step as i64 * to_step;
        let from = copy.from as i64 - to * step;
        let n = n as i64;
        if end == n && self.high == n {
            (self.high, self.high_from, self.high_step) = (first, from, step);
        } else if first == 0 && self.low == 0 {
            (self.low, self.low_from, self.low_step) = (end, from, step);
        } else {
            return Err(format!("a boundary copy to slices {first}..{end} of {n} is not one outer layer"));
        }
        Ok(())
    }

    /// The map's values in the order of the boundary kernel's parameters.
    pub fn values(&self) -> [i64; 6] {
        [self.low, self.low_from, self.low_step, self.high, self.high_from, self.high_step]
    }

    /// `[low, high)` within `[0, n)`: the inner slices.
    fn inner(&self, n: usize) -> (usize, usize) {
        let low = self.low.clamp(0, n as i64) as usize;
        (low, (self.high.clamp(low as i64, n as i64)) as usize)
    }

    /// The points of a grid of `dims` that `maps` write: the boundary kernel's threads.
    pub fn points(maps: &[ShellMap; 3], dims: [usize; 3]) -> usize {
        let [(l0, h0), (l1, h1), (l2, h2)] = [0, 1, 2].map(|k| maps[k].inner(dims[k]));
        let outer = |k: usize, (l, h): (usize, usize)| l + dims[k] - h;
        outer(0, (l0, h0)) * dims[1] * dims[2]
            + (h0 - l0) * outer(1, (l1, h1)) * dims[2]
            + (h0 - l0) * (h1 - l1) * outer(2, (l2, h2))
    }

    /// Where coordinate `x` reads from.
    #[cfg(test)]
    fn source(&self, x: usize, n: usize) -> usize {
        let (low, high) = self.inner(n);
        let x = x as i64;
        let mapped = match x {
            _ if x < low as i64 => self.low_from + self.low_step * x,
            _ if x >= high as i64 => self.high_from + self.high_step * x,
            _ => x,
        };
        mapped as usize
    }
}

/// Runs `copies` on `grid` (a grid of `shape`, flat in row-major order): the reference
/// fill, which the CPU engine uses and every other backend equals.
pub(crate) fn fill<T: Copy, const N: usize>(grid: &mut [T], shape: [usize; N], copies: &[FillCopy]) {
    for copy in copies {
        let n = shape[copy.axis];
        let inner: usize = shape[copy.axis + 1..].iter().product();
        let outer: usize = shape[..copy.axis].iter().product();
        for k in 0..copy.count {
            let (from, to) = copy.slices(k);
            for o in 0..outer {
                let base = o * n * inner;
                grid.copy_within(base + from * inner..base + (from + 1) * inner, base + to * inner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::Side;

    const BOTH: Edges = Edges { low: true, high: true };

    /// The copies of every combination of conditions on a 3-D grid (whole and as slab
    /// views), run in order, equal one pass that reads each outer point from its mapped
    /// coordinates, as the boundary kernel does.
    #[test]
    fn the_copies_in_order_equal_one_pass_over_mapped_coordinates() {
        use crate::boundary::Side;
        let kinds = [Boundary::Dirichlet, Boundary::Periodic, Boundary::Neumann];
        let (shape, radius) = ([9, 7, 8], [2, 1, 2]);
        let grid: Vec<i64> = (0..shape.iter().product::<usize>() as i64).collect();
        let mut tried = 0;
        for code in 0..3usize.pow(6) {
            let mut b = Boundaries::<3>::default();
            for k in 0..6 {
                let side = if k % 2 == 0 { Side::Low } else { Side::High };
                b = b.side(k / 2, side, kinds[code / 3usize.pow(k as u32) % 3]);
            }
            if (0..3).any(|a| (b.low[a] == Boundary::Periodic) != (b.high[a] == Boundary::Periodic)) {
                continue;
            }
            let fill_of = Fill { boundaries: b, radius, shape, edges: BOTH };
            let views = [None, Some(0..5), Some(1..9), Some(3..7)];
            for view in views.into_iter().filter(|v| v.is_none() || !b.is_periodic(0)) {
                let (copies, range) = match &view {
                    None => (fill_of.whole(), 0..shape[0]),
                    Some(v) => (fill_of.view(v), v.clone()),
                };
                let dims = [range.len(), shape[1], shape[2]];
                let part = grid[range.start * shape[1] * shape[2]..range.end * shape[1] * shape[2]].to_vec();
                let mut expected = part.clone();
                fill(&mut expected, dims, &copies);
                let mut maps = dims.map(ShellMap::keeping);
                for copy in &copies {
                    maps[copy.axis].add(copy, dims[copy.axis]).unwrap();
                }
                let at = |x: [usize; 3]| (x[0] * dims[1] + x[1]) * dims[2] + x[2];
                let mut by_maps = part.clone();
                let mut written = 0;
                for x0 in 0..dims[0] {
                    for x1 in 0..dims[1] {
                        for x2 in 0..dims[2] {
                            let x = [x0, x1, x2];
                            let y = [0, 1, 2].map(|k| maps[k].source(x[k], dims[k]));
                            written += usize::from(x != y);
                            by_maps[at(x)] = part[at(y)];
                        }
                    }
                }
                assert_eq!(by_maps, expected, "{b} view {view:?}");
                assert_eq!(written, ShellMap::points(&maps, dims), "{b} view {view:?}");
                tried += 1;
            }
        }
        assert!(tried > 100, "{tried} cases");
    }

    #[test]
    fn periodic_layers_wrap_and_neumann_layers_mirror() {
        // 1-D, radius 2: interior 2..8 of 10 points.
        let grid: Vec<i32> = (0..10).collect();
        let mut periodic = grid.clone();
        fill(&mut periodic, [10], &fill_plan(&Boundaries::all(Boundary::Periodic), [2], [10], BOTH));
        assert_eq!(periodic, [6, 7, 2, 3, 4, 5, 6, 7, 2, 3]);
        let mut neumann = grid.clone();
        fill(&mut neumann, [10], &fill_plan(&Boundaries::all(Boundary::Neumann), [2], [10], BOTH));
        assert_eq!(neumann, [3, 2, 2, 3, 4, 5, 6, 7, 7, 6]);
        let mixed = Boundaries::all(Boundary::Neumann).side(0, Side::High, Boundary::Dirichlet);
        let mut mixed_grid = grid.clone();
        fill(&mut mixed_grid, [10], &fill_plan(&mixed, [2], [10], BOTH));
        assert_eq!(mixed_grid, [3, 2, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert!(fill_plan(&Boundaries::<1>::default(), [2], [10], BOTH).is_empty());
    }

    #[test]
    fn a_view_fills_the_part_of_a_neumann_layer_it_holds() {
        // 1-D, radius 2, 12 points: the outer planes 0, 1 and 10, 11.
        let fill = Fill {
            boundaries: Boundaries::all(Boundary::Neumann),
            radius: [2],
            shape: [12],
            edges: Edges { low: true, high: true },
        };
        let grid: Vec<i32> = (0..12).collect();
        for view in [0..12, 1..9, 0..6, 4..11, 5..12] {
            let mut part = grid[view.clone()].to_vec();
            super::fill(&mut part, [view.len()], &fill.view(&view));
            let mut whole = grid.clone();
            super::fill(&mut whole, [12], &fill.whole());
            assert_eq!(part, whole[view.clone()], "{view:?}");
        }
        // The periodic layers of axis 0 are left alone.
        let periodic = Fill { boundaries: Boundaries::all(Boundary::Periodic), ..fill };
        assert!(periodic.view(&(0..12)).is_empty());
    }

    #[test]
    fn corners_are_filled_from_filled_values_and_ranks_fill_only_their_edges() {
        // 2-D, radius 1, 4×5 with interior 2×3: the corner (0, 0) takes the wrapped corner
        // of the interior, (2, 3), through axis 0's fill of row 0 and then axis 1's.
        let shape = [4, 5];
        let mut grid: Vec<i32> = (0..20).collect();
        fill(&mut grid, shape, &fill_plan(&Boundaries::all(Boundary::Periodic), [1, 1], shape, BOTH));
        assert_eq!(grid[0], 2 * 5 + 3);
        assert_eq!(grid[..5], [13, 11, 12, 13, 11]);
        assert_eq!(grid[15..], [8, 6, 7, 8, 6]);
        // Under a middle rank, axis 0 has no outer layer: only axis 1 is filled.
        let plan = fill_plan(&Boundaries::all(Boundary::Periodic), [1, 1], shape, Edges { low: false, high: false });
        assert!(plan.iter().all(|c| c.axis == 1), "{plan:?}");
        // Radius 0 on an axis: nothing to fill there.
        assert!(fill_plan(&Boundaries::all(Boundary::Neumann), [0, 1], shape, BOTH).iter().all(|c| c.axis == 1));
    }
}
