//! Jacobi iterations: `Plain`, `Tiled` and hierarchical cycles.
//!
//! In one process a unit is what [`StopRule::next_cycle`] plans: one iteration, or a cycle
//! of subiterations that (exact) ends at the next check and measures in its last
//! subiteration, or (inexact, paper 003) keeps its length and measures ρ of the iterate it
//! starts from in its first.
//!
//! Across ranks, exact units run in *phases* of at most `depth` iterations between two
//! exchanges of ghost planes: each iteration of a phase updates a region that shrinks by
//! `radius` planes down to the rank's own planes, so that they hold exactly one process's
//! iterates; the exchange overlaps the last step's middle planes. A phase ends before the
//! next check, so that every check is the first iteration of a phase, a plain step whose
//! residual over the own planes is reduced over the ranks.

use super::drive::{Advance, Unit, reduce_check};
use super::peers::{Peers, Place};
use crate::engine::{CycleCheck, Engine};
use crate::plan::planes::{Exchange, Halo, Planes};
use crate::stop::{Residual, StopRule};
use crate::{Grid, Real, Result};

/// How a run's cycles relate to plain iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cycles {
    /// One iteration at a time (`Plain`, `Tiled`).
    None,
    /// Exact hierarchical cycles of at most this many iterations.
    Exact(usize),
    /// Paper 003's inexact cycles of this many subiterations, in one process.
    Inexact(usize),
}

/// The phase of a distributed run in progress.
#[derive(Clone, Copy, Debug)]
struct Phase {
    /// The iteration before its first.
    start: usize,
    len: usize,
    done: usize,
    check: bool,
}

/// Jacobi iterations of an engine, alone or across ranks.
pub(crate) struct Jacobi<'p, P: Peers, E, T: Real, const N: usize> {
    pub engine: E,
    peers: &'p P,
    planes: Planes,
    stop: StopRule,
    cycles: Cycles,
    global: [usize; N],
    halos: Exchange<T>,
    phase: Option<Phase>,
}

impl<'p, P: Peers, E: Engine<T, N>, T: Real, const N: usize> Jacobi<'p, P, E, T, N> {
    /// The iterations of `engine` over `planes` (of a grid whose whole shape is `global`)
    /// under `stop`, with `peers` for the exchanges, after a first exchange of ghost planes.
    pub fn new(
        engine: E,
        Place { peers, planes, global, .. }: Place<'p, P, N>,
        halos: Exchange<T>,
        stop: StopRule,
        cycles: Cycles,
    ) -> Result<Self> {
        let mut jacobi = Self { engine, peers, planes, stop, cycles, global, halos, phase: None };
        // The ghost planes of the first iterate from the ranks that own them: the planes the
        // rank was given there may differ, and across a periodic cut they are the outer layer.
        jacobi.exchange()?;
        if stop.residual == Residual::SinceLastCheck {
            jacobi.engine.keep_reference()?;
        }
        Ok(jacobi)
    }

    /// One process: a unit of `stop.next_cycle` over the whole interior.
    fn alone(&mut self, iteration: usize) -> Result<Option<Unit>> {
        let (sub, exact) = match self.cycles {
            Cycles::None => (1, true),
            Cycles::Exact(sub) => (sub, true),
            Cycles::Inexact(sub) => (sub, false),
        };
        let Some(plan) = self.stop.next_cycle(iteration, sub, exact) else { return Ok(None) };
        let own = self.planes.own.clone();
        let measure = plan.measure_step.is_some();
        self.engine.fill()?;
        match self.cycles {
            Cycles::Inexact(_) => {
                let check = if measure { CycleCheck::Residual } else { CycleCheck::None };
                self.engine.inexact_cycle(own, plan.len, check)?;
            }
            _ => self.engine.update(own, plan.len, measure)?,
        }
        self.engine.swap();
        let end = iteration + plan.len;
        Ok(Some(Unit { end, record_at: measure.then_some(plan.record_at), host_holds: !E::QUEUED }))
    }

    /// The phase that starts after `iteration`, or `None` at the limit.
    fn next_phase(&self, iteration: usize) -> Option<Phase> {
        let stop = &self.stop;
        if stop.max_iterations.is_some_and(|max| iteration >= max) {
            return None;
        }
        let first = iteration + 1;
        // A phase ends at the iteration limit and before the next check, so that every
        // check is the first iteration of a phase (where the ghost planes are fresh).
        let mut len = self.planes.depth.min(stop.max_iterations.map_or(usize::MAX, |max| max - iteration));
        if let Some(next) = (first + 1..first + len).find(|&k| stop.checks_at(k)) {
            len = next - first;
        }
        Some(Phase { start: iteration, len, done: 0, check: stop.checks_at(first) })
    }

    /// Across ranks: the next step of the phase in progress (starting one when none is).
    fn across(&mut self, iteration: usize) -> Result<Option<Unit>> {
        let mut phase = match self.phase {
            Some(phase) => phase,
            None => match self.next_phase(iteration) {
                Some(phase) => phase,
                None => return Ok(None),
            },
        };
        // A measured iteration is one plain step; the others are cycles when the schedule
        // has them.
        let measure = phase.check && phase.done == 0;
        let cycle = match self.cycles {
            Cycles::Exact(sub) => sub.max(1),
            _ => 1,
        };
        let steps = if measure { 1 } else { cycle.min(phase.len - phase.done) };
        let left = phase.len - phase.done - steps;
        self.step(steps, left, measure)?;
        phase.done += steps;
        self.phase = (phase.done < phase.len).then_some(phase);
        let end = phase.start + phase.done;
        Ok(Some(Unit { end, record_at: measure.then_some(phase.start + 1), host_holds: !E::QUEUED }))
    }

