//! Sweep stencils across ranks: a pipeline along the sweep's direction on the cut axis.
//!
//! A `sweep(…)` stencil updates in place in the declared order, so the sweep of a rank's
//! own planes reads the planes *before* them (on the side the sweep comes from) as this
//! sweep left them, and the planes *after* them as the previous sweep left them. No depth
//! of ghost planes can stand in for the first: one sweep carries influence through the
//! whole grid. So the ranks take their turn in the sweep's order, and overlap across
//! sweeps. In each sweep a rank
//!
//! 1. receives the `radius` planes before its own, just swept by the *earlier* neighbour;
//! 2. sweeps its first `radius` planes and sends them to the earlier neighbour (which reads
//!    them at the end of its next sweep), and sweeps its middle planes while they travel;
//! 3. receives the `radius` planes after its own from the *later* neighbour (its first
//!    planes of the previous sweep, sent long before), sweeps its last planes and sends
//!    them to the later neighbour, which then starts this sweep.
//!
//! Points in the sweep's order are all the earlier rank's, then all this rank's, and a
//! rank's first, middle and last planes come in that order too, so every rank's planes hold
//! exactly the single-process sweep's values. Only the earlier neighbour's planes are
//! waited for at the start of a sweep: while the later neighbour sweeps sweep k, a rank
//! already sweeps k + 1, so R ranks have R sweeps in flight, and a sweep costs about one
//! rank's part plus one message. Each check (a reduction over every rank) drains the
//! pipeline.
//!
//! At a check the later neighbour's first planes of the sweep just done are received
//! early (both sides of the own planes then hold this sweep's values) and S(u) − u is
//! measured over the own planes and reduced over all ranks, as one process measures it.
//! At the end, every ghost plane (all `depth · radius` a side) is exchanged once more, so
//! the rank's grid holds the last sweep everywhere.

use std::ops::Range;

use super::driver::{Engine, Planes, monitor_for, reduce_check};
use super::{Halo, Subdomain};
use crate::cpu::Difference;
use crate::report::StopReason;
use crate::solver::Job;
use crate::{Direction, Error, Real, Report, Result, Stencil, Tolerance};

/// A rank's grid on one backend, swept in place: what [`iterate_sweeps`] needs beyond an
/// [`Engine`] (whose measuring `update` gives the residual and whose `stage`/`unstage` the
/// final exchange).
pub(crate) trait SweepEngine<T: Real>: Engine<T> {
    /// Sweeps local interior `planes` of the current iterate in place, in the stencil's
    /// declared order, reading the planes around them as they are.
    fn sweep(&mut self, planes: Range<usize>) -> Result<()>;

    /// Copies `planes` of the current iterate into `into`, and waits until they are there.
    fn read(&mut self, planes: Range<usize>, into: &mut [T]) -> Result<()>;

    /// Copies `from` into `planes` of the current iterate, before any later sweep.
    fn write(&mut self, planes: Range<usize>, from: &[T]) -> Result<()>;

    /// A check without a tolerance: the first non-finite value (local flat index) where a
    /// single-process run on this backend looks, among the rank's `part` (its own planes and
    /// the boundary planes at its ends) or, measured, its `own` planes.
    fn find_non_finite(&mut self, own: Range<usize>, part: Range<usize>) -> Result<Option<usize>>;
}

/// One rank's planes in the order its sweep visits them along axis 0.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Order {
    /// The neighbour whose planes the sweep reaches first, and the one it reaches last.
    earlier: Option<usize>,
    later: Option<usize>,
    /// The own planes swept first, in the middle and last. The first read the earlier
    /// ghost planes and the last the later ones. A rank of fewer than 2 · radius own
    /// planes sweeps them all first (they reach both sides); without an earlier (later)
    /// neighbour the middle planes are swept with the first (last) ones.
    first: Range<usize>,
    middle: Range<usize>,
    last: Range<usize>,
    /// The own planes sent to the earlier and to the later neighbour (`radius` each).
    to_earlier: Range<usize>,
    to_later: Range<usize>,
    /// The `radius` planes beyond the own ones on each side.
    ghost_earlier: Range<usize>,
    ghost_later: Range<usize>,
}

