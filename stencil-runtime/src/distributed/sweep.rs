//! Sweep stencils across ranks: a pipeline along the sweep's direction on the cut axis.
//!
//! A `sweep(…)` stencil updates in place in the declared order, so the sweep of a rank's
//! own planes reads the planes *before* them (on the side the sweep comes from) as this
//! sweep left them, and the planes *after* them as the previous sweep left them. No depth
//! of ghost planes can stand in for the first: one sweep carries influence through the
//! whole grid. So the ranks take their turn in the sweep's order, and overlap across
//! sweeps:
//!
//! 1. A rank receives the `radius` planes before its own, just swept by the *earlier*
//!    neighbour, and (from the sweep before) the `radius` planes after its own from the
//!    *later* neighbour.
//! 2. It sweeps its first `radius` planes, sends them to the earlier neighbour (which reads
//!    them in its next sweep) and sweeps the rest while the message travels.
//! 3. It sends its last `radius` planes to the later neighbour, which starts this sweep.
//!
//! Points in the sweep's order are all the earlier rank's, then all this rank's: the split
//! into first planes and the rest, and the split between ranks, keep that order, so every
//! rank's planes hold exactly the single-process sweep's values. While the later neighbour
//! sweeps sweep k, the earlier one already sweeps k + 1: with R ranks, R sweeps are in
//! flight at once, and each check (a reduction over every rank) drains the pipeline.
//!
//! At a check the later neighbour's first planes of the sweep just done are received
//! early (both sides of the own planes then hold this sweep's values) and S(u) − u is
//! measured over the own planes and reduced over all ranks, as one process measures it.
//! At the end, every ghost plane (all `depth · radius` a side) is exchanged once more, so
//! the rank's grid holds the last sweep everywhere.

use std::ops::Range;