    /// One step of `steps` iterations, `left` iterations before the phase's end (0: the
    /// exchange follows it).
    fn step(&mut self, steps: usize, left: usize, measure: bool) -> Result<()> {
        self.engine.fill()?;
        let planes = &self.planes;
        // A cycle leaves other values up to (steps − 1)·r planes around what it updates:
        // the last step is split only when the cycle above the middle cannot reach the
        // planes sent below (else it runs whole, and the exchange follows it).
        let [_, middle, _] = planes.split();
        if left == 0 && planes.has_neighbour() && middle.len() >= (steps - 1) * planes.radius {
            return self.last_step_split(steps, measure);
        }
        let region = planes.region(left);
        if measure {
            // Only the own planes are measured; the margins are updated for the iterations
            // left in the phase.
            let own = planes.own.clone();
            self.engine.update(region.start..own.start, 1, false)?;
            self.engine.update(own.clone(), 1, true)?;
            self.engine.update(own.end..region.end, 1, false)?;
        } else {
            self.engine.update(region, steps, false)?;
        }
        self.engine.swap();
        if left == 0 { self.exchange() } else { Ok(()) }
    }

    /// The last step of a phase with the planes to send updated first and the exchange
    /// overlapping the middle's update.
    fn last_step_split(&mut self, steps: usize, measure: bool) -> Result<()> {
        let Self { engine, peers, planes, halos: Exchange { send, recv }, .. } = self;
        let [lower, middle, upper] = planes.split();
        let ((sent_lower, sent_upper), (ghost_lower, ghost_upper)) = (planes.sent(), planes.received());
        let neighbours = planes.neighbours();
        engine.update(lower, steps, measure)?;
        engine.update(upper, steps, measure)?;
        engine.mark()?;
        // A cycle may leave other values in the planes sent: they are staged before the
        // middle's cycle runs and put back after it.
        let cycle = steps > 1;
        let middle_measure = measure && !cycle;
        if E::QUEUED {
            if cycle {
                engine.stage(sent_lower.clone(), sent_upper.clone(), send, true)?;
            }
            engine.update(middle, steps, middle_measure)?;
            if !cycle {
                engine.stage(sent_lower.clone(), sent_upper.clone(), send, true)?;
            }
            send_receive(engine, *peers, neighbours, (send, recv), |_| Ok(()))?;
        } else {
            engine.stage(sent_lower.clone(), sent_upper.clone(), send, true)?;
            send_receive(engine, *peers, neighbours, (send, recv), |e| e.update(middle, steps, middle_measure))?;
        }
        engine.swap();
        if cycle {
            engine.restore(sent_lower, sent_upper, send)?;
        }
        engine.unstage(ghost_lower, ghost_upper, recv)
    }

    /// Sends the own planes of the current iterate that the neighbours need and receives
    /// the ghost planes into it (nothing to overlap).
    fn exchange(&mut self) -> Result<()> {
        exchange(&mut self.engine, self.peers, &self.planes, &mut self.halos)
    }
}

/// Sends `planes`' own planes of `engine`'s current iterate that the neighbours need and
/// receives the ghost planes into it.
pub(crate) fn exchange<T: Real, const N: usize>(
    engine: &mut impl Engine<T, N>,
    peers: &impl Peers,
    planes: &Planes,
    halos: &mut Exchange<T>,
) -> Result<()> {
    if !planes.has_neighbour() {
        return Ok(());
    }
    let Exchange { send, recv } = halos;
    let ((sent_lower, sent_upper), (ghost_lower, ghost_upper)) = (planes.sent(), planes.received());
    engine.stage(sent_lower, sent_upper, send, false)?;
    send_receive(engine, peers, planes.neighbours(), (send, recv), |_| Ok(()))?;
    engine.unstage(ghost_lower, ghost_upper, recv)
}

/// Sends the staged planes to `neighbours` and receives theirs while `during` runs: device
/// to device when `engine` has a link, else through the host buffers `send` and `recv` and
/// `peers`.
pub(crate) fn send_receive<T: Real, const N: usize, E: Engine<T, N>>(
    engine: &mut E,
    peers: &impl Peers,
    neighbours: (Option<usize>, Option<usize>),
    (send, recv): (&Halo<T>, &mut Halo<T>),
    during: impl FnOnce(&mut E) -> Result<()>,
) -> Result<()> {
    if engine.send_on_device(neighbours)? {
        return during(engine);
    }
    peers.exchange(neighbours, send, recv, || during(engine))
}

impl<P: Peers, E: Engine<T, N>, T: Real, const N: usize> Advance<T, N> for Jacobi<'_, P, E, T, N> {
    fn advance(&mut self, iteration: usize) -> Result<Option<Unit>> {
        if self.planes.has_neighbour() { self.across(iteration) } else { self.alone(iteration) }
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
        // A phase cut short by the check: its exchange, so that the ghost planes hold the
        // iterate checked too.
        match self.phase.take() {
            Some(_) => self.exchange(),
            None => Ok(()),
        }
    }

    fn host(&mut self) -> Result<&mut Grid<T, N>> {
        // A checkpoint or an observer sees the current iterate's outer layer.
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
