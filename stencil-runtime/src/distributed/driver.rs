//! The iteration loop of a distributed run, the same for every backend and schedule: phases
//! of at most `depth` iterations over shrinking regions, an exchange of ghost planes at the
//! end of each phase overlapped with its last step, and residual checks reduced over all
//! ranks. A backend supplies an [`Engine`] that updates ranges of local planes by one plain
//! (or tiled) iteration, or by an exact hierarchical cycle of several. With the out-of-core
//! schedule underneath, the rank's grid stays in host memory and a backend supplies
//! [`Passes`] instead: one pass over slabs of the own planes per phase, whose first slabs
//! (those that read no ghost plane) run while the planes of the last pass are exchanged
//! ([`iterate_passes`]).

use std::ops::Range;

use super::sweep::{SweepEngine, Sweeps, iterate_sweeps};
use super::tiles::iterate_tiles;
use super::{Halo, Subdomain};
use crate::cpu::hierarchical::{self, Cycle};
use crate::cpu::out_of_core::Ghosts;
use crate::cpu::{Difference, out_of_core};
use crate::plan::Layout;
use crate::run::monitor::Monitor;
use crate::report::StopReason;
use crate::plan::slabs::Slabs;
use crate::solver::Job;
use crate::{Error, Grid, Real, Report, Result, Schedule, Stencil};

/// Updates ranges of a rank's local planes on one backend, by one Jacobi iteration or by an
/// exact hierarchical cycle of several.
///
/// A step reads the current iterate and writes the next; [`swap`](Self::swap) ends it.
/// Planes are local plane indices of axis 0 (interior planes only).
pub(crate) trait Engine<T: Real> {
    /// Whether [`update`](Self::update) returns before the work is done (a GPU queue): then
    /// the rest of an iteration is queued before the exchange, else it runs during it.
    const QUEUED: bool;

    /// Updates `planes` into the next iterate, `steps` iterations later: one plain (or
    /// tiled) iteration, or for `steps > 1` an exact hierarchical cycle, which reads the
    /// current iterate `steps · radius` planes beyond `planes` and may leave any value in the
    /// next iterate's planes within `(steps − 1) · radius` of them. With `measure` (one
    /// step only), adds S(u) − u over them to the iteration's
    /// [`difference`](Self::difference).
    fn update(&mut self, planes: Range<usize>, steps: usize, measure: bool) -> Result<()>;

    /// An inexact hierarchical cycle of `len` subiterations over the whole grid's tiles
    /// (aligned as one process places them) whose cores tile `cores` (local planes, starting
    /// at a tile's edge): writes those cores of the next iterate, reading the current one
    /// within `halo` planes of them. With `check`, the iteration's
    /// [`difference`](Self::difference) reports the first non-finite value this iteration's
    /// cycles write (instead of the measuring update's); a cycle may be launched in parts.
    fn inexact_cycle(&mut self, cores: Range<usize>, len: usize, check: bool) -> Result<()>;

    /// Marks the updates queued so far: [`stage`](Self::stage) waits for them only.
    fn mark(&mut self) -> Result<()>;

    /// Copies planes `lower` and `upper` of the next iterate (`next`) or of the current one
    /// into `send`, and waits until they are there.
    fn stage(&mut self, lower: Range<usize>, upper: Range<usize>, send: &mut Halo<T>, next: bool) -> Result<()>;

    /// Ends an iteration: the next iterate becomes the current one.
    fn swap(&mut self);

    /// Copies `recv` into planes `lower` and `upper` of the current iterate, before any later
    /// update.
    fn unstage(&mut self, lower: Range<usize>, upper: Range<usize>, recv: &Halo<T>) -> Result<()>;

    /// As [`unstage`](Self::unstage), after every update so far has finished: puts back the
    /// planes sent (`sent`, staged before a cycle left other values around it).
    fn restore(&mut self, lower: Range<usize>, upper: Range<usize>, sent: &Halo<T>) -> Result<()>;

    /// Waits for the iteration and returns its measured difference (flat indices local).
    fn difference(&mut self) -> Result<Difference>;

    /// Waits for every update.
    fn wait(&mut self) -> Result<()>;

    /// Waits for every update and leaves the current iterate in the user's grid.
    fn finish(self) -> Result<()>;

