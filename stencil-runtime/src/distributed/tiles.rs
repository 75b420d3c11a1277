//! The inexact hierarchical schedule across ranks: the whole grid's tiles, computed where
//! they are needed.
//!
//! Paper 003's inexact cycle computes values that depend on where its tiles fall (a tile's
//! subiterations read stale values at its working region's edge), so a rank cannot tile its
//! own planes on its own. Instead every rank computes the tiles one process would, placed
//! from the whole grid's interior, whose cores meet the planes it needs; a tile across a cut
//! is computed by both ranks from the same values. A cycle's tiles read up to `reach =
//! tile − 1 + halo` planes beyond the planes they must update, so `depth · radius` ghost
//! planes hold `⌊ghost / reach⌋` cycles between exchanges: cycle `j` of a phase of `m`
//! updates the tiles meeting the own planes widened by `(m − 1 − j) · reach`, and every
//! rank's own planes hold exactly the single-process iterate.
//!
//! A checked cycle measures ρ of the iterate it starts from (one plain application over the
//! own planes, reduced over the ranks) and looks for non-finite values in the iterate it
//! writes, as one process does.

use std::ops::Range;

use super::Halo;
use super::Subdomain;
use super::driver::{Engine, Planes, monitor_for, reduce_check};
use crate::report::StopReason;
use crate::solver::Job;
use crate::{Error, Real, Report, Result, Stencil};

/// Planes beyond those a cycle updates that it reads: `tile − 1 + halo` (a tile meeting them
/// may start `tile − 1` planes before them), or none for a stencil that does not read along
/// axis 0.
pub(crate) fn reach(radius: usize, tile: usize, halo: usize) -> usize {
    if radius == 0 { 0 } else { (tile - 1).saturating_add(halo) }
}

/// The whole grid's tiles along axis 0 for one rank: their cores start at the global
/// interior's first plane, every `tile` planes.
#[derive(Clone, Debug)]
struct Tiling {
    tile: usize,
    /// The global plane of local plane 0.
    origin: usize,
    /// The global interior along axis 0.
    interior: Range<usize>,
}

impl Tiling {
    /// The cores of the tiles that meet local `planes` (non-empty): local planes from a
    /// tile's edge to a tile's edge or the interior's end.
    fn cores(&self, planes: &Range<usize>) -> Range<usize> {
        let (start, end) = (planes.start + self.origin, planes.end + self.origin);
        let first = (start - self.interior.start) / self.tile;
        let last = (end - 1 - self.interior.start) / self.tile;
        let lo = self.interior.start + first * self.tile;
        let hi = (self.interior.start + (last + 1) * self.tile).min(self.interior.end);
        lo - self.origin..hi - self.origin
    }
}

