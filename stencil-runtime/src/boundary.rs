//! Boundary conditions: what the outer layer of a grid (as wide as the stencil's radius on
//! each axis) holds when an iteration reads it.

use std::fmt;

use crate::{Error, Result, StencilMeta};

/// What the outer layer on one side of an axis holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Boundary {
    /// The values the grid was given, never written by a run (the default).
    #[default]
    Dirichlet,
    /// The axis wraps around: the layer holds the interior planes of the other side. Both
    /// sides of an axis are periodic, or neither.
    Periodic,
    /// Zero normal derivative: the layer mirrors the interior next to it, plane `r − 1 − k`
    /// holding plane `r + k` (and the same at the other side), for any radius `r`.
    Neumann,
}

/// One side of an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// Index 0 and up.
    Low,
    /// The last index and down.
    High,
}

/// The boundary conditions of an `N`-dimensional grid: one per side of every axis.
///
/// A run fills the outer layer of every periodic or Neumann side from the interior before
/// every iteration (and every sweep) that reads it, axis by axis from the slowest, each
/// fill covering the whole extent of the other axes (so corners are filled from filled
/// values), and once more after the last, so that the grid's outer layer matches its
/// interior. Dirichlet sides are never written.
///
/// ```
/// use stencil_runtime::{Boundaries, Boundary, Side};
/// // Periodic along axis 1, zero-flux walls on axis 0 but a fixed value at its far end.
/// let b = Boundaries::<2>::all(Boundary::Periodic)
///     .axis(0, Boundary::Neumann)
///     .side(0, Side::High, Boundary::Dirichlet);
/// assert_eq!(b.low, [Boundary::Neumann, Boundary::Periodic]);
/// assert_eq!(b.high, [Boundary::Dirichlet, Boundary::Periodic]);
/// assert!(!b.is_dirichlet());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Boundaries<const N: usize> {
    /// The condition at index 0 of each axis (slowest axis first).
    pub low: [Boundary; N],
    /// The condition at the last index of each axis.
    pub high: [Boundary; N],
}

impl<const N: usize> Default for Boundaries<N> {
    fn default() -> Self {
        Self::all(Boundary::Dirichlet)
    }
}

impl<const N: usize> From<Boundary> for Boundaries<N> {
    fn from(boundary: Boundary) -> Self {
        Self::all(boundary)
    }
}

impl<const N: usize> Boundaries<N> {
    /// `boundary` on every side of every axis.
    pub fn all(boundary: Boundary) -> Self {
        Self { low: [boundary; N], high: [boundary; N] }
    }

    /// These conditions with `boundary` on both sides of `axis`.
    ///
    /// **Panics** if `axis` is not below `N`.
    #[track_caller]
    pub fn axis(mut self, axis: usize, boundary: Boundary) -> Self {
        self.low[axis] = boundary;
        self.high[axis] = boundary;
        self
    }

    /// These conditions with `boundary` on `side` of `axis`.
    ///
    /// **Panics** if `axis` is not below `N`.
    #[track_caller]
    pub fn side(mut self, axis: usize, side: Side, boundary: Boundary) -> Self {
        match side {
            Side::Low => self.low[axis] = boundary,
            Side::High => self.high[axis] = boundary,
        }
        self
    }

    /// Whether every side is Dirichlet: a run then never writes the outer layer.
    pub fn is_dirichlet(&self) -> bool {
        self.low.iter().chain(&self.high).all(|&b| b == Boundary::Dirichlet)
    }

    /// Whether both sides of `axis` are periodic.
    pub fn is_periodic(&self, axis: usize) -> bool {
        self.low[axis] == Boundary::Periodic && self.high[axis] == Boundary::Periodic
    }

    /// Checks these conditions for stencil `meta` on a grid of `shape`: a periodic axis is
    /// periodic on both sides, and an axis filled from its interior has at least as many
    /// interior points as the stencil's radius on it (the planes a fill copies).
    ///
    /// **Errors**: [`Error::InvalidBoundary`].
    pub fn check(&self, meta: &StencilMeta, shape: [usize; N]) -> Result<()> {
        for (axis, &size) in shape.iter().enumerate() {
            let fail = |reason: String| Err(Error::InvalidBoundary { stencil: meta.name, axis, reason });
            let (low, high) = (self.low[axis], self.high[axis]);
            if (low == Boundary::Periodic) != (high == Boundary::Periodic) {
                return fail(format!(
                    "it is periodic on one side only ({low:?} below, {high:?} above): a periodic axis wraps \
                     around, so make both sides `Periodic`"
                ));
            }
            let radius = meta.radius[axis];
            let filled = low != Boundary::Dirichlet || high != Boundary::Dirichlet;
            let interior = size.saturating_sub(2 * radius);
            if filled && interior < radius {
                return fail(format!(
                    "its outer layer of {radius} points a side is filled from the interior, which has {interior}: \
                     the grid needs at least {} points on it",
                    3 * radius
                ));
            }
        }
        Ok(())
    }
}

impl fmt::Display for Boundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Boundary::Dirichlet => "dirichlet",
            Boundary::Periodic => "periodic",
            Boundary::Neumann => "neumann",
        })
    }
}

impl<const N: usize> fmt::Display for Boundaries<N> {
    /// `periodic` when every side has one condition, else each axis's low and high side
    /// (`[neumann/dirichlet, periodic]`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(&first) = self.low.first()
            && self.low.iter().chain(&self.high).all(|&b| b == first)
        {
            return first.fmt(f);
        }
        let axes: Vec<String> = (0..N)
            .map(|a| match (self.low[a], self.high[a]) {
                (l, h) if l == h => l.to_string(),
                (l, h) => format!("{l}/{h}"),
            })
            .collect();
        write!(f, "[{}]", axes.join(", "))
    }
}