    /// The value at local flat index `at` of the current iterate.
    fn value_at(&mut self, at: usize) -> Result<f64>;
}

/// The planes one rank updates and exchanges, as local plane indices.
#[derive(Clone, Debug)]
pub(crate) struct Planes {
    /// Local planes along axis 0.
    pub count: usize,
    pub radius: usize,
    /// Ghost planes per side (`depth · radius`).
    pub ghost: usize,
    pub depth: usize,
    pub own: Range<usize>,
    pub below: Option<usize>,
    pub above: Option<usize>,
}

impl Planes {
    pub(crate) fn of<const N: usize>(sub: &Subdomain<'_, N>) -> Self {
        Self {
            count: sub.local().len(),
            radius: sub.radius(),
            ghost: sub.ghost(),
            depth: sub.depth(),
            own: sub.own_local(),
            below: sub.below(),
            above: sub.above(),
        }
    }

    /// The planes iteration `left` iterations before the end of a phase updates: the own
    /// planes widened by `left · radius`, within the local interior.
    fn region(&self, left: usize) -> Range<usize> {
        let r = self.radius;
        self.own.start.saturating_sub(left * r).max(r)..(self.own.end + left * r).min(self.count - r)
    }

    /// The own planes sent to the rank below and to the rank above (empty without one).
    pub(super) fn sent(&self) -> (Range<usize>, Range<usize>) {
        let own = &self.own;
        let lower = if self.below.is_some() { own.start..own.start + self.ghost } else { own.start..own.start };
        let upper = if self.above.is_some() { own.end - self.ghost..own.end } else { own.end..own.end };
        (lower, upper)
    }

    /// The ghost planes received from below and from above (empty without a neighbour).
    pub(super) fn received(&self) -> (Range<usize>, Range<usize>) {
        let own = &self.own;
        let lower = if self.below.is_some() { own.start - self.ghost..own.start } else { own.start..own.start };
        let upper = if self.above.is_some() { own.end..own.end + self.ghost } else { own.end..own.end };
        (lower, upper)
    }

    /// Sends the planes of `engine`'s current iterate that the neighbours need and receives
    /// this rank's ghost planes into it (nothing to overlap).
    pub(super) fn exchange<T: Real>(
        &self,
        mpi: &super::Mpi,
        engine: &mut impl Engine<T>,
        (send, recv): (&mut Halo<T>, &mut Halo<T>),
    ) -> Result<()> {
        let neighbours = (self.below, self.above);
        if neighbours == (None, None) {
            return Ok(());
        }
        let ((sent_lower, sent_upper), (ghost_lower, ghost_upper)) = (self.sent(), self.received());
        engine.stage(sent_lower, sent_upper, send, false)?;
        mpi.exchange(neighbours, send, recv, || Ok(()))?;
        engine.unstage(ghost_lower, ghost_upper, recv)
    }

    /// The own planes in three parts: those sent below, the middle, those sent above (the
    /// parts sent are updated first so that the exchange overlaps the middle's update).
    fn split(&self) -> [Range<usize>; 3] {
        let (lower, upper) = self.sent();
        let middle_start = lower.end.max(self.own.start);
        let upper_start = upper.start.max(middle_start);
        [lower.start..middle_start, middle_start..upper_start, upper_start..self.own.end]
    }
}

/// The clock and the residual history of `job` on this rank, counting the whole grid's
/// points.
pub(super) fn monitor_for<'r, 'a, S: Stencil<N>, T: Real, const N: usize>(
    job: &mut Job<'r, 'a, S, T, N>,
    sub: &Subdomain<'_, N>,
) -> Result<Monitor<'r, 'a>> {
    let global = Layout::new(S::META, sub.global_shape())?;
    Ok(Monitor::for_job(job, global.interior_points()))
}

