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

use super::drive::{Advance, Unit, reduce_check};
use super::jacobi::{exchange, send_receive};
use super::peers::{Peers, Place};
use crate::engine::{CycleCheck, Engine};
use crate::plan::planes::{Exchange, Planes};
use crate::schedule::CycleSizes;
use crate::stop::StopRule;
use crate::{Grid, Real, Result};

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

/// Inexact hierarchical cycles of an engine across ranks.
pub(crate) struct Tiles<'p, P: Peers, E, T: Real, const N: usize> {
    pub engine: E,
    peers: &'p P,
    planes: Planes,
    stop: StopRule,
    global: [usize; N],
    halos: Exchange<T>,
    tiling: Tiling,
    sub: usize,
    reach: usize,
    /// Cycles between exchanges (at least one: checked when the run is prepared).
    per_phase: usize,
    in_phase: usize,
    /// The last cycle did not end its phase: an exchange is due before the grid is whole.
    pending: bool,
}

impl<'p, P: Peers, E: Engine<T, N>, T: Real, const N: usize> Tiles<'p, P, E, T, N> {
    /// Cycles of `sub` subiterations with tiles of `tile` and `halo`, on `engine` over
    /// `planes` (of a grid whose whole shape is `global`).
    pub fn new(
        engine: E,
        Place { peers, planes, global, .. }: Place<'p, P, N>,
        halos: Exchange<T>,
        stop: StopRule,
        sizes: CycleSizes,
    ) -> Result<Self> {
        let CycleSizes { tile, halo, sub } = sizes;
        let r = planes.radius;
        let reach = reach(r, tile, halo);
        let per_phase = planes.ghost.checked_div(reach).map_or(usize::MAX, |cycles| cycles.max(1));
        let tiling = Tiling { tile, origin: planes.origin, interior: r..global[0] - r };
        Ok(Self {
            engine,
            peers,
            planes,
            stop,
            global,
            halos,
            tiling,
            sub,
            reach,
            per_phase,
            in_phase: 0,
            pending: false,
        })
    }

    /// The cycles after the one planned from `iteration` (of `len`) before the exchange
    /// (fewer at the end of the run).
    fn cycles_left(&self, iteration: usize, len: usize) -> usize {
        let mut left = 0;
        let mut at = iteration + len;
        while self.reach > 0 && self.in_phase + 1 + left < self.per_phase {
            let Some(next) = self.stop.next_cycle(at, self.sub, false) else { break };
            at += next.len;
            left += 1;
        }
        left
    }

    /// The last cycle of a phase, split: the tiles of the planes sent first, and the
    /// exchange overlapping the rest (tiles write their cores only, so the parts are
    /// independent).
    fn split_cycle(&mut self, lower: Range<usize>, upper: Range<usize>, len: usize, check: CycleCheck) -> Result<()> {
        let Self { engine, peers, planes, halos: Exchange { send, recv }, .. } = self;
        let ((sent_lower, sent_upper), (ghost_lower, ghost_upper)) = (planes.sent(), planes.received());
        let neighbours = planes.neighbours();
        engine.inexact_cycle(lower.clone(), len, check)?;
        engine.inexact_cycle(upper.clone(), len, check)?;
        engine.mark()?;
        let middle = lower.end..upper.start;
        if E::QUEUED {
            engine.inexact_cycle(middle, len, check)?;
            engine.stage(sent_lower, sent_upper, send, true)?;
            send_receive(engine, *peers, neighbours, (send, recv), |_| Ok(()))?;
        } else {
            engine.stage(sent_lower, sent_upper, send, true)?;
            send_receive(engine, *peers, neighbours, (send, recv), |e| e.inexact_cycle(middle, len, check))?;
        }
        engine.swap();
        engine.unstage(ghost_lower, ghost_upper, recv)
    }
}

impl<P: Peers, E: Engine<T, N>, T: Real, const N: usize> Advance<T, N> for Tiles<'_, P, E, T, N> {
    fn advance(&mut self, iteration: usize) -> Result<Option<Unit>> {
        let Some(plan) = self.stop.next_cycle(iteration, self.sub, false) else { return Ok(None) };
        let left = self.cycles_left(iteration, plan.len);
        let (own, r, reach) = (self.planes.own.clone(), self.planes.radius, self.reach);
        let margin = left.saturating_mul(reach);
        let target = own.start.saturating_sub(margin).max(r)..own.end.saturating_add(margin).min(self.planes.count - r);
        let measure = plan.measure_step.is_some();
        // The outer layers of the iterate the cycle starts from (the ghost planes' too).
        self.engine.fill()?;
        if measure {
            // ρ of the iterate this cycle starts from, over the own planes; the cycle then
            // writes over what this update wrote.
            self.engine.update(own, 1, true)?;
        }
        let check = if measure { CycleCheck::NonFinite } else { CycleCheck::None };
        self.in_phase += 1;
        let phase_over = left == 0;
        let cores = self.tiling.cores(&target);
        let (sent_lower, sent_upper) = self.planes.sent();
        let lower = if sent_lower.is_empty() { cores.start..cores.start } else { self.tiling.cores(&sent_lower) };
        let upper = if sent_upper.is_empty() { cores.end..cores.end } else { self.tiling.cores(&sent_upper) };
        if phase_over && self.planes.has_neighbour() && lower.end <= upper.start {
            self.split_cycle(lower, upper, plan.len, check)?;
        } else {
            self.engine.inexact_cycle(cores, plan.len, check)?;
            self.engine.swap();
            if phase_over {
                exchange(&mut self.engine, self.peers, &self.planes, &mut self.halos)?;
            }
        }
        if phase_over {
            self.in_phase = 0;
        }
        self.pending = !phase_over;
        let end = iteration + plan.len;
        Ok(Some(Unit { end, record_at: measure.then_some(plan.record_at), host_holds: !E::QUEUED }))
    }

    fn measured(&mut self, unit: &Unit) -> Result<Option<(f64, f64)>> {
        let d = self.engine.difference()?;
        reduce_check(
            self.peers,
            &self.planes,
            self.global,
            d,
            |at| self.engine.value_at(at),
            unit.end,
            self.stop.check_every,
        )
        .map(Some)
    }

    fn settle(&mut self) -> Result<()> {
        if std::mem::take(&mut self.pending) {
            exchange(&mut self.engine, self.peers, &self.planes, &mut self.halos)?;
        }
        Ok(())
    }

    fn host(&mut self) -> Result<&mut Grid<T, N>> {
        // An observer sees the current iterate's outer layer.
        self.engine.fill()?;
        self.engine.host()
    }

    fn hosts(&mut self) -> Result<Vec<&Grid<T, N>>> {
        self.engine.fill()?;
        self.engine.hosts()
    }

    fn wait(&mut self) -> Result<()> {
        self.engine.wait()
    }

    fn finish(&mut self) -> Result<()> {
        // The outer layer of the last iterate.
        self.engine.fill()?;
        self.engine.finish()
    }
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
