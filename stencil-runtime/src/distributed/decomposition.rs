//! How a grid is cut into one subdomain per rank: pure arithmetic, no communication, so
//! that every rank computes the same cut and it can be tested without MPI.

use std::ops::Range;

use crate::{Error, Grid, Real, Result, Stencil};

/// The cut of a global grid into one subdomain per rank along the slowest axis, seen from
/// one rank.
///
/// The interior planes of axis 0 are split as evenly as possible (the first ranks get one
/// more plane when they do not divide evenly). A rank holds its own planes plus
/// `ghost() = depth · radius` planes on each side that touches another rank (its *local*
/// planes); on a side that touches the grid's edge it holds the boundary planes instead.
/// Ghost planes are exchanged once every `depth` iterations: between exchanges a rank
/// updates a region that shrinks by `radius` planes per iteration towards its own planes,
/// so its own planes always hold exactly the iterate of a single-process run (the
/// out-of-core pyramid, applied between ranks).
///
/// ```
/// use stencil_runtime::distributed::Decomposition;
///
/// // 3 ranks, a stencil of radius 1, ghost planes exchanged every 2 iterations.
/// let cut = Decomposition::new([23, 8, 8], 1, 2, 3, 1)?;
/// assert_eq!(cut.own(), 8..15); // the interior planes 1..22: 7 + 7 + 7
/// assert_eq!(cut.local(), 6..17); // and 2 ghost planes on each side
/// assert_eq!(cut.local_shape(), [11, 8, 8]);
/// # Ok::<(), stencil_runtime::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decomposition<const N: usize> {
    global: [usize; N],
    radius: usize,
    depth: usize,
    rank: usize,
    /// Every rank's own planes, in rank order.
    own: Vec<Range<usize>>,
}