/// Reduces a check's difference over every rank, as one process measures it on the whole
/// grid: the residual's (L∞, L2), or [`Error::NonFinite`] at the first non-finite value of
/// the grid (`value_at` reads it, on the rank that has it, from a local flat index).
pub(super) fn reduce_check<const N: usize>(
    sub: &Subdomain<'_, N>,
    d: Difference,
    value_at: impl FnOnce(usize) -> Result<f64>,
    (iteration, check_every): (usize, usize),
) -> Result<(f64, f64)> {
    let local_bad = d.first_non_finite;
    let bad_value = local_bad.map(value_at).transpose()?.unwrap_or(0.0);
    let to_global = |at: usize| (at + sub.local().start * sub.plane_len()) as u64;
    let (max, sum, bad, value) =
        sub.mpi().reduce(d.max_abs, d.sum_sq, local_bad.map_or(u64::MAX, to_global), bad_value);
    if bad != u64::MAX {
        return Err(Error::NonFinite {
            iteration,
            index: crate::grid::unflatten(sub.global_shape(), bad as usize).to_vec(),
            value,
            check_every,
        });
    }
    Ok((max, sum.sqrt()))
}

/// Host buffers for one exchange: what is sent and what is received, `ghost` planes a side.
pub(crate) fn halos<T: Real>(planes: &Planes, plane_len: usize) -> (Halo<T>, Halo<T>) {
    let (lower, upper) = planes.sent();
    let buffers =
        || Halo { lower: vec![T::ZERO; lower.len() * plane_len], upper: vec![T::ZERO; upper.len() * plane_len] };
    (buffers(), buffers())
}

/// The out-of-core schedule underneath a rank, on one backend: passes over slabs of the
/// own planes, in place on the rank's host grid.
pub(crate) trait Passes<T: Real> {
    /// Runs `len` iterations (at most the slabs' height) on `u` in place, and returns when
    /// every own plane is written back (`len_measure`: `(len, measure)`). `ghosts` is called once with `u`, before the first
    /// slab that reads a ghost plane (the slabs before it run meanwhile on a GPU), and must
    /// leave the ghost planes holding the iterate the pass starts from. With `measure`, the
    /// last iteration measures S(u) − u over the own planes (flat indices local). An error
    /// comes with the number of slabs written back ([`Slabs::interrupted`]).
    fn pass(
        &mut self,
        u: &mut [T],
        len_measure: (usize, bool),
        ghosts: Ghosts<'_, T>,
    ) -> std::result::Result<Option<Difference>, (usize, Error)>;
}

/// Runs `job` by out-of-core passes over this rank's own planes: each pass of at most
/// `depth` iterations is a pyramid (or skewed slabs) of its own, starting from the iterate
/// the ghost planes hold; it ends at the first check it reaches and measures in its last
/// iteration, as in one process. The ghost planes a pass writes are sent when it ends, and
/// received during the next pass: its slabs are rotated ([`Slabs::first`]) so that it
/// starts with those that read no ghost plane, and the exchange runs while a GPU computes
/// them. After the last pass the ghost planes are brought up to date.
pub(crate) fn iterate_passes<S: Stencil<N>, T: Real, const N: usize>(
    job: &mut Job<'_, '_, S, T, N>,
    sub: &Subdomain<'_, N>,
    u: &mut Grid<T, N>,
    (slabs, passes): (&Slabs, &mut dyn Passes<T>),
    backend: String,
) -> Result<Report> {
    let planes = Planes::of(sub);
    let (mut send, mut recv) = halos::<T>(&planes, sub.plane_len());
    let mpi = sub.mpi();
    let stop = job.stop;
    let mut monitor = monitor_for(job, sub)?;
    let alone = (planes.below, planes.above) == (None, None);
    let (sent_lower, sent_upper) = planes.sent();
    let elements = |planes: &Range<usize>| slabs.elements(planes);
    let exchange = |u: &mut [T], send: &Halo<T>, recv: &mut Halo<T>| {
        let (ghost_lower, ghost_upper) = planes.received();
        mpi.exchange((planes.below, planes.above), send, recv, || Ok(()))?;
        u[elements(&ghost_lower)].copy_from_slice(&recv.lower);
        u[elements(&ghost_upper)].copy_from_slice(&recv.upper);
        Ok(())
    };
    // Whether `send` holds planes of the last pass that the neighbours have not received.
    let mut unsent = false;
    let mut iteration = 0;
    let ended = loop {
        let Some(plan) = stop.next_cycle(iteration, slabs.height, true) else { break Ok(StopReason::IterationLimit) };
        let start = iteration;
        iteration += plan.len;
        let exchanging = std::mem::take(&mut unsent);
        let mut ghosts = |u: &mut [T]| if exchanging { exchange(u, &send, &mut recv) } else { Ok(()) };
        let measured = passes
            .pass(u.as_mut_slice(), (plan.len, plan.measure_step.is_some()), &mut ghosts)
            .map_err(|(written, error)| slabs.interrupted(start..iteration, written, None, error))?;
        if !alone {
            send.lower.copy_from_slice(&u.as_slice()[elements(&sent_lower)]);
            send.upper.copy_from_slice(&u.as_slice()[elements(&sent_upper)]);
            unsent = true;
        }
        let Some(d) = measured else { continue };
        let value_at = |at: usize| Ok(u.as_slice()[at].to_f64());
        let residual = match reduce_check(sub, d, value_at, (iteration, stop.check_every)) {
            Ok(residual) => residual,
            Err(error @ Error::NonFinite { .. }) => break Err(error),
            Err(error) => return Err(error),
        };
        if monitor.check(plan.record_at, Some(residual)) {
            break Ok(StopReason::Converged);
        }
    };
    // Every ghost plane holds the last iterate.
    if unsent {
        exchange(u.as_mut_slice(), &send, &mut recv)?;
    }
    let wall = monitor.elapsed();
    let stop_reason = ended?;
    let schedule = slabs.resolved(job.schedule);
    Ok(monitor.into_report::<S, T, N>(backend, schedule, sub.global_shape(), (iteration, stop_reason), wall, None))
}