/// Runs `job` (an inexact hierarchical schedule of tile `tile`, halo `halo` and `sub`
/// subiterations a cycle) on `engine` over this rank's planes.
pub(crate) fn iterate_tiles<S: Stencil<N>, T: Real, const N: usize, E: Engine<T>>(
    job: &mut Job<'_, '_, S, T, N>,
    sub: &Subdomain<'_, N>,
    mut engine: E,
    (send, recv): (&mut Halo<T>, &mut Halo<T>),
    (backend, (tile, halo, subiterations)): (String, (usize, usize, usize)),
) -> Result<Report> {
    let planes = Planes::of(sub);
    let mpi = sub.mpi();
    let stop = job.stop;
    let mut monitor = monitor_for(job, sub)?;
    let (r, own) = (planes.radius, planes.own.clone());
    let reach = reach(r, tile, halo);
    // Cycles between exchanges (at least one: checked when the run is prepared).
    let per_phase = planes.ghost.checked_div(reach).map_or(usize::MAX, |cycles| cycles.max(1));
    let tiling = Tiling { tile, origin: sub.local().start, interior: r..sub.global_shape()[0] - r };
    let neighbours = (planes.below, planes.above);
    let exchange = |engine: &mut E, send: &mut Halo<T>, recv: &mut Halo<T>| planes.exchange(mpi, engine, (send, recv));
    let mut iteration = 0;
    let mut in_phase = 0;
    let stop_reason = loop {
        let Some(plan) = stop.next_cycle(iteration, subiterations, false) else { break StopReason::IterationLimit };
        // The cycles after this one before the exchange (fewer at the end of the run).
        let mut left = 0;
        let mut at = iteration + plan.len;
        while reach > 0 && in_phase + 1 + left < per_phase {
            let Some(next) = stop.next_cycle(at, subiterations, false) else { break };
            at += next.len;
            left += 1;
        }
        let target = own.start.saturating_sub(left * reach).max(r)..(own.end + left * reach).min(planes.count - r);
        iteration += plan.len;
        let check = plan.measure_step.is_some();
        if check {
            // ρ of the iterate this cycle starts from, over the own planes; the cycle then
            // writes over what this update wrote.
            engine.update(own.clone(), 1, true)?;
        }
        in_phase += 1;
        let phase_over = left == 0;
        let cores = tiling.cores(&target);
        // The last cycle of a phase computes the tiles of the planes sent first, and the
        // exchange overlaps the rest (tiles write their cores only, so the parts are
        // independent) when the parts do not meet.
        let (sent_lower, sent_upper) = planes.sent();
        let lower = if sent_lower.is_empty() { cores.start..cores.start } else { tiling.cores(&sent_lower) };
        let upper = if sent_upper.is_empty() { cores.end..cores.end } else { tiling.cores(&sent_upper) };
        if phase_over && neighbours != (None, None) && lower.end <= upper.start {
            let (ghost_lower, ghost_upper) = planes.received();
            engine.inexact_cycle(lower.clone(), plan.len, check)?;
            engine.inexact_cycle(upper.clone(), plan.len, check)?;
            engine.mark()?;
            let middle = lower.end..upper.start;
            if E::QUEUED {
                engine.inexact_cycle(middle, plan.len, check)?;
                engine.stage(sent_lower, sent_upper, send, true)?;
                mpi.exchange(neighbours, send, recv, || Ok(()))?;
            } else {
                engine.stage(sent_lower, sent_upper, send, true)?;
                mpi.exchange(neighbours, send, recv, || engine.inexact_cycle(middle.clone(), plan.len, check))?;
            }
            engine.swap();
            engine.unstage(ghost_lower, ghost_upper, recv)?;
            in_phase = 0;
        } else {
            engine.inexact_cycle(cores, plan.len, check)?;
            engine.swap();
            if phase_over {
                exchange(&mut engine, send, recv)?;
                in_phase = 0;
            }
        }
        if !check {
            continue;
        }
        let d = engine.difference()?;
        let residual = match reduce_check(sub, d, |at| engine.value_at(at), (iteration, stop.check_every)) {
            Err(error @ Error::NonFinite { .. }) => {
                // Every rank has the error: the grid is left whole, ghost planes included.
                if !phase_over {
                    exchange(&mut engine, send, recv)?;
                }
                engine.finish()?;
                return Err(error);
            }
            other => other?,
        };
        if monitor.check(plan.record_at, Some(residual)) {
            if !phase_over {
                exchange(&mut engine, send, recv)?;
            }
            break StopReason::Converged;
        }
    };
    engine.wait()?;
    let wall = monitor.elapsed();
    engine.finish()?;
    Ok(monitor.into_report::<S, T, N>(backend, job.schedule, sub.global_shape(), (iteration, stop_reason), wall, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cores_start_at_the_whole_grids_tile_edges() {
        // Interior 1..40 of the whole grid, tiles of 8: cores from 1, 9, 17, 25 and 33 (to 40).
        let tiling = |origin| Tiling { tile: 8, origin, interior: 1..40 };
        // Local plane p is global p + 8.
        assert_eq!(tiling(8).cores(&(2..5)), 1..9);
        assert_eq!(tiling(8).cores(&(1..2)), 1..9);
        assert_eq!(tiling(8).cores(&(2..12)), 1..17);
        assert_eq!(tiling(8).cores(&(9..10)), 9..17);
        // The last core ends at the interior's end.
        assert_eq!(tiling(30).cores(&(5..8)), 3..10);
        // The first rank's local planes are global ones.
        assert_eq!(tiling(0).cores(&(1..3)), 1..9);
    }

    #[test]
    fn a_cycle_reads_a_tile_less_one_and_a_halo_beyond_its_planes() {
        assert_eq!(reach(1, 8, 2), 9);
        assert_eq!(reach(2, 1, 2), 2);
        assert_eq!(reach(0, 8, 2), 0);
    }
}