use super::driver::{Engine, Planes};
use super::{Halo, Subdomain};
use crate::cpu::{Difference, Layout};
use crate::monitor::Monitor;
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
    /// The own planes swept first (sent to the earlier neighbour), the rest, and the last
    /// ones (sent to the later neighbour).
    first: Range<usize>,
    rest: Range<usize>,
    last: Range<usize>,
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
        match direction {
            Direction::Ascending => Self {
                earlier: planes.below,
                later: planes.above,
                rest: low.end..own.end,
                first: low,
                last: high,
                ghost_earlier: below,
                ghost_later: above,
            },
            Direction::Descending => Self {
                earlier: planes.above,
                later: planes.below,
                rest: own.start..high.start,
                first: high,
                last: low,
                ghost_earlier: above,
                ghost_later: below,
            },
        }
    }
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
    let global = Layout::new(S::META, sub.global_shape())?;
    let mut monitor = Monitor::for_job(job, global.interior_points());
    let direction = S::META.sweep.as_ref().expect("a sweep stencil").directions[0];
    let order = Order::new(&planes, direction);
    let own = planes.own.clone();
    let part =
        if planes.below.is_some() { own.start } else { 0 }..if planes.above.is_some() { own.end } else { planes.count };
    let message = vec![T::ZERO; planes.radius * sub.plane_len()];
    let (mut first_out, mut last_out, mut earlier_in, mut later_in) =
        (message.clone(), message.clone(), message.clone(), message);
    // The later neighbour's first planes of the sweep just done, received and written.
    let receive_later = |engine: &mut E, later_in: &mut [T]| -> Result<()> {
        let Some(later) = order.later else { return Ok(()) };
        mpi.post::<T>(&[], &mut [(later, &mut *later_in)], || Ok(()))?;
        engine.write(order.ghost_later.clone(), later_in)
    };
    let to_global = |at: usize| (at + sub.local().start * sub.plane_len()) as u64;
    if matches!(stop.tolerance, Some(Tolerance::Relative { .. })) {
        // The reference ρ(u⁰) is measured before the first sweep changes u.
        engine.update(own.clone(), 1, true)?;
        let d = engine.difference()?;
        let (max, sum, _, _) = mpi.reduce(d.max_abs, d.sum_sq, u64::MAX, 0.0);
        monitor.set_reference(max, sum.sqrt());
    }
    // Whether the later ghost planes hold the iterate the next sweep starts from (the
    // user's grid holds u⁰ there).
    let mut later_fresh = true;
    let mut iteration = 0;
    let ended: std::result::Result<StopReason, Error> = loop {
        if stop.max_iterations.is_some_and(|max| iteration >= max) {
            break Ok(StopReason::IterationLimit);
        }
        iteration += 1;
        // The planes this sweep reads from the neighbours.
        let fetch_later = !later_fresh && order.later.is_some();
        let mut receives = Vec::new();
        if let Some(earlier) = order.earlier {
            receives.push((earlier, &mut earlier_in[..]));
        }
        if let (true, Some(later)) = (fetch_later, order.later) {
            receives.push((later, &mut later_in[..]));
        }
        if !receives.is_empty() {
            mpi.post::<T>(&[], &mut receives, || Ok(()))?;
        }
        if order.earlier.is_some() {
            engine.write(order.ghost_earlier.clone(), &earlier_in)?;
        }
        if fetch_later {
            engine.write(order.ghost_later.clone(), &later_in)?;
        }
        later_fresh = false;
        // The first planes go back to the earlier neighbour while the rest is swept.
        engine.sweep(order.first.clone())?;
        match order.earlier {
            Some(earlier) => {
                engine.read(order.first.clone(), &mut first_out)?;
                mpi.post(&[(earlier, &first_out[..])], &mut [], || engine.sweep(order.rest.clone()))?;
            }
            None => engine.sweep(order.rest.clone())?,
        }
        if let Some(later) = order.later {
            engine.read(order.last.clone(), &mut last_out)?;
            mpi.post(&[(later, &last_out[..])], &mut [], || Ok(()))?;
        }
        if !stop.checks_at(iteration) {
            continue;
        }
        receive_later(&mut engine, &mut later_in)?;
        later_fresh = true;
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
        let local_bad = d.first_non_finite;
        let bad_value = local_bad.map(|at| engine.value_at(at)).transpose()?.unwrap_or(0.0);
        let (max, sum, bad, value) = mpi.reduce(d.max_abs, d.sum_sq, local_bad.map_or(u64::MAX, to_global), bad_value);
        if bad != u64::MAX {
            break Err(Error::NonFinite {
                iteration,
                index: crate::grid::unflatten(sub.global_shape(), bad as usize).to_vec(),
                value,
                check_every: stop.check_every,
            });
        }
        if monitor.check(iteration, stop.tolerance.is_some().then(|| (max, sum.sqrt()))) {
            break Ok(StopReason::Converged);
        }
    };
    // Every ghost plane holds the last sweep: the later neighbour's first planes (unless a
    // check brought them), then every ghost plane, `depth · radius` a side.
    if !later_fresh {
        receive_later(&mut engine, &mut later_in)?;
    }
    let neighbours = (planes.below, planes.above);
    if neighbours != (None, None) {
        let ((sent_lower, sent_upper), (ghost_lower, ghost_upper)) = (planes.sent(), planes.received());
        engine.stage(sent_lower, sent_upper, send, false)?;
        mpi.exchange(neighbours, send, recv, || Ok(()))?;
        engine.unstage(ghost_lower, ghost_upper, recv)?;
    }
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
        assert_eq!((up.first, up.rest, up.last), (4..6, 6..11, 9..11));
        assert_eq!((up.ghost_earlier, up.ghost_later), (2..4, 11..13));
        let down = Order::new(&middle, Direction::Descending);
        assert_eq!((down.earlier, down.later), (Some(2), Some(0)));
        assert_eq!((down.first, down.rest, down.last), (9..11, 4..9, 4..6));
        assert_eq!((down.ghost_earlier, down.ghost_later), (11..13, 2..4));
    }

    #[test]
    fn a_lone_rank_with_fewer_planes_than_the_radius_sweeps_them_once() {
        let lone = planes(2..3, 5, None, None);
        for direction in [Direction::Ascending, Direction::Descending] {
            let order = Order::new(&lone, direction);
            assert_eq!(order.first, 2..3);
            assert!(order.rest.is_empty());
        }
    }
}