/// The rayon twin of a rank's out-of-core passes: the CPU schedule's slabs, over the own
/// planes.
struct CpuPasses<'p, S: Stencil<N>, T: Real, const N: usize> {
    pass: out_of_core::Pass<'p, S, T, N>,
    work: out_of_core::Workspace<T>,
}

impl<S: Stencil<N>, T: Real, const N: usize> Passes<T> for CpuPasses<'_, S, T, N> {
    fn pass(
        &mut self,
        u: &mut [T],
        (len, measure): (usize, bool),
        ghosts: Ghosts<'_, T>,
    ) -> std::result::Result<Option<Difference>, (usize, Error)> {
        self.pass.run(u, &mut self.work, (len, measure), &mut |_| {}, Some(ghosts))
    }
}

/// Runs `job` on `engine` over this rank's planes: the loop shared by every backend.
pub(crate) fn iterate<S: Stencil<N>, T: Real, const N: usize, E: Engine<T>>(
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
    let neighbours = (planes.below, planes.above);
    let has_neighbour = planes.below.is_some() || planes.above.is_some();
    let (sent_lower, sent_upper) = planes.sent();
    let (ghost_lower, ghost_upper) = planes.received();
    // The own planes of a phase's split last step: sent below, middle, sent above.
    let [lower, middle, upper] = planes.split();
    // The exchange at the end of a phase whose last step was not split (a phase cut short
    // by convergence, or whose last cycle could not be split).
    let exchange = |engine: &mut E, send: &mut Halo<T>, recv: &mut Halo<T>| planes.exchange(mpi, engine, (send, recv));
    // Exact hierarchical cycles of at most `sub` iterations, never across an exchange.
    let cycle = match job.schedule {
        Schedule::Hierarchical { sub, .. } => sub.max(1),
        _ => 1,
    };
    let mut iteration = 0;
    let stop_reason = 'run: loop {
        if stop.max_iterations.is_some_and(|max| iteration >= max) {
            break StopReason::IterationLimit;
        }
        let first = iteration + 1;
        let check = stop.checks_at(first);
        // A phase ends at the iteration limit and before the next check, so that every
        // check is the first iteration of a phase (where the ghost planes are fresh).
        let mut len = planes.depth.min(stop.max_iterations.map_or(usize::MAX, |max| max - iteration));
        if let Some(next) = (first + 1..first + len).find(|&k| stop.checks_at(k)) {
            len = next - first;
        }
        let mut done = 0;
        while done < len {
            // A measured iteration is one plain step; the others are cycles when the schedule
            // has them.
            let measure = check && done == 0;
            let steps = if measure { 1 } else { cycle.min(len - done) };
            let left = len - done - steps;
            // A cycle leaves other values up to (steps − 1)·r planes around what it updates:
            // the last step is split only when the cycle above the middle cannot reach the
            // planes sent below (else it runs whole, and the exchange follows it).
            if left == 0 && has_neighbour && middle.len() >= (steps - 1) * planes.radius {
                // The planes to send first; the exchange overlaps the middle.
                engine.update(lower.clone(), steps, measure)?;
                engine.update(upper.clone(), steps, measure)?;
                engine.mark()?;
                if steps > 1 {
                    // The middle's cycle may leave other values in the planes sent: they are
                    // staged before it runs and put back after it.
                    engine.stage(sent_lower.clone(), sent_upper.clone(), send, true)?;
                    if E::QUEUED {
                        engine.update(middle.clone(), steps, false)?;
                        mpi.exchange(neighbours, send, recv, || Ok(()))?;
                    } else {
                        mpi.exchange(neighbours, send, recv, || engine.update(middle.clone(), steps, false))?;
                    }
                    engine.swap();
                    engine.restore(sent_lower.clone(), sent_upper.clone(), send)?;
                } else {
                    if E::QUEUED {
                        engine.update(middle.clone(), steps, measure)?;
                        engine.stage(sent_lower.clone(), sent_upper.clone(), send, true)?;
                        mpi.exchange(neighbours, send, recv, || Ok(()))?;
                    } else {
                        engine.stage(sent_lower.clone(), sent_upper.clone(), send, true)?;
                        mpi.exchange(neighbours, send, recv, || engine.update(middle.clone(), steps, measure))?;
                    }
                    engine.swap();
                }
                engine.unstage(ghost_lower.clone(), ghost_upper.clone(), recv)?;
            } else {
                let region = planes.region(left);
                if measure {
                    // Only the own planes are measured; the margins are updated for the
                    // iterations left in the phase.
                    engine.update(region.start..planes.own.start, 1, false)?;
                    engine.update(planes.own.clone(), 1, true)?;
                    engine.update(planes.own.end..region.end, 1, false)?;
                } else {
                    engine.update(region, steps, false)?;
                }
                engine.swap();
                if left == 0 {
                    exchange(&mut engine, send, recv)?;
                }
            }
            done += steps;
            if !measure {
                continue;
            }
            let d = engine.difference()?;
            let checked = reduce_check(sub, d, |at| engine.value_at(at), (iteration + done, stop.check_every));
            let residual = match checked {
                Err(error @ Error::NonFinite { .. }) => {
                    // Every rank has the error: the grid is left whole, ghost planes included.
                    if done < len {
                        exchange(&mut engine, send, recv)?;
                    }
                    engine.finish()?;
                    return Err(error);
                }
                other => other?,
            };
            if monitor.check(first, Some(residual)) {
                // `Plain` stops after this iteration: so does the phase.
                if done < len {
                    exchange(&mut engine, send, recv)?;
                }
                iteration = first;
                break 'run StopReason::Converged;
            }
        }
        iteration += len;
    };
    // The clock stops when the iterations are done, before the grid is copied back.
    engine.wait()?;
    let wall = monitor.elapsed();
    engine.finish()?;
    Ok(monitor.into_report::<S, T, N>(backend, job.schedule, sub.global_shape(), (iteration, stop_reason), wall, None))
}