impl Order {
    fn new(planes: &Planes, direction: Direction) -> Self {
        let (own, r) = (planes.own.clone(), planes.radius);
        // A lone rank may own fewer than `radius` planes.
        let low = own.start..(own.start + r).min(own.end);
        let high = own.end.saturating_sub(r).max(own.start)..own.end;
        let (below, above) = (own.start - r..own.start, own.end..own.end + r);
        let split = own.len() >= 2 * r;
        let (earlier, later) = match direction {
            Direction::Ascending => (planes.below, planes.above),
            Direction::Descending => (planes.above, planes.below),
        };
        let none = own.end..own.end;
        let hull = |a: &Range<usize>, b: &Range<usize>| a.start.min(b.start)..a.end.max(b.end);
        let (first, middle, last) = match (split, direction) {
            (false, _) => (own.clone(), none.clone(), none.clone()),
            (true, Direction::Ascending) => (low.clone(), low.end..high.start, high.clone()),
            (true, Direction::Descending) => (high.clone(), low.end..high.start, low.clone()),
        };
        // Planes no neighbour waits for are swept with their neighbours, in one launch.
        let (first, middle, last) = match (earlier, later) {
            _ if !split => (first, middle, last),
            (None, None) => (own.clone(), none.clone(), none),
            (None, Some(_)) => (hull(&first, &middle), none, last),
            (Some(_), None) => (first, none, hull(&middle, &last)),
            (Some(_), Some(_)) => (first, middle, last),
        };
        match direction {
            Direction::Ascending => Self {
                earlier,
                later,
                first,
                middle,
                last,
                to_earlier: low,
                to_later: high,
                ghost_earlier: below,
                ghost_later: above,
            },
            Direction::Descending => Self {
                earlier,
                later,
                first,
                middle,
                last,
                to_earlier: high,
                to_later: low,
                ghost_earlier: above,
                ghost_later: below,
            },
        }
    }

    /// Whether the first planes read the later ghost planes.
    fn first_reads_later(&self) -> bool {
        self.last.is_empty()
    }
}

/// The later neighbour's first planes of each of its sweeps, received in order into the
/// later ghost planes, and the buffer they arrive in.
struct Later<'b, T> {
    /// How many have been received: the ghost planes hold the later neighbour's planes
    /// after that many sweeps (u⁰, the user's grid, for none).
    received: usize,
    buffer: &'b mut [T],
}

impl<T: Real> Later<'_, T> {
    /// Makes the later ghost planes hold the later neighbour's planes after `sweeps` sweeps
    /// (at most one more than they hold).
    fn fetch(
        &mut self,
        sweeps: usize,
        (mpi, order): (&super::Mpi, &Order),
        engine: &mut impl SweepEngine<T>,
    ) -> Result<()> {
        let Some(later) = order.later.filter(|_| self.received < sweeps) else { return Ok(()) };
        debug_assert_eq!(self.received + 1, sweeps, "the later neighbour's planes are fetched one sweep at a time");
        mpi.post::<T>(&[], &mut [(later, &mut *self.buffer)], || Ok(()))?;
        engine.write(order.ghost_later.clone(), self.buffer)?;
        self.received = sweeps;
        Ok(())
    }
}

/// The rest of sweep `sweep` (counted from 1) after its first planes: the middle planes,
/// the later neighbour's planes, the last planes, and the last planes sent on.
fn finish_sweep<T: Real>(
    (mpi, order, sweep): (&super::Mpi, &Order, usize),
    engine: &mut impl SweepEngine<T>,
    later: &mut Later<'_, T>,
    out: &mut [T],
) -> Result<()> {
    engine.sweep(order.middle.clone())?;
    later.fetch(sweep - 1, (mpi, order), engine)?;
    engine.sweep(order.last.clone())?;
    let Some(to) = order.later else { return Ok(()) };
    engine.read(order.to_later.clone(), out)?;
    mpi.post(&[(to, &*out)], &mut [], || Ok(()))
}

