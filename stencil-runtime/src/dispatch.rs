//! From a checked run to the loop: the one place where a run's schedule and backend are
//! matched, its engine built, and the schedule's way of advancing handed to the loop
//! (`run::drive`), in one process or on one MPI rank.

use crate::cpu::{CpuEngine, CpuPasses, out_of_core};
use crate::cuda::CudaOptions;
use crate::cuda::Gpu;
use crate::cuda::engine::{Build, GpuEngine};
use crate::cuda::out_of_core::{Config, GpuPasses, Setup};
use crate::engine::{Engine, Passes};
use crate::plan::Layout;
use crate::plan::planes::Halo;
use crate::plan::slabs::{Slabs, slabs_for};
use crate::report::{Device, RanOn};
use crate::run::drive::{Ran, drive};
use crate::run::jacobi::{Cycles, Jacobi};
use crate::run::job::Job;
use crate::run::monitor::Monitor;
use crate::run::passes::Slabbed;
use crate::run::peers::{Peers, Place};
use crate::run::sweeps::Swept;
use crate::run::tiles::Tiles;
use crate::{Grid, Real, Report, Result, Schedule, SlabProgress, Stencil};

/// Runs `job` on `u` in `place`, on the CPU (`device` `None`) or on a GPU.
pub(crate) fn run<S: Stencil<N>, T: Real, const N: usize, P: Peers>(
    job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    place: Place<'_, P, N>,
    (device, options): (Option<usize>, CudaOptions),
) -> Result<Report> {
    let gpu = place.peers.all_ok(device.map(Gpu::open).transpose())?;
    match job.schedule {
        Schedule::OutOfCore { .. } => out_of_core::<S, T, N, P>(job, u, place, (gpu, options)),
        _ => in_core::<S, T, N, P>(job, u, place, (gpu, options)),
    }
}

/// How the report names the backend.
pub(crate) fn ran_on<P: Peers>(peers: &P, gpu: Option<&Gpu>) -> RanOn {
    let device = match gpu {
        None => Device::Cpu { threads: rayon::current_num_threads() },
        Some(gpu) => Device::Cuda { device: gpu.ordinal, name: gpu.name.clone() },
    };
    RanOn { device, rank: peers.rank_and_size() }
}

/// Buffers for the exchanges of `place`'s planes.
fn halos<T: Real, P, const N: usize>(place: &Place<'_, P, N>) -> Result<(Halo<T>, Halo<T>)> {
    let plane_len = place.plane_len();
    Ok((Halo::for_sent(&place.planes, plane_len)?, Halo::for_sent(&place.planes, plane_len)?))
}

/// A run with the grid held by an engine for the whole run.
fn in_core<S: Stencil<N>, T: Real, const N: usize, P: Peers>(
    job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    place: Place<'_, P, N>,
    (gpu, options): (Option<Gpu>, CudaOptions),
) -> Result<Report> {
    let halos = halos::<T, P, N>(&place)?;
    let described = ran_on(place.peers, gpu.as_ref());
    let (inputs, params, schedule) = (job.inputs.clone(), job.params, job.schedule);
    match gpu {
        None => {
            // A sweep's residual is measured in a second buffer; a check without a tolerance
            // only looks for non-finite values in the grid.
            let second = !S::META.is_sweep() || job.stop.tolerance.is_some();
            let engine = CpuEngine::<S, T, N>::new(u, (inputs, params), schedule, second)?;
            advance(job, engine, (place, halos), (described, None))
        }
        Some(gpu) => {
            let build = Build {
                schedule,
                options,
                jacobi: true,
                alone: !place.planes.has_neighbour(),
                halos: Some((&halos.0, &halos.1)),
            };
            let engine = place.peers.all_ok(GpuEngine::<S, T, N>::new(u, (&inputs, &params), gpu, build))?;
            let jit = engine.jit;
            advance(job, engine, (place, halos), (described, Some((jit.time, jit.origin))))
        }
    }
}

