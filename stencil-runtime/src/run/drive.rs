//! The one iteration loop. A schedule advances the run a unit at a time — an iteration, a
//! hierarchical cycle, an out-of-core pass, a sweep — on its engine and, in a distributed
//! run, with the other ranks ([`Advance`]); the loop does the rest the same way for all:
//! the checks and what they record, progress, checkpoints, convergence, non-finite values,
//! and the clock.

use crate::engine::Difference;
use crate::plan::planes::Planes;
use crate::report::StopReason;
use crate::run::job::Observer;
use crate::run::monitor::{Monitor, Ran};
use crate::run::peers::Peers;
use crate::{Error, Grid, Real, Result, Stencil};

/// One unit of work done by [`Advance::advance`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    /// The iteration the run is at after it.
    pub end: usize,
    /// For a checked unit, the iteration its residual is recorded at.
    pub record_at: Option<usize>,
    /// Whether the user's grid now holds iterate `end` (engines that update it in place).
    pub host_holds: bool,
}

/// How a schedule advances a run.
pub(crate) trait Advance<T: Real, const N: usize> {
    /// ρ(u⁰) in (L∞, L2), measured before the first unit, when a relative tolerance needs
    /// it and the units' own measurements come after the iterate has changed (sweeps).
    fn reference(&mut self) -> Result<Option<(f64, f64)>> {
        Ok(None)
    }

    /// Runs the unit of work after iteration `iteration`; `None` at the iteration limit.
    fn advance(&mut self, iteration: usize) -> Result<Option<Unit>>;

    /// The residual of a checked unit in (L∞, L2), over the whole grid (reduced over the
    /// ranks), or `None` when the check only looked for non-finite values; a non-finite
    /// value is [`Error::NonFinite`].
    fn measured(&mut self, unit: &Unit) -> Result<Option<(f64, f64)>>;

    /// After the loop stopped at a check (converged, or a non-finite value): leaves every
    /// plane of the grid holding the iterate checked (ghost planes included).
    fn settle(&mut self) -> Result<()>;

    /// The user's grid holding the current iterate, for a checkpoint.
    fn host(&mut self) -> Result<&mut Grid<T, N>>;

    /// The user's grids of every unknown holding the current iterate, for an observer.
    fn hosts(&mut self) -> Result<Vec<&Grid<T, N>>> {
        Ok(vec![&*self.host()?])
    }

    /// Waits for the work queued: the run's time stops here.
    fn wait(&mut self) -> Result<()>;

    /// Ends the run: the user's grid holds the last iterate.
    fn finish(&mut self) -> Result<()>;
}

/// Runs `advance` until the stopping rule the monitor watches holds, stencil `S` naming
/// the checkpoints, `observer` shown the iterates it asks for (its iterations are checked:
/// the stopping rule was built with its period). A non-finite value found by a check is
/// returned as the error after the grid holds the iterate it was found in.
pub(crate) fn drive<S: Stencil<N>, T: Real, const N: usize>(
    monitor: &mut Monitor<'_, '_>,
    advance: &mut impl Advance<T, N>,
    mut observer: Option<Observer<'_, '_, T, N>>,
) -> Result<Ran> {
    if let Some((max, l2)) = advance.reference()? {
        monitor.set_reference(max, l2);
    }
    let mut iteration = monitor.first_iteration();
    let ended = loop {
        let Some(unit) = advance.advance(iteration)? else { break Ok(StopReason::IterationLimit) };
        iteration = unit.end;
        if unit.host_holds {
            monitor.holds(iteration);
        }
        let Some(record_at) = unit.record_at else { continue };
        let measured = match advance.measured(&unit) {
            Ok(measured) => measured,
            Err(error @ Error::NonFinite { .. }) => {
                advance.settle()?;
                break Err(error);
            }
            Err(error) => return Err(error),
        };
        let converged = monitor.check_and_save::<S, T, N>(record_at, measured, iteration, || advance.hosts())?;
        if converged {
            advance.settle()?;
        }
        if let Some(observer) = observer.as_mut().filter(|o| iteration.is_multiple_of(o.every)) {
            let grids = monitor.copied_to_host(iteration, || advance.hosts())?;
            (observer.callback)(iteration, &grids);
        }
        if converged {
            break Ok(StopReason::Converged);
        }
    };
    advance.wait()?;
    let wall = monitor.elapsed();
    advance.finish()?;
    Ok(Ran { iterations: iteration, stop: ended?, wall })
}

/// Reduces a check's difference over every process, as one process measures it on the
/// whole grid of shape `global`: the residual's (L∞, L2), or [`Error::NonFinite`] at the
/// first non-finite value of the grid (`value_at` reads it, on the process that has it,
/// from a local flat index) found by the check after `iteration` (`check_every` apart).
pub(crate) fn reduce_check<const N: usize>(
    peers: &impl Peers,
    planes: &Planes,
    global: [usize; N],
    d: Difference,
    value_at: impl FnOnce(usize) -> Result<f64>,
    iteration: usize,
    check_every: usize,
) -> Result<(f64, f64)> {
    let local_bad = d.first_non_finite;
    let bad_value = local_bad.map(value_at).transpose()?.unwrap_or(0.0);
    let plane_len: usize = global[1..].iter().product();
    let to_global = |at: usize| (at + planes.origin * plane_len) as u64;
    let (max, sum, bad, value) = peers.reduce(d.max_abs, d.sum_sq, local_bad.map_or(u64::MAX, to_global), bad_value);
    if bad != u64::MAX {
        return Err(Error::NonFinite {
            iteration,
            index: crate::grid::unflatten(global, bad as usize).to_vec(),
            value,
            check_every,
        });
    }
    Ok((max, sum.sqrt()))
}