/// The rayon twin of a rank's updates: the CPU plain pass, or a hierarchical cycle, over a
/// range of planes.
pub(crate) struct CpuEngine<'g, 'j, S: Stencil<N>, T: Real, const N: usize> {
    u: &'g mut Grid<T, N>,
    next: Vec<T>,
    inputs: Vec<Option<&'j [T]>>,
    params: S::Params<T>,
    shape: [usize; N],
    radius: usize,
    plane_len: usize,
    /// How a sweep stencil's planes are swept (sequentially, or by a rayon wavefront).
    schedule: Schedule,
    /// The hierarchical schedule's tile and halo, when it has cycles.
    cycle: Option<(usize, usize)>,
    measured: Option<Difference>,
    /// Whether an inexact cycle of this iteration looked for non-finite values.
    cycle_checked: bool,
}

impl<'g, 'j, S: Stencil<N>, T: Real, const N: usize> CpuEngine<'g, 'j, S, T, N> {
    /// The engine of `u`'s planes. `measures`: whether a sweep stencil's checks measure
    /// S(u) − u (a tolerance), which needs the second buffer that Jacobi steps always do.
    pub(crate) fn new(
        u: &'g mut Grid<T, N>,
        inputs: Vec<Option<&'j [T]>>,
        params: S::Params<T>,
        (schedule, measures): (Schedule, bool),
    ) -> Result<Self> {
        let shape = u.shape();
        let next = match S::META.is_sweep() && !measures {
            true => Vec::new(),
            false => crate::cpu::second_buffer(u)?,
        };
        Ok(Self {
            cycle: match schedule {
                Schedule::Hierarchical { tile, halo, .. } => Some((tile, halo)),
                _ => None,
            },
            next,
            u,
            inputs,
            params,
            shape,
            schedule,
            radius: S::META.radius[0],
            plane_len: shape[1..].iter().product(),
            measured: None,
            cycle_checked: false,
        })
    }