impl<const N: usize> Decomposition<N> {
    /// The cut of a grid of `global` shape among `ranks` ranks, seen from `rank`, for a
    /// stencil of `radius` along axis 0 with ghost planes exchanged every `depth`
    /// iterations.
    ///
    /// **Errors** ([`Error::InvalidDecomposition`]): no rank, `rank` out of range, a depth
    /// of 0, a grid without interior planes, or (with more than one rank) a rank that would
    /// own fewer planes than the `depth · radius` ghost planes its neighbours need from it.
    pub fn new(global: [usize; N], radius: usize, depth: usize, ranks: usize, rank: usize) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidDecomposition { reason };
        if ranks == 0 || rank >= ranks {
            return Err(invalid(format!("rank {rank} of {ranks} ranks")));
        }
        if depth == 0 {
            return Err(invalid("the halo depth must be at least one iteration".into()));
        }
        if N == 0 || global.contains(&0) {
            return Err(invalid(format!("the grid's shape {global:?} has an empty axis")));
        }
        let planes = global[0];
        let interior = planes.saturating_sub(2 * radius);
        if interior == 0 {
            return Err(invalid(format!(
                "{planes} planes along axis 0 leave no interior plane for a stencil of radius {radius}"
            )));
        }
        let ghost = depth * radius;
        let (base, extra) = (interior / ranks, interior % ranks);
        if ranks > 1 && base < ghost.max(1) {
            return Err(invalid(format!(
                "{interior} interior planes among {ranks} ranks leave {base} planes to some rank, fewer than the \
                 {} ghost planes (depth {depth} × radius {radius}) that its neighbours read from it: use fewer ranks \
                 or a smaller depth",
                ghost.max(1)
            )));
        }
        let mut start = radius;
        let own = (0..ranks)
            .map(|k| {
                let len = base + usize::from(k < extra);
                start += len;
                start - len..start
            })
            .collect();
        Ok(Self { global, radius, depth, rank, own })
    }

    /// [`new`](Self::new) with the radius of stencil `S` along axis 0.
    pub fn for_stencil<S: Stencil<N>>(global: [usize; N], depth: usize, ranks: usize, rank: usize) -> Result<Self> {
        Self::new(global, S::META.radius[0], depth, ranks, rank)
    }

    /// The global grid's shape.
    pub fn global_shape(&self) -> [usize; N] {
        self.global
    }

    /// The stencil's radius along axis 0.
    pub fn radius(&self) -> usize {
        self.radius
    }

    /// Iterations between two exchanges of ghost planes.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Ghost planes per side: `depth · radius`.
    pub fn ghost(&self) -> usize {
        self.depth * self.radius
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.own.len()
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The global planes (of axis 0) that this rank owns and updates.
    pub fn own(&self) -> Range<usize> {
        self.own[self.rank].clone()
    }

    /// The global planes that rank `rank` owns.
    pub fn own_of(&self, rank: usize) -> Range<usize> {
        self.own[rank].clone()
    }

    /// The global planes this rank holds: its own, the ghost planes beside a neighbour, and
    /// the boundary planes at the grid's edges.
    pub fn local(&self) -> Range<usize> {
        self.local_of(self.rank)
    }

    /// The global planes rank `rank` holds.
    pub fn local_of(&self, rank: usize) -> Range<usize> {
        let own = &self.own[rank];
        let start = if rank == 0 { 0 } else { own.start - self.ghost() };
        let end = if rank + 1 == self.own.len() { self.global[0] } else { own.end + self.ghost() };
        start..end
    }

    /// The shape of this rank's grid: its local planes by the other axes.
    pub fn local_shape(&self) -> [usize; N] {
        let mut shape = self.global;
        shape[0] = self.local().len();
        shape
    }

    /// The neighbour below (holding lower planes), if any.
    pub fn below(&self) -> Option<usize> {
        self.rank.checked_sub(1)
    }

    /// The neighbour above, if any.
    pub fn above(&self) -> Option<usize> {
        (self.rank + 1 < self.own.len()).then_some(self.rank + 1)
    }

    /// The global index of a point of this rank's grid.
    pub fn global_index(&self, mut local: [usize; N]) -> [usize; N] {
        local[0] += self.local().start;
        local
    }

    /// This rank's own planes as a range of its local planes.
    pub fn own_local(&self) -> Range<usize> {
        let (own, start) = (self.own(), self.local().start);
        own.start - start..own.end - start
    }

    /// This rank's grid, with `f` evaluated at the global index of every point it holds: each
    /// rank builds only its part of a grid too large for one machine.
    pub fn local_grid<T: Real>(&self, f: impl Fn([usize; N]) -> T + Sync) -> Result<Grid<T, N>> {
        let start = self.local().start;
        Grid::from_fn(self.local_shape(), |mut index| {
            index[0] += start;
            f(index)
        })
    }

    /// This rank's part of a global grid (for problems small enough to build everywhere).
    ///
    /// **Errors**: [`Error::ShapeMismatch`] when `global` does not have the decomposed shape.
    pub fn local_part<T: Real>(&self, global: &Grid<T, N>) -> Result<Grid<T, N>> {
        if global.shape() != self.global {
            return Err(Error::ShapeMismatch {
                field: "the global grid".into(),
                expected: self.global.to_vec(),
                found: global.shape().to_vec(),
            });
        }
        let plane = self.plane_len();
        let local = self.local();
        let mut part = Grid::zeros(self.local_shape())?;
        part.as_mut_slice().copy_from_slice(&global.as_slice()[local.start * plane..local.end * plane]);
        Ok(part)
    }

    /// Elements in one plane of axis 0.
    pub fn plane_len(&self) -> usize {
        self.global[1..].iter().product()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_planes_tile_the_interior_and_local_planes_hold_the_ghosts() {
        for ranks in 1..=5 {
            for depth in 1..=3 {
                let Ok(first) = Decomposition::new([40, 3], 2, depth, ranks, 0) else {
                    assert!(36 / ranks < 2 * depth, "{ranks} ranks, depth {depth}");
                    continue;
                };
                assert_eq!(first.own_of(0).start, 2);
                assert_eq!(first.own_of(ranks - 1).end, 38);
                for k in 0..ranks {
                    let cut = Decomposition::new([40, 3], 2, depth, ranks, k).unwrap();
                    let (own, local) = (cut.own(), cut.local());
                    let sizes: Vec<_> = (0..ranks).map(|j| cut.own_of(j).len()).collect();
                    assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
                    if k > 0 {
                        assert_eq!(cut.own_of(k - 1).end, own.start);
                        assert_eq!(own.start - local.start, 2 * depth);
                        assert!(cut.own_of(k - 1).len() >= cut.ghost(), "a neighbour's ghosts come from one rank");
                    } else {
                        assert_eq!(local.start, 0);
                    }
                    if k + 1 < ranks {
                        assert_eq!(local.end - own.end, 2 * depth);
                    } else {
                        assert_eq!(local.end, 40);
                    }
                    assert_eq!(cut.local_shape(), [local.len(), 3]);
                    assert_eq!(cut.global_index([0, 1]), [local.start, 1]);
                }
            }
        }
    }

    #[test]
    fn a_cut_that_cannot_be_made_is_an_error() {
        let reason = |r: Result<Decomposition<3>>| match r {
            Err(Error::InvalidDecomposition { reason }) => reason,
            other => panic!("{other:?}"),
        };
        assert!(reason(Decomposition::new([10, 4, 4], 1, 4, 3, 0)).contains("fewer than the 4 ghost planes"));
        assert!(reason(Decomposition::new([10, 4, 4], 1, 0, 1, 0)).contains("depth"));
        assert!(reason(Decomposition::new([10, 4, 4], 1, 1, 2, 2)).contains("rank 2 of 2"));
        assert!(reason(Decomposition::new([2, 4, 4], 1, 1, 1, 0)).contains("no interior plane"));
        // One rank needs no ghost planes from anyone.
        assert_eq!(Decomposition::new([4, 4, 4], 1, 9, 1, 0).unwrap().local(), 0..4);
    }

    #[test]
    fn local_grids_are_the_global_grid_cut() {
        let global = Grid::<f64, 2>::from_fn([17, 5], |[i, j]| (i * 10 + j) as f64).unwrap();
        for rank in 0..3 {
            let cut = Decomposition::new([17, 5], 1, 2, 3, rank).unwrap();
            let built = cut.local_grid(|[i, j]| (i * 10 + j) as f64).unwrap();
            assert_eq!(built.as_slice(), cut.local_part(&global).unwrap().as_slice());
        }
    }
}