/// Drives `engine` by the schedule's units and reports.
fn advance<S: Stencil<N>, T: Real, const N: usize, P: Peers, E: Engine<T, N>>(
    mut job: Job<'_, '_, S, T, N>,
    engine: E,
    (place, halos): (Place<'_, P, N>, (Halo<T>, Halo<T>)),
    (backend, jit): (RanOn, Option<(std::time::Duration, crate::report::Origin)>),
) -> Result<Report> {
    let meta = S::META;
    let (stop, schedule, global) = (job.stop, job.schedule, place.global);
    let mut monitor = Monitor::for_job(&mut job, Layout::new(meta, global)?.interior_points());
    let exact = schedule.is_exact_blocking(meta);
    let ran = match (meta.sweep.as_ref(), schedule) {
        (Some(sweep), _) => {
            let stencils = [(sweep.directions[0], place.planes.radius)];
            drive::<S, T, N>(&mut monitor, &mut Swept::new(engine, place, halos, stop, &stencils)?)?
        }
        (None, Schedule::Hierarchical { tile, halo, sub }) if !exact && place.planes.has_neighbour() => {
            drive::<S, T, N>(&mut monitor, &mut Tiles::new(engine, place, halos, stop, (tile, halo, sub))?)?
        }
        (None, _) => {
            let cycles = match schedule {
                Schedule::Hierarchical { sub, .. } if exact => Cycles::Exact(sub),
                Schedule::Hierarchical { sub, .. } => Cycles::Inexact(sub),
                _ => Cycles::None,
            };
            drive::<S, T, N>(&mut monitor, &mut Jacobi::new(engine, place, halos, stop, cycles)?)?
        }
    };
    Ok(report::<S, T, N>(monitor, (backend, schedule, global), ran, jit))
}

fn report<S: Stencil<N>, T: Real, const N: usize>(
    monitor: Monitor<'_, '_>,
    (backend, schedule, global): (RanOn, Schedule, [usize; N]),
    ran: Ran,
    jit: Option<(std::time::Duration, crate::report::Origin)>,
) -> Report {
    monitor.into_report::<S, T, N>(backend, schedule, global, (ran.iterations, ran.stop), ran.wall, jit)
}

/// A run of the out-of-core schedule: the grid stays in host memory, streamed through the
/// backend in slabs of the own planes, a pass of at most the exchange depth at a time.
fn out_of_core<S: Stencil<N>, T: Real, const N: usize, P: Peers>(
    mut job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    place: Place<'_, P, N>,
    (gpu, options): (Option<Gpu>, CudaOptions),
) -> Result<Report> {
    let Schedule::OutOfCore { slab, height, inner, device_memory } = job.schedule else {
        unreachable!("an out-of-core schedule")
    };
    let config = Config { slab, height: height.min(place.planes.depth), inner, device_memory };
    let (inputs, params, own) = (job.inputs.clone(), job.params, place.planes.own.clone());
    let described = ran_on(place.peers, gpu.as_ref());
    match &gpu {
        None => {
            let layout = Layout::new(S::META, u.shape())?;
            let arrays = 2 + inputs.iter().flatten().count();
            let skewed = inner == crate::Inner::Skewed;
            let limits = (config.slab, config.device_memory);
            let slabs = slabs_for(&layout, own, config.height, limits, (arrays, T::BYTES), skewed);
            let slabs = place.peers.all_ok(slabs)?;
            let pass = out_of_core::Pass::<S, T, N> {
                slabs: &slabs,
                shape: u.shape(),
                inputs: &inputs,
                params: &params,
                inner,
                fail_after: job.fail_after_slabs,
            };
            let passes = CpuPasses { pass, work: out_of_core::Workspace::new(&slabs)? };
            let (report, _) = passes_of(job, u, place, (passes, slabs.clone()), (described, None))?;
            Ok(report)
        }
        Some(gpu) => {
            let alone = !place.planes.has_neighbour();
            let setup = Setup { alone, model_chooses: job.model_chooses, fail_after: job.fail_after_slabs };
            let passes = GpuPasses::<S, T, N>::new((gpu, &options), u, (inputs, &params), (own, config), setup);
            let passes = place.peers.all_ok(passes)?;
            let slabs = passes.slabs().clone();
            if job.model_chooses && !job.check_every_given {
                // Checked once per pass of the height the model chose, not of the one `Auto` named.
                job.stop.check_every = slabs.height;
            }
            let jit = Some((passes.jit.time, passes.jit.origin));
            let (mut report, (passes, lens)) = passes_of(job, u, place, (passes, slabs), (described, jit))?;
            report.model = passes.model_report(&lens);
            Ok(report)
        }
    }
}

/// Drives `passes` over `slabs` of `u` and reports; gives the passes back with the length of
/// every pass run.
#[allow(clippy::type_complexity)]
fn passes_of<S: Stencil<N>, T: Real, const N: usize, P: Peers, X: Passes<T>>(
    mut job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    place: Place<'_, P, N>,
    (passes, slabs): (X, Slabs),
    (backend, jit): (RanOn, Option<(std::time::Duration, crate::report::Origin)>),
) -> Result<(Report, (X, Vec<usize>))> {
    let (stop, global) = (job.stop, place.global);
    let schedule = slabs.resolved(job.schedule);
    let halos = halos::<T, P, N>(&place)?;
    let mut on_slab = job.on_slab.take();
    let told = on_slab.as_mut().map(|f| &mut **f as &mut dyn FnMut(&SlabProgress));
    let mut monitor = Monitor::for_job(&mut job, Layout::new(S::META, global)?.interior_points());
    let mut runner = Slabbed::new((passes, slabs), u, place, halos, stop, told)?;
    let ran = drive::<S, T, N>(&mut monitor, &mut runner)?;
    let report = report::<S, T, N>(monitor, (backend, schedule, global), ran, jit);
    Ok((report, (runner.passes, runner.lens)))
}
