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
