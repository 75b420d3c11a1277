//! Sweep stencils: in one process a sweep of the whole interior; across ranks a pipeline
//! along the sweep's direction on the cut axis.
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
//!
//! Across a periodic cut of axis 0 the first rank of a sweep reads, below its own planes,
//! the last rank's top planes as the sweep before left them (one process's outer layer),
//! and the last rank reads above its own the first rank's bottom planes as the sweep before
//! left them. The two swap those planes at the start of every sweep ([`Pipeline::exchange_wraps`](pipeline::Pipeline::exchange_wraps)),
//! and the sweep's order treats them as the first and the last rank. The first rank then waits
//! for the last one to end the sweep before: the ranks sweep one after another.
//!
//! The same [`Pipeline`] runs a cycle of stencils in turn ([`Alternating`](crate::Alternating)
//! steps), each sweeping in its own direction. Which neighbour is earlier then changes from
//! sweep to sweep, so a rank sends its planes facing a neighbour after sweep k only when
//! that neighbour reads them as sweep k left them: it comes later in sweep k, or earlier in
//! sweep k + 1 ([`Cycle::sends`](pipeline::Cycle::sends)). Each rank works out the same rule for the other side
//! ([`Cycle::receives`](pipeline::Cycle::receives)), so the messages between two ranks pair up in order. A sweep with
//! nothing to send early and nothing to wait for (one the other way after one this way)
//! runs in one launch.

mod pipeline;

use super::drive::{Advance, Unit, reduce_check};
use super::jacobi::exchange;
use super::peers::{Peers, Place};
use crate::engine::{Difference, Engine};
use crate::plan::fill::{Edges, fill_plan};
use crate::plan::planes::{Exchange, Planes};
use crate::stop::StopRule;
use crate::{Boundaries, Direction, Grid, Real, Result, Tolerance};
use pipeline::Pipeline;

/// The most sweeps one unit of a run alone holds: between checks the engine may overlap
/// them.
const SWEEPS_A_UNIT: usize = 64;

/// Sweeps of one stencil, or of several in turn, on an engine: the pipeline across ranks,
/// one sweep of the whole interior in one process.
pub(crate) struct Swept<'p, P: Peers, E, T: Real, const N: usize> {
    pub engine: E,
    peers: &'p P,
    planes: Planes,
    stop: StopRule,
    global: [usize; N],
    pipeline: Pipeline<T>,
    halos: Exchange<T>,
    /// The sweeps done.
    swept: usize,
    measured: Option<Difference>,
}

impl<'p, P: Peers, E: Engine<T, N>, T: Real, const N: usize> Swept<'p, P, E, T, N> {
    /// Sweeps of `stencils` in turn (each sweeping axis 0 in its direction, of its radius
    /// there, at most the split's), on `engine` over `planes` (of a grid whose whole shape
    /// is `global`) under `stop`.
    pub fn new(
        engine: E,
        Place { peers, planes, global, .. }: Place<'p, P, N>,
        halos: Exchange<T>,
        stop: StopRule,
        stencils: &[(Direction, usize)],
    ) -> Result<Self> {
        let plane_len = global[1..].iter().product();
        let pipeline = Pipeline::new(&planes, stencils, plane_len);
        Ok(Self { engine, peers, planes, stop, global, pipeline, halos, swept: 0, measured: None })
    }

    /// These sweeps with the periodic and Neumann layers of `boundaries` (a stencil of
    /// radius `radius`) filled over the planes sent to the earlier neighbour, as one process
    /// fills them before the sweep that reads them (the engine fills the rest); across a
    /// periodic cut of axis 0 the ghost planes beyond it are then exchanged as the run starts
    /// (the reference ρ(u⁰) of a relative tolerance reads them; every sweep brings them
    /// again).
    pub fn with_boundaries(mut self, boundaries: &Boundaries<N>, radius: [usize; N]) -> Result<Self> {
        let mut shape = self.global;
        shape[0] = self.planes.radius;
        let copies = fill_plan(boundaries, radius, shape, Edges { low: false, high: false });
        self.pipeline.fill_sent(copies, shape.to_vec());
        self.pipeline.exchange_wraps(self.peers, &mut self.engine)?;
        Ok(self)
    }

