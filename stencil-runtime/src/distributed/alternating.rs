//! Alternating steps across ranks: the sweeps of two stencils in turn, each by the pipeline
//! of `sweep.rs` in its own direction along the cut axis.
//!
//! When both stencils sweep the cut axis the same way, the ranks overlap as for one sweep
//! stencil (R ranks have R sweeps in flight). When they sweep it in opposite directions (the
//! alternate-triangular scheme's two half-steps), the second sweep starts on the rank the
//! first one ended on and runs back: every rank waits for the whole sweep of the ranks
//! before it, so a step takes as long as in one process plus the messages. The grid is then
//! spread over the ranks' memory, not the work over their time; `docs/scaling.md` says what
//! would overlap them.

use std::ops::Range;
use std::time::{Duration, Instant};

use super::Subdomain;
use super::driver::{Planes, halos, sweep_planes};
use super::sweep::{Pipeline, Sweeps};
use crate::steps::FieldPair;
use crate::{Direction, Grid, Real, Result, Schedule, Stencil, StencilMeta, StepFn, StepsReport};

/// What the steps of one rank need from its backend beyond [`Sweeps`].
trait Steps<T: Real>: Sweeps<T> {
    /// Waits for every sweep.
    fn wait(&mut self) -> Result<()>;
}

/// A rank's grid on the CPU, swept by two stencils in turn.
struct CpuSweeps<'g, 'f, A: Stencil<N>, B: Stencil<N>, T: Real, const N: usize> {
    u: &'g mut Grid<T, N>,
    fields: FieldPair<'f, T>,
    params: (&'f A::Params<T>, &'f B::Params<T>),
    schedule: Schedule,
}

impl<A: Stencil<N>, B: Stencil<N>, T: Real, const N: usize> CpuSweeps<'_, '_, A, B, T, N> {
    fn elements(&self, planes: &Range<usize>) -> Range<usize> {
        let plane_len: usize = self.u.shape()[1..].iter().product();
        planes.start * plane_len..planes.end * plane_len
    }
}

impl<A: Stencil<N>, B: Stencil<N>, T: Real, const N: usize> Sweeps<T> for CpuSweeps<'_, '_, A, B, T, N> {
    fn sweep(&mut self, which: usize, planes: Range<usize>) -> Result<()> {
        let shape = self.u.shape();
        let grid = (self.u.as_mut_slice(), shape);
        match which {
            0 => sweep_planes::<A, T, N>(grid, self.fields.0, self.params.0, self.schedule, planes),
            _ => sweep_planes::<B, T, N>(grid, self.fields.1, self.params.1, self.schedule, planes),
        }
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

impl<A: Stencil<N>, B: Stencil<N>, T: Real, const N: usize> Steps<T> for CpuSweeps<'_, '_, A, B, T, N> {
    fn wait(&mut self) -> Result<()> {
        Ok(())
    }
}

impl<A: Stencil<N>, B: Stencil<N>, T: Real, const N: usize> Steps<T>
    for crate::cuda::distributed::GpuSweeps<'_, A, B, T, N>
{
    fn wait(&mut self) -> Result<()> {
        crate::cuda::distributed::GpuSweeps::wait(self)
    }
}

/// The direction in which a sweep stencil sweeps the cut axis, and its radius there.
fn on_cut(meta: &'static StencilMeta) -> (Direction, usize) {
    (meta.sweep.as_ref().expect("a sweep stencil").directions[0], meta.radius[0])
}

/// Runs `steps` alternating steps (a sweep of `A`, then one of `B`) on this rank's part `u`
/// of the grid, on the CPU (`device` is `None`) or on a GPU. Every rank calls it, after
/// the ranks have agreed on the problem. A rank whose device cannot start makes every rank
/// return an error.
pub(crate) fn run<A: Stencil<N>, B: Stencil<N>, T: Real, const N: usize>(
    u: &mut Grid<T, N>,
    sub: &Subdomain<'_, N>,
    params: (&A::Params<T>, &B::Params<T>),
    fields: FieldPair<'_, T>,
    (device, mode, schedule): (Option<usize>, crate::cuda::Mode, Schedule),
    steps: usize,
    on_step: Option<&mut StepFn<'_>>,
) -> Result<StepsReport> {
    let mpi = sub.mpi();
    let ranks = format!("mpi rank {} of {}", sub.rank(), sub.ranks());
    let (wall, backend, jit) = match device {
        None => {
            let mut engine = CpuSweeps::<A, B, T, N> { u, fields, params, schedule };
            let wall = iterate::<A, B, T, N>(sub, &mut engine, (steps, 1), on_step)?;
            (wall, format!("{ranks}, {}", crate::Backend::Cpu), None)
        }
        Some(device) => {
            let started =
                crate::cuda::distributed::GpuSweeps::<A, B, T, N>::new(u, params, fields, (device, mode, schedule));
            let (mut engine, jit) = mpi.all_ok(started)?;
            let backend = format!("{ranks}, cuda device {device} ({})", engine.device_name());
            // The device is waited for before each callback: at most a hundred of them.
            let wall = iterate::<A, B, T, N>(sub, &mut engine, (steps, steps.div_ceil(100).max(1)), on_step)?;
            engine.finish()?;
            (wall, backend, Some(jit))
        }
    };
    // Every rank reports the slowest rank's time.
    let wall = Duration::from_secs_f64(mpi.max(wall.as_secs_f64()));
    Ok(StepsReport { steps, wall, backend, schedule, jit })
}

/// The steps on `engine`, `on_step` called every `every` steps and after the last; then every
/// ghost plane (`depth · radius` a side) is brought up to date. Returns the time they took.
fn iterate<A: Stencil<N>, B: Stencil<N>, T: Real, const N: usize>(
    sub: &Subdomain<'_, N>,
    engine: &mut impl Steps<T>,
    (steps, every): (usize, usize),
    mut on_step: Option<&mut StepFn<'_>>,
) -> Result<Duration> {
    let mpi = sub.mpi();
    let planes = Planes::of(sub);
    let mut pipeline = Pipeline::<T>::new(&planes, &[on_cut(A::META), on_cut(B::META)], sub.plane_len());
    let started = Instant::now();
    for step in 1..=steps {
        pipeline.sweep(mpi, 2 * step - 1, engine)?;
        pipeline.sweep(mpi, 2 * step, engine)?;
        if let Some(callback) = on_step.as_deref_mut().filter(|_| step % every == 0 || step == steps) {
            engine.wait()?;
            callback(step, started.elapsed());
        }
    }
    pipeline.settle(mpi, 2 * steps, engine)?;
    let neighbours = (planes.below, planes.above);
    if neighbours != (None, None) {
        let (mut send, mut recv) = halos::<T>(&planes, sub.plane_len());
        let ((sent_lower, sent_upper), (ghost_lower, ghost_upper)) = (planes.sent(), planes.received());
        for (planes, into) in [(sent_lower, &mut send.lower), (sent_upper, &mut send.upper)] {
            if !planes.is_empty() {
                engine.read(planes, into)?;
            }
        }
        mpi.exchange(neighbours, &send, &mut recv, || Ok(()))?;
        for (planes, from) in [(ghost_lower, &recv.lower), (ghost_upper, &recv.upper)] {
            if !planes.is_empty() {
                engine.write(planes, from)?;
            }
        }
    }
    engine.wait()?;
    Ok(started.elapsed())
}