/// Runs `job`, a sweep stencil's, on `engine` over this rank's planes by the pipeline of
/// the module documentation. `send` and `recv` hold the ghost planes of the final exchange.
pub(crate) fn iterate_sweeps<S: Stencil<N>, T: Real, const N: usize, E: SweepEngine<T>>(
    job: &mut Job<'_, '_, S, T, N>,
    sub: &Subdomain<'_, N>,
    mut engine: E,
    (send, recv): (&mut Halo<T>, &mut Halo<T>),
    backend: String,
) -> Result<Report> {
    let planes = Planes::of(sub);
    let mpi = sub.mpi();
    let stop = job.stop;
    let mut monitor = monitor_for(job, sub)?;
    let direction = S::META.sweep.as_ref().expect("a sweep stencil").directions[0];
    let order = Order::new(&planes, direction);
    let own = planes.own.clone();
    let part =
        if planes.below.is_some() { own.start } else { 0 }..if planes.above.is_some() { own.end } else { planes.count };
    let message = vec![T::ZERO; planes.radius * sub.plane_len()];
    let (mut first_out, mut last_out, mut earlier_in, mut later_in) =
        (message.clone(), message.clone(), message.clone(), message);
    let mut later = Later { received: 0, buffer: &mut later_in };
    if matches!(stop.tolerance, Some(Tolerance::Relative { .. })) {
        // The reference ρ(u⁰) is measured before the first sweep changes u.
        engine.update(own.clone(), 1, true)?;
        let d = engine.difference()?;
        let (max, sum, _, _) = mpi.reduce(d.max_abs, d.sum_sq, u64::MAX, 0.0);
        monitor.set_reference(max, sum.sqrt());
    }
    let mut iteration = 0;
    let ended: std::result::Result<StopReason, Error> = loop {
        if stop.max_iterations.is_some_and(|max| iteration >= max) {
            break Ok(StopReason::IterationLimit);
        }
        iteration += 1;
        if let Some(earlier) = order.earlier {
            mpi.post::<T>(&[], &mut [(earlier, &mut earlier_in[..])], || Ok(()))?;
            engine.write(order.ghost_earlier.clone(), &earlier_in)?;
        }
        if order.first_reads_later() {
            later.fetch(iteration - 1, (mpi, &order), &mut engine)?;
        }
        engine.sweep(order.first.clone())?;
        match order.earlier {
            Some(earlier) => {
                // The first planes travel while the rest is swept.
                engine.read(order.to_earlier.clone(), &mut first_out)?;
                mpi.post(&[(earlier, &first_out[..])], &mut [], || {
                    finish_sweep((mpi, &order, iteration), &mut engine, &mut later, &mut last_out)
                })?;
            }
            None => finish_sweep((mpi, &order, iteration), &mut engine, &mut later, &mut last_out)?,
        }
        if !stop.checks_at(iteration) {
            continue;
        }
        later.fetch(iteration, (mpi, &order), &mut engine)?;
        let d = match stop.tolerance {
            Some(_) => {
                engine.update(own.clone(), 1, true)?;
                engine.difference()?
            }
            None => Difference {
                max_abs: 0.0,
                sum_sq: 0.0,
                first_non_finite: engine.find_non_finite(own.clone(), part.clone())?,
            },
        };
        let residual = match reduce_check(sub, d, |at| engine.value_at(at), (iteration, stop.check_every)) {
            Ok(residual) => residual,
            Err(error @ Error::NonFinite { .. }) => break Err(error),
            Err(error) => return Err(error),
        };
        if monitor.check(iteration, stop.tolerance.is_some().then_some(residual)) {
            break Ok(StopReason::Converged);
        }
    };
    // Every ghost plane holds the last sweep: the later neighbour's first planes (unless a
    // check brought them), then every ghost plane, `depth · radius` a side.
    later.fetch(iteration, (mpi, &order), &mut engine)?;
    planes.exchange(mpi, &mut engine, (send, recv))?;
    engine.wait()?;
    let wall = monitor.elapsed();
    engine.finish()?;
    let stop_reason = ended?;
    Ok(monitor.into_report::<S, T, N>(backend, job.schedule, sub.global_shape(), (iteration, stop_reason), wall, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planes(own: Range<usize>, count: usize, below: Option<usize>, above: Option<usize>) -> Planes {
        Planes { count, radius: 2, ghost: 4, depth: 2, own, below, above }
    }

    #[test]
    fn an_ascending_sweep_starts_below_and_a_descending_one_above() {
        let middle = planes(4..11, 15, Some(0), Some(2));
        let up = Order::new(&middle, Direction::Ascending);
        assert_eq!((up.earlier, up.later), (Some(0), Some(2)));
        assert!(!up.first_reads_later());
        assert_eq!((up.first, up.middle, up.last), (4..6, 6..9, 9..11));
        assert_eq!((up.to_earlier, up.to_later), (4..6, 9..11));
        assert_eq!((up.ghost_earlier, up.ghost_later), (2..4, 11..13));
        let down = Order::new(&middle, Direction::Descending);
        assert!(!down.first_reads_later());
        assert_eq!((down.earlier, down.later), (Some(2), Some(0)));
        assert_eq!((down.first, down.middle, down.last), (9..11, 6..9, 4..6));
        assert_eq!((down.to_earlier, down.to_later), (9..11, 4..6));
        assert_eq!((down.ghost_earlier, down.ghost_later), (11..13, 2..4));
    }

    #[test]
    fn planes_no_neighbour_waits_for_are_swept_with_the_middle() {
        let bottom = planes(2..9, 11, None, Some(1));
        let up = Order::new(&bottom, Direction::Ascending);
        assert_eq!((up.first, up.last, up.to_later), (2..7, 7..9, 7..9));
        assert!(up.middle.is_empty());
        let down = Order::new(&bottom, Direction::Descending);
        assert_eq!((down.first, down.last, down.to_earlier), (7..9, 2..7, 7..9));
        assert!(down.middle.is_empty());
        let lone = Order::new(&planes(2..9, 11, None, None), Direction::Ascending);
        assert_eq!(lone.first, 2..9);
        assert!(lone.middle.is_empty() && lone.last.is_empty());
    }

    #[test]
    fn fewer_than_two_radii_of_own_planes_are_swept_at_once() {
        let narrow = planes(4..7, 11, Some(0), Some(2));
        let up = Order::new(&narrow, Direction::Ascending);
        assert!(up.middle.is_empty() && up.last.is_empty() && up.first_reads_later());
        assert_eq!((up.first, up.to_earlier, up.to_later), (4..7, 4..6, 5..7));
        let lone = planes(2..3, 5, None, None);
        for direction in [Direction::Ascending, Direction::Descending] {
            let order = Order::new(&lone, direction);
            assert_eq!(order.first, 2..3);
            assert!(order.middle.is_empty() && order.last.is_empty());
        }
    }
}