    /// ρ of the current iterate over the own planes, by a measuring update (into the
    /// second buffer: the iterate does not change).
    fn residual(&mut self) -> Result<Difference> {
        self.engine.fill()?;
        self.engine.update(self.planes.own.clone(), 1, true)?;
        self.engine.difference()
    }
}

impl<P: Peers, E: Engine<T, N>, T: Real, const N: usize> Advance<T, N> for Swept<'_, P, E, T, N> {
    fn reference(&mut self) -> Result<Option<(f64, f64)>> {
        if !matches!(self.stop.tolerance, Some(Tolerance::Relative { .. })) {
            return Ok(None);
        }
        // The reference ρ(u⁰) is measured before the first sweep changes u.
        let d = self.residual()?;
        let (max, sum, _, _) = self.peers.reduce(d.max_abs, d.sum_sq, u64::MAX, 0.0);
        Ok(Some((max, sum.sqrt())))
    }

    fn advance(&mut self, iteration: usize) -> Result<Option<Unit>> {
        if self.stop.max_iterations.is_some_and(|max| iteration >= max) {
            return Ok(None);
        }
        let k = iteration + 1;
        self.engine.fill()?;
        // Alone, the sweeps up to the next check are one unit: the engine may overlap them.
        let k = match self.pipeline.alone() {
            Some(planes) => {
                let last =
                    (k..).take(SWEEPS_A_UNIT).find(|&j| self.stop.checks_at(j) || self.stop.max_iterations == Some(j));
                let last = last.unwrap_or(k + SWEEPS_A_UNIT - 1);
                self.engine.sweeps(0, planes, last + 1 - k)?;
                last
            }
            None => {
                self.pipeline.sweep(self.peers, k, &mut self.engine)?;
                k
            }
        };
        self.swept = k;
        if !self.stop.checks_at(k) {
            return Ok(Some(Unit { end: k, record_at: None, host_holds: !E::QUEUED }));
        }
        // Both sides of the own planes hold this sweep's values: the later neighbour's first
        // planes are received early.
        self.pipeline.settle(self.peers, k, &mut self.engine)?;
        self.measured = Some(match self.stop.tolerance {
            Some(_) => self.residual()?,
            None => {
                let (own, part) = (self.planes.own.clone(), self.planes.part());
                Difference { max_abs: 0.0, sum_sq: 0.0, first_non_finite: self.engine.find_non_finite(own, part)? }
            }
        });
        Ok(Some(Unit { end: k, record_at: Some(k), host_holds: !E::QUEUED }))
    }

    fn measured(&mut self, unit: &Unit) -> Result<Option<(f64, f64)>> {
        let d = self.measured.take().unwrap_or_default();
        let residual = reduce_check(
            self.peers,
            &self.planes,
            self.global,
            d,
            |at| self.engine.value_at(at),
            unit.end,
            self.stop.check_every,
        )?;
        Ok(self.stop.tolerance.is_some().then_some(residual))
    }

    fn settle(&mut self) -> Result<()> {
        Ok(())
    }

    fn host(&mut self) -> Result<&mut Grid<T, N>> {
        // A checkpoint or an observer sees the current iterate's outer layer.
        self.engine.fill()?;
        self.engine.host()
    }

    fn wait(&mut self) -> Result<()> {
        // Every ghost plane holds the last sweep: the later neighbour's first planes (unless
        // a check brought them), then every ghost plane, `depth · radius` a side.
        self.pipeline.settle(self.peers, self.swept, &mut self.engine)?;
        exchange(&mut self.engine, self.peers, &self.planes, &mut self.halos)?;
        self.engine.wait()
    }

    fn finish(&mut self) -> Result<()> {
        // The outer layer of the last iterate.
        self.engine.fill()?;
        self.engine.finish()
    }
}
