//! What every backend does after a residual check: record it, report progress, and decide
//! whether the tolerance is met. One implementation, so the stopping rules mean the same
//! thing on every backend.

use std::time::{Duration, Instant};

use crate::checkpoint::Writer;
use crate::report::{ResidualSample, StopReason};
use crate::run::job::{GridState, Held, ProgressFn};
use crate::stop::StopRule;
use crate::{Norm, Progress, Real, Report, Schedule, Stencil, Tolerance};

/// What a finished loop did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ran {
    pub iterations: usize,
    pub stop: StopReason,
    pub wall: Duration,
}

pub(crate) struct Monitor<'r, 'a> {
    stop: StopRule,
    points: usize,
    started: Instant,
    residuals: Vec<ResidualSample>,
    /// ρ(u⁰) in both norms, (L∞, L2).
    reference: Option<[f64; 2]>,
    progress: Option<&'r mut ProgressFn<'a>>,
    /// The iteration the run started from (a checkpoint's, or 0).
    first: usize,
    checkpoint: Option<Writer>,
    /// Where the run keeps what the user's grid holds (single-process runs).
    held: Option<&'r GridState>,
    /// A relative tolerance met because ρ(u⁰) = 0.
    start_satisfies: bool,
}

impl<'r, 'a> Monitor<'r, 'a> {
    /// Starts the clock.
    pub fn start(stop: StopRule, points: usize, progress: Option<&'r mut ProgressFn<'a>>) -> Self {
        Self {
            stop,
            points,
            started: Instant::now(),
            residuals: Vec::new(),
            reference: None,
            progress,
            first: 0,
            checkpoint: None,
            held: None,
            start_satisfies: false,
        }
    }

    /// Starts the clock for `job`: from its start (iteration 0 or a checkpoint), writing its
    /// checkpoints.
    pub fn for_job<S: Stencil<N>, T: Real, const N: usize>(
        job: &mut crate::run::job::Job<'r, 'a, S, T, N>,
        points: usize,
    ) -> Self {
        let mut monitor = Self::start(job.stop, points, job.progress.take());
        monitor.first = job.start.iteration;
        monitor.reference = job.start.reference;
        monitor.checkpoint = job.checkpoint.take();
        monitor.held = job.held;
        monitor
    }

    /// Records that the user's grid now holds iterate `iteration` (backends that update it
    /// in place call this after every iteration; GPU backends only copy into it at
    /// checkpoints and at the end).
    pub fn holds(&self, iteration: usize) {
        if let Some(state) = self.held {
            state.held.set(Held::Iterate(iteration));
        }
    }

    /// The iteration the run starts from.
    pub fn first_iteration(&self) -> usize {
        self.first
    }

    /// [`check`](Self::check) of the residual recorded at `recorded_at`, then the checkpoint
    /// of iterate `iteration` if one is due, of the grids of every unknown `host` gives (which
    /// brings that iterate into the user's grids where it is elsewhere, on a device). Returns whether
    /// the tolerance is met.
    pub fn check_and_save<'g, S: Stencil<N>, T: Real, const N: usize>(
        &mut self,
        recorded_at: usize,
        measured: Option<(f64, f64)>,
        iteration: usize,
        host: impl FnOnce() -> crate::Result<Vec<&'g crate::Grid<T, N>>>,
    ) -> crate::Result<bool> {
        let converged = self.check(recorded_at, measured);
        let reference = self.reference;
        if self.checkpoint.as_ref().is_some_and(|w| w.due(iteration)) {
            let unknowns = self.copied_to_host(iteration, host)?;
            let Some(writer) = self.checkpoint.as_mut() else { unreachable!("a checkpoint is due") };
            writer.save(&unknowns, iteration, reference, S::META.name)?;
            if let Some(state) = self.held {
                state.checkpoint.set(Some(iteration));
            }
        }
        Ok(converged)
    }

    /// The user's grid holding iterate `iteration`, from `host` (which copies it there from
    /// a device), with what the grid holds recorded while it does.
    pub fn copied_to_host<G>(&self, iteration: usize, host: impl FnOnce() -> crate::Result<G>) -> crate::Result<G> {
        if let Some(state) = self.held {
            state.held.set(Held::Mixed);
        }
        let u = host()?;
        self.holds(iteration);
        Ok(u)
    }

    fn norm(&self, max: f64, l2: f64) -> f64 {
        match self.stop.tolerance.map(|t| t.norm()) {
            Some(Norm::L2) => l2,
            _ => max,
        }
    }

    /// Sets ρ(u⁰) for a relative tolerance when it is measured before the first iteration.
    pub fn set_reference(&mut self, max: f64, l2: f64) {
        self.reference = Some([max, l2]);
    }

    /// Records the check after `iteration`: `measured` is (L∞, L2) of the residual, or
    /// `None` where the check only looked for non-finite values. Returns whether the
    /// tolerance is met.
    pub fn check(&mut self, iteration: usize, measured: Option<(f64, f64)>) -> bool {
        if let Some((max, l2)) = measured {
            self.residuals.push(ResidualSample { iteration, max, l2 });
        }
        let value = measured.map(|(max, l2)| self.norm(max, l2));
        if iteration == 1 && self.reference.is_none() {
            self.reference = measured.map(|(max, l2)| [max, l2]);
        }
        if let Some(callback) = self.progress.as_mut() {
            let elapsed = self.started.elapsed();
            callback(&Progress {
                iteration,
                max_iterations: self.stop.max_iterations,
                residual: value,
                elapsed,
                gpoints_per_s: (self.points * (iteration - self.first)) as f64 / elapsed.as_secs_f64().max(1e-12) / 1e9,
            });
        }
        match (self.stop.tolerance, value) {
            (Some(Tolerance::Absolute { eps, .. }), Some(v)) => v < eps,
            (Some(Tolerance::Relative { factor, .. }), Some(v)) => match self.reference {
                // ρ₀ = 0: the start is a fixed point, which every positive factor accepts
                // (nothing is below 0 · ρ₀, so the plain rule would never stop).
                Some([max, l2]) if self.norm(max, l2) == 0.0 && factor > 0.0 => {
                    self.start_satisfies = true;
                    true
                }
                Some([max, l2]) => v < factor * self.norm(max, l2),
                None => false,
            },
            _ => false,
        }
    }

    /// Time since [`start`](Self::start).
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The report of the run of `S` in precision `T` that this monitor watched: `schedule` on
    /// `backend` over a grid of `shape`, as it `ran`; `jit` on the GPU.
    pub fn into_report<S: Stencil<N>, T: Real, const N: usize>(
        self,
        backend: crate::report::RanOn,
        schedule: Schedule,
        shape: [usize; N],
        ran: Ran,
        jit: Option<(Duration, crate::report::Origin)>,
    ) -> Report {
        let Ran { iterations, stop, wall } = ran;
        Report {
            stencil: S::META.name,
            precision: T::NAME,
            backend,
            schedule,
            schedule_choice: None,
            shape: shape.to_vec(),
            interior_points: self.points,
            iterations,
            stop: match stop {
                StopReason::Converged if self.start_satisfies => StopReason::StartSatisfies,
                other => other,
            },
            tolerance: self.stop.tolerance,
            residual: self.stop.residual,
            residuals: self.residuals,
            wall,
            jit,
            bytes_per_point: S::META.bytes_per_point(T::BYTES),
            resumed_at: (self.first > 0).then_some(self.first),
            model: None,
        }
    }
}