    fn elements(&self, planes: &Range<usize>) -> Range<usize> {
        planes.start * self.plane_len..planes.end * self.plane_len
    }
}

impl<S: Stencil<N>, T: Real, const N: usize> Engine<T> for CpuEngine<'_, '_, S, T, N> {
    const QUEUED: bool = false;

    fn update(&mut self, planes: Range<usize>, steps: usize, measure: bool) -> Result<()> {
        if planes.is_empty() {
            return Ok(());
        }
        let r = self.radius;
        // The planes and those their steps read, seen as a grid of their own whose interior
        // holds `planes` (whose outer `r` planes stay as they are).
        let reach = steps * r;
        let window = planes.start.saturating_sub(reach)..(planes.end + reach).min(self.shape[0]);
        let elements = self.elements(&window);
        let mut shape = self.shape;
        shape[0] = window.len();
        let layout = Layout::new(S::META, shape)?;
        let current = &self.u.as_slice()[elements.clone()];
        let fields: Vec<&[T]> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(i, f)| if i == S::META.unknown { current } else { f.map_or(&[][..], |f| &f[elements.clone()]) })
            .collect();
        let out = &mut self.next[elements.clone()];
        let measured = match self.cycle {
            Some(cycle) if steps > 1 => {
                let cycle = Cycle::new(&layout, cycle.0, cycle.1, steps);
                hierarchical::cycle::<S, T, N>(&layout, &cycle, &fields, out, &self.params, None)?
            }
            _ => crate::cpu::plain_apply::<S, T, N>(&layout, &fields, out, &self.params, measure),
        };
        if let Some(mut d) = measured {
            d.first_non_finite = d.first_non_finite.map(|at| at + elements.start);
            self.measured = Some(self.measured.map_or(d, |m| m.merge(d)));
        }
        Ok(())
    }

    fn inexact_cycle(&mut self, cores: Range<usize>, len: usize, check: bool) -> Result<()> {
        if cores.is_empty() {
            return Ok(());
        }
        let Some((tile, halo)) = self.cycle else {
            unreachable!("inexact cycles run under a hierarchical schedule only")
        };
        let layout = Layout::new(S::META, self.shape)?;
        let cycle = Cycle { cores0: (cores.start, cores.end), ..Cycle::new(&layout, tile, halo, len) };
        let current = self.u.as_slice();
        let fields: Vec<&[T]> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(i, f)| if i == S::META.unknown { current } else { f.unwrap_or(&[]) })
            .collect();
        let written =
            hierarchical::cycle::<S, T, N>(&layout, &cycle, &fields, &mut self.next, &self.params, check.then_some(0))?;
        if let Some(written) = written {
            // The first of the cycle's launches replaces the measuring update's finding.
            let checked = std::mem::replace(&mut self.cycle_checked, true);
            let measured = self.measured.get_or_insert_default();
            measured.first_non_finite = match checked {
                false => written.first_non_finite,
                true => measured.first_non_finite.into_iter().chain(written.first_non_finite).min(),
            };
        }
        Ok(())
    }

    fn mark(&mut self) -> Result<()> {
        Ok(())
    }

    fn stage(&mut self, lower: Range<usize>, upper: Range<usize>, send: &mut Halo<T>, next: bool) -> Result<()> {
        let (lower, upper) = (self.elements(&lower), self.elements(&upper));
        let from = if next { &self.next[..] } else { self.u.as_slice() };
        send.lower.copy_from_slice(&from[lower]);
        send.upper.copy_from_slice(&from[upper]);
        Ok(())
    }

    fn swap(&mut self) {
        self.u.swap_data(&mut self.next);
    }

    fn unstage(&mut self, lower: Range<usize>, upper: Range<usize>, recv: &Halo<T>) -> Result<()> {
        let (lower, upper) = (self.elements(&lower), self.elements(&upper));
        self.u.as_mut_slice()[lower].copy_from_slice(&recv.lower);
        self.u.as_mut_slice()[upper].copy_from_slice(&recv.upper);
        Ok(())
    }

    fn restore(&mut self, lower: Range<usize>, upper: Range<usize>, sent: &Halo<T>) -> Result<()> {
        // Every update has finished when it returns.
        self.unstage(lower, upper, sent)
    }

    fn difference(&mut self) -> Result<Difference> {
        self.cycle_checked = false;
        Ok(self.measured.take().unwrap_or_default())
    }

    fn wait(&mut self) -> Result<()> {
        Ok(())
    }

    fn finish(self) -> Result<()> {
        Ok(())
    }

    fn value_at(&mut self, at: usize) -> Result<f64> {
        Ok(self.u.as_slice()[at].to_f64())
    }
}

