//! The planes of the slowest axis that one process updates and exchanges: all the interior
//! in one process; under an MPI rank its own planes, the ghost planes around them and the
//! neighbours they come from.

use std::ops::Range;

use crate::{Real, Result};

/// The planes one process updates and exchanges, as local plane indices of axis 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Planes {
    /// Local planes along axis 0.
    pub count: usize,
    /// The stencil's radius along axis 0.
    pub radius: usize,
    /// Ghost planes per side (`depth · radius`; 0 in one process).
    pub ghost: usize,
    /// Whether the rank below and the rank above are across a periodic cut (the last rank
    /// below the first): those ghost planes are the grid's outer layer, one radius wide,
    /// and they are exchanged at every iteration.
    pub wraps: (bool, bool),
    /// Iterations between two exchanges (`usize::MAX` in one process: there are none).
    pub depth: usize,
    /// The planes this process owns: the interior in one process.
    pub own: Range<usize>,
    /// The rank below and the rank above, if any.
    pub below: Option<usize>,
    pub above: Option<usize>,
    /// The global plane of local plane 0.
    pub origin: usize,
}

impl Planes {
    /// One process's planes: the interior of `count` planes, no neighbour.
    pub fn whole(count: usize, radius: usize) -> Self {
        Self {
            count,
            radius,
            ghost: 0,
            wraps: (false, false),
            depth: usize::MAX,
            own: radius..count - radius,
            below: None,
            above: None,
            origin: 0,
        }
    }

    /// Whether the process has a neighbour to exchange planes with.
    pub fn has_neighbour(&self) -> bool {
        self.below.is_some() || self.above.is_some()
    }

    /// The neighbours (below, above).
    pub fn neighbours(&self) -> (Option<usize>, Option<usize>) {
        (self.below, self.above)
    }

    /// The planes iteration `left` iterations before the end of a phase updates: the own
    /// planes widened by `left · radius`, within the local interior.
    pub fn region(&self, left: usize) -> Range<usize> {
        let (r, margin) = (self.radius, left.saturating_mul(self.radius));
        self.own.start.saturating_sub(margin).max(r)..self.own.end.saturating_add(margin).min(self.count - r)
    }

    /// The ghost planes exchanged with the rank below and with the rank above: none without
    /// one, one radius across a periodic cut, else `ghost`.
    fn widths(&self) -> (usize, usize) {
        let width = |neighbour: Option<usize>, wraps: bool| match (neighbour, wraps) {
            (None, _) => 0,
            (Some(_), true) => self.radius,
            (Some(_), false) => self.ghost,
        };
        (width(self.below, self.wraps.0), width(self.above, self.wraps.1))
    }

    /// The own planes sent to the rank below and to the rank above (empty without one).
    pub fn sent(&self) -> (Range<usize>, Range<usize>) {
        let (own, (below, above)) = (&self.own, self.widths());
        (own.start..own.start + below, own.end - above..own.end)
    }

    /// The ghost planes received from below and from above (empty without a neighbour).
    pub fn received(&self) -> (Range<usize>, Range<usize>) {
        let (own, (below, above)) = (&self.own, self.widths());
        (own.start - below..own.start, own.end..own.end + above)
    }

    /// The own planes in three parts: those sent below, the middle, those sent above (the
    /// parts sent are updated first so that the exchange overlaps the middle's update).
    pub fn split(&self) -> [Range<usize>; 3] {
        let (lower, upper) = self.sent();
        let middle_start = lower.end.max(self.own.start);
        let upper_start = upper.start.max(middle_start);
        [lower.start..middle_start, middle_start..upper_start, upper_start..self.own.end]
    }

    /// The local planes of a process's part of the grid that one process would look at for
    /// a non-finite value: its own planes, and the boundary planes at the grid's ends.
    pub fn part(&self) -> Range<usize> {
        let start = if self.below.is_some() { self.own.start } else { 0 };
        let end = if self.above.is_some() { self.own.end } else { self.count };
        start..end
    }
}

/// Host buffers of one exchange: the planes on each side, sent or received.
#[derive(Debug, Default)]
pub(crate) struct Halo<T> {
    /// The planes on the side of the rank below.
    pub lower: Vec<T>,
    /// The planes on the side of the rank above.
    pub upper: Vec<T>,
}

impl<T: Real> Halo<T> {
    /// Buffers for the planes `planes` sends, `plane_len` values a plane.
    pub fn for_sent(planes: &Planes, plane_len: usize) -> Result<Self> {
        let (lower, upper) = Exchange::<T>::sides(planes, plane_len);
        let buffer = |len: usize| crate::memory::filled(len, T::ZERO, || "the exchange's buffers".into());
        Ok(Self { lower: buffer(lower)?, upper: buffer(upper)? })
    }
}

/// The host buffers of a run's exchanges: the planes it sends and those it receives.
#[derive(Debug, Default)]
pub(crate) struct Exchange<T> {
    pub send: Halo<T>,
    pub recv: Halo<T>,
}

impl<T: Real> Exchange<T> {
    /// Buffers for the exchanges of `planes`, `plane_len` values a plane (the planes received
    /// are as many as those sent).
    pub fn for_planes(planes: &Planes, plane_len: usize) -> Result<Self> {
        Ok(Self { send: Halo::for_sent(planes, plane_len)?, recv: Halo::for_sent(planes, plane_len)? })
    }

    /// The values of one exchange on the side of the rank below and of the rank above (sent
    /// and received alike), `plane_len` values a plane.
    pub fn sides(planes: &Planes, plane_len: usize) -> (usize, usize) {
        let (lower, upper) = planes.sent();
        (lower.len() * plane_len, upper.len() * plane_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_process_owns_the_interior_and_sends_nothing() {
        let planes = Planes::whole(10, 2);
        assert_eq!(planes.own, 2..8);
        assert_eq!(planes.region(usize::MAX), 2..8);
        assert_eq!(planes.sent(), (2..2, 8..8));
        assert_eq!(planes.split(), [2..2, 2..8, 8..8]);
        assert_eq!(planes.part(), 0..10);
        assert!(!planes.has_neighbour());
    }

    #[test]
    fn a_rank_sends_its_ghost_width_of_own_planes() {
        let planes = Planes {
            count: 16,
            radius: 1,
            ghost: 3,
            wraps: (false, false),
            depth: 3,
            own: 3..13,
            below: Some(0),
            above: Some(2),
            origin: 5,
        };
        assert_eq!(planes.sent(), (3..6, 10..13));
        assert_eq!(planes.received(), (0..3, 13..16));
        assert_eq!(planes.split(), [3..6, 6..10, 10..13]);
        assert_eq!(planes.region(2), 1..15);
        assert_eq!(planes.part(), 3..13);
    }
}