impl<S: Stencil<N>, T: Real, const N: usize> Sweeps<T> for CpuEngine<'_, '_, S, T, N> {
    fn sweep(&mut self, which: usize, planes: Range<usize>) -> Result<()> {
        debug_assert_eq!(which, 0, "one stencil");
        sweep_planes::<S, T, N>((self.u.as_mut_slice(), self.shape), &self.inputs, &self.params, self.schedule, planes)
    }

    fn read(&mut self, planes: Range<usize>, into: &mut [T]) -> Result<()> {
        into.copy_from_slice(&self.u.as_slice()[self.elements(&planes)]);
        Ok(())
    }

    fn write(&mut self, planes: Range<usize>, from: &[T]) -> Result<()> {
        let elements = self.elements(&planes);
        self.u.as_mut_slice()[elements].copy_from_slice(from);
        Ok(())
    }
}

impl<S: Stencil<N>, T: Real, const N: usize> SweepEngine<T> for CpuEngine<'_, '_, S, T, N> {
    fn find_non_finite(&mut self, _own: Range<usize>, part: Range<usize>) -> Result<Option<usize>> {
        // As one process on the CPU: the first non-finite value of the iterate.
        use rayon::prelude::*;
        let elements = self.elements(&part);
        let values = &self.u.as_slice()[elements.clone()];
        Ok(values.par_iter().position_first(|v| !v.is_finite()).map(|at| at + elements.start))
    }
}

/// Sweeps local interior `planes` of `u` (a grid of `shape`) in place with `S`, whose
/// read-only fields are `inputs` (`None` at the unknown) over the same grid.
pub(crate) fn sweep_planes<S: Stencil<N>, T: Real, const N: usize>(
    (u, shape): (&mut [T], [usize; N]),
    inputs: &[Option<&[T]>],
    params: &S::Params<T>,
    schedule: Schedule,
    planes: Range<usize>,
) -> Result<()> {
    if planes.is_empty() {
        return Ok(());
    }
    // The planes and the `r` around them, seen as a grid whose interior is `planes`.
    let r = S::META.radius[0];
    let plane_len: usize = shape[1..].iter().product();
    let elements = (planes.start - r) * plane_len..(planes.end + r) * plane_len;
    let mut window = shape;
    window[0] = planes.len() + 2 * r;
    let layout = Layout::new(S::META, window)?;
    let fields: Vec<&[T]> = inputs.iter().map(|f| f.map_or(&[][..], |f| &f[elements.clone()])).collect();
    crate::cpu::sweep_once::<S, T, N>(&layout, &mut u[elements], &fields, params, schedule);
    Ok(())
}

/// Runs a checked job on this rank's part of the grid, on the CPU (`device` is
/// `None`) or on a GPU. Every rank calls it; a rank whose device cannot start makes every
/// rank return an error.
pub(crate) fn run<S: Stencil<N>, T: Real, const N: usize>(
    mut job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    sub: &Subdomain<'_, N>,
    device: Option<usize>,
    mode: crate::cuda::Mode,
) -> Result<Report> {
    let planes = Planes::of(sub);
    let mpi = sub.mpi();
    let ranks = format!("mpi rank {} of {}", sub.rank(), sub.ranks());
    if let Schedule::OutOfCore { slab, height, inner, device_memory } = job.schedule {
        // A pass ends at every exchange.
        let config = crate::cuda::out_of_core::Config { slab, height: height.min(planes.depth), inner, device_memory };
        return run_passes(job, u, sub, (device, mode), config, ranks);
    }
    let (mut send, mut recv) = halos::<T>(&planes, sub.plane_len());
    let halos = (&mut send, &mut recv);
    let sweeps = S::META.is_sweep();
    // An inexact hierarchical schedule: the whole grid's tiles (`tiles.rs`).
    let inexact = match job.schedule {
        Schedule::Hierarchical { tile, halo, sub } if !job.schedule.is_exact_blocking(S::META) => {
            Some((tile, halo, sub))
        }
        _ => None,
    };
    match device {
        None => {
            let measures = job.stop.tolerance.is_some();
            let engine = CpuEngine::<S, T, N>::new(u, job.inputs.clone(), job.params, (job.schedule, measures))?;
            let backend = format!("{ranks}, {}", crate::Backend::Cpu);
            if sweeps {
                return iterate_sweeps(&mut job, sub, engine, halos, backend);
            }
            if let Some(cycle) = inexact {
                return iterate_tiles(&mut job, sub, engine, halos, (backend, cycle));
            }
            iterate(&mut job, sub, engine, halos, backend)
        }
        Some(device) => {
            let inputs = job.inputs.clone();
            let started = crate::cuda::distributed::GpuEngine::<S, T, N>::new(
                u,
                &inputs,
                &job.params,
                (device, mode, job.schedule),
                (halos.0, halos.1),
            );
            let engine = mpi.all_ok(started)?;
            let backend = format!("{ranks}, cuda device {device} ({})", engine.device_name());
            if sweeps {
                return iterate_sweeps(&mut job, sub, engine, halos, backend);
            }
            if let Some(cycle) = inexact {
                return iterate_tiles(&mut job, sub, engine, halos, (backend, cycle));
            }
            iterate(&mut job, sub, engine, halos, backend)
        }
    }
}

/// [`run`] with the out-of-core schedule underneath the rank (`config`, its pass height at
/// most the depth): slabs of the own planes, on the CPU or on a GPU.
fn run_passes<S: Stencil<N>, T: Real, const N: usize>(
    mut job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    sub: &Subdomain<'_, N>,
    (device, mode): (Option<usize>, crate::cuda::Mode),
    config: crate::cuda::out_of_core::Config,
    ranks: String,
) -> Result<Report> {
    let mpi = sub.mpi();
    let own = sub.own_local();
    let inputs = job.inputs.clone();
    let params = job.params;
    match device {
        None => {
            let layout = Layout::new(S::META, u.shape())?;
            let arrays = 2 + inputs.iter().flatten().count();
            let skewed = config.inner == crate::Inner::Skewed;
            let limits = (config.slab, config.device_memory);
            let slabs = crate::cpu::slabs_for(&layout, own, config.height, limits, (arrays, T::BYTES), skewed);
            let slabs = mpi.all_ok(slabs)?;
            let pass = out_of_core::Pass::<S, T, N> {
                slabs: &slabs,
                shape: u.shape(),
                inputs: &inputs,
                params: &params,
                inner: config.inner,
                fail_after: None,
            };
            let mut passes = CpuPasses { pass, work: out_of_core::Workspace::new(&slabs)? };
            let backend = format!("{ranks}, {}", crate::Backend::Cpu);
            iterate_passes(&mut job, sub, u, (&slabs, &mut passes), backend)
        }
        Some(device) => {
            let gpu = mpi.all_ok(crate::cuda::Gpu::open(device))?;
            let started =
                crate::cuda::distributed::GpuPasses::<S, T, N>::new((&gpu, mode), u, inputs, &params, own, config);
            let mut passes = mpi.all_ok(started)?;
            let slabs = passes.slabs().clone();
            let backend = format!("{ranks}, cuda device {device} ({})", gpu.name);
            iterate_passes(&mut job, sub, u, (&slabs, &mut passes), backend)
        }
    }
}
