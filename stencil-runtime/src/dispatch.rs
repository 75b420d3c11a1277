//! From a checked run to the loop: the one place where a run's schedule and backend are
//! matched, its engine built, and the schedule's way of advancing handed to the loop
//! (`run::drive`), in one process or on one MPI rank.

use std::time::Duration;

use crate::cpu::{CpuEngine, CpuPasses, out_of_core};
use crate::cuda::CudaOptions;
use crate::cuda::Gpu;
use crate::cuda::engine::{Build, GpuEngine};
use crate::cuda::out_of_core::{GpuPasses, Setup};
use crate::engine::{Engine, Passes};
use crate::plan::Layout;
use crate::plan::fill::{Edges, Fill};
use crate::plan::planes::Exchange;
use crate::plan::slabs::{Arrays, Config, Slabs, slabs_for};
use crate::report::{Device, Origin, RanOn};
use crate::run::drive::drive;
use crate::run::jacobi::{Cycles, Jacobi};
use crate::run::job::Job;
use crate::run::monitor::Monitor;
use crate::run::passes::Slabbed;
use crate::run::peers::{Peers, Place};
use crate::run::sweeps::Swept;
use crate::run::tiles::Tiles;
use crate::schedule::CycleSizes;
use crate::{Boundaries, Grid, Real, Report, Result, Schedule, SlabProgress, Stencil};

/// Runs `job` on `u` in `place`, on the CPU (`device` `None`) or on a GPU.
pub(crate) fn run<S: Stencil<N>, T: Real, const N: usize, P: Peers>(
    job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    place: Place<'_, P, N>,
    device: Option<usize>,
    options: CudaOptions,
) -> Result<Report> {
    let gpu = place.peers.all_ok(device.map(Gpu::open).transpose())?;
    match job.schedule {
        Schedule::OutOfCore { .. } => out_of_core::<S, T, N, P>(job, u, place, gpu, options),
        _ => in_core::<S, T, N, P>(job, u, place, gpu, options),
    }
}

/// How the report names the backend.
pub(crate) fn ran_on<P: Peers>(peers: &P, gpu: Option<&Gpu>) -> RanOn {
    let device = match gpu {
        None => Device::Cpu { threads: rayon::current_num_threads() },
        Some(gpu) => Device::Cuda { device: gpu.ordinal, name: gpu.name.clone() },
    };
    RanOn { device, rank: peers.rank_and_size(), nccl: false }
}

/// Where a run went, for its report: the device and rank, and on a GPU the time taken to
/// get the kernels and where they came from.
struct Described {
    on: RanOn,
    jit: Option<(Duration, Origin)>,
}

/// Buffers for the exchanges of `place`'s planes, of every unknown of `S`.
fn halos<S: Stencil<N>, T: Real, P, const N: usize>(place: &Place<'_, P, N>) -> Result<Exchange<T>> {
    Exchange::for_planes(&place.planes, unknowns_plane::<S, P, N>(place))
}

/// The values of one plane of every unknown of `S` in `place`.
fn unknowns_plane<S: Stencil<N>, P, const N: usize>(place: &Place<'_, P, N>) -> usize {
    place.plane_len() * S::META.unknowns.len()
}

/// The boundary fill of `place`'s local grid of `shape` under `boundaries`: the outer
/// layers of axis 0 only where the grid's ends are (not at a rank's ghost planes).
fn fill_of<S: Stencil<N>, P, const N: usize>(
    boundaries: Boundaries<N>,
    place: &Place<'_, P, N>,
    shape: [usize; N],
) -> Fill<N> {
    let radius = std::array::from_fn(|a| S::META.radius[a]);
    let edges = Edges { low: place.planes.below.is_none(), high: place.planes.above.is_none() };
    Fill { boundaries, radius, shape, edges }
}

/// A run with the grid held by an engine for the whole run.
fn in_core<S: Stencil<N>, T: Real, const N: usize, P: Peers>(
    mut job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    place: Place<'_, P, N>,
    gpu: Option<Gpu>,
    options: CudaOptions,
) -> Result<Report> {
    // Sweeps pass their planes along through the host (`run/sweeps/`); Jacobi iterations
    // on GPU ranks may send theirs device to device.
    let link = match S::META.is_sweep() {
        true => None,
        false => place.peers.device_link(gpu.as_ref(), place.transport)?,
    };
    let (halos, sides) = match link {
        // The planes then never pass through the host buffers.
        Some(_) => (Exchange::default(), Exchange::<T>::sides(&place.planes, unknowns_plane::<S, P, N>(&place))),
        None => (halos::<S, T, P, N>(&place)?, (0, 0)),
    };
    let on = RanOn { nccl: link.is_some(), ..ran_on(place.peers, gpu.as_ref()) };
    let (inputs, params, schedule) = (job.inputs.clone(), job.params, job.schedule);
    let boundary = fill_of::<S, P, N>(job.boundaries, &place, u.shape());
    let fill = boundary.whole();
    let more = std::mem::take(&mut job.more);
    match gpu {
        None => {
            // A sweep's residual is measured in a second buffer; a check without a tolerance
            // only looks for non-finite values in the grid.
            let second = !S::META.is_sweep() || job.stop.tolerance.is_some();
            let engine = CpuEngine::<S, T, N>::new(u, inputs, params, schedule, second)?
                .with_fill(boundary)
                .with_unknowns(more)?;
            advance(job, engine, place, halos, Described { on, jit: None })
        }
        Some(gpu) => {
            let build = Build {
                schedule,
                options,
                jacobi: true,
                alone: !place.planes.has_neighbour(),
                halos: Some(&halos),
                fill,
                cycle_edges: boundary.cycle_edges(&(0..u.shape()[0])).flags(S::KERNELS.axes),
            };
            let engine = GpuEngine::<S, T, N>::new(u, &inputs, &params, gpu, build)
                .and_then(|e| e.with_unknowns(more))
                .and_then(|e| e.with_link(link, sides))
                .map(|e| e.with_edges(boundary));
            let engine = place.peers.all_ok(engine)?;
            let jit = Some((engine.jit.time, engine.jit.origin));
            advance(job, engine, place, halos, Described { on, jit })
        }
    }
}

/// Drives `engine` by the schedule's units and reports.
fn advance<S: Stencil<N>, T: Real, const N: usize, P: Peers, E: Engine<T, N>>(
    mut job: Job<'_, '_, S, T, N>,
    engine: E,
    place: Place<'_, P, N>,
    halos: Exchange<T>,
    described: Described,
) -> Result<Report> {
    let meta = S::META;
    let (stop, schedule, global, boundaries) = (job.stop, job.schedule, place.global, job.boundaries);
    let observer = job.observer.take();
    let mut monitor = Monitor::for_job(&mut job, Layout::new(meta, global)?.interior_points());
    let exact = schedule.is_exact_blocking(meta);
    let ran = match (meta.sweep.as_ref(), schedule) {
        (Some(sweep), _) => {
            let stencils = [(sweep.directions[0], place.planes.radius)];
            let radius = std::array::from_fn(|a| meta.radius[a]);
            let mut swept = Swept::new(engine, place, halos, stop, &stencils)?.with_boundaries(&boundaries, radius)?;
            drive::<S, T, N>(&mut monitor, &mut swept, observer)?
        }
        (None, Schedule::Hierarchical { tile, halo, sub }) if !exact && place.planes.has_neighbour() => {
            let tiles = CycleSizes { tile, halo, sub };
            drive::<S, T, N>(&mut monitor, &mut Tiles::new(engine, place, halos, stop, tiles)?, observer)?
        }
        (None, _) => {
            let cycles = match schedule {
                Schedule::Hierarchical { sub, .. } | Schedule::Streaming { sub, .. } if exact => Cycles::Exact(sub),
                Schedule::Hierarchical { sub, .. } => Cycles::Inexact(sub),
                _ => Cycles::None,
            };
            drive::<S, T, N>(&mut monitor, &mut Jacobi::new(engine, place, halos, stop, cycles)?, observer)?
        }
    };
    Ok(monitor.into_report::<S, T, N>(described.on, schedule, global, ran, described.jit))
}

/// A run of the out-of-core schedule: the grid stays in host memory, streamed through the
/// backend in slabs of the own planes, a pass of at most the exchange depth at a time.
fn out_of_core<S: Stencil<N>, T: Real, const N: usize, P: Peers>(
    mut job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    place: Place<'_, P, N>,
    gpu: Option<Gpu>,
    options: CudaOptions,
) -> Result<Report> {
    let Schedule::OutOfCore { slab, height, inner, device_memory } = job.schedule else {
        unreachable!("an out-of-core schedule")
    };
    let own = place.planes.own.clone();
    let fill = fill_of::<S, P, N>(job.boundaries, &place, u.shape());
    // A periodic axis 0 in one process wraps from the last slab to the first: each pass then
    // runs one iteration, after the grid's own outer planes are filled on the host.
    let wraps = fill.wraps_axis0();
    if wraps && height > 1 {
        log::warn!(
            "`{}`: out-of-core passes of a periodic axis 0 run one iteration each (height 1, not {height}): the \
             first slab reads the last slab's planes at every iteration",
            S::META.name
        );
    }
    let height = if wraps { 1 } else { height.min(place.planes.depth) };
    let config = Config { own, slab, height, inner, device_memory };
    // The model chooses no height for them.
    job.model_chooses &= !wraps;
    let (inputs, params) = (job.inputs.clone(), job.params);
    let on = ran_on(place.peers, gpu.as_ref());
    let shape = u.shape();
    let mut grids: Vec<&mut Grid<T, N>> = std::iter::once(u).chain(std::mem::take(&mut job.more)).collect();
    match &gpu {
        None => {
            let layout = Layout::new(S::META, shape)?;
            let arrays = Arrays::of::<S, N>(inputs.iter().flatten().count());
            let slabs = slabs_for(&layout, config.own.clone(), config.request(), arrays, T::BYTES);
            let slabs = place.peers.all_ok(slabs)?;
            let pass = out_of_core::Pass::<S, T, N> {
                slabs: &slabs,
                shape,
                inputs: &inputs,
                params: &params,
                inner,
                fill,
                fail_after: job.fail_after_slabs,
            };
            let passes = CpuPasses { pass, work: out_of_core::Workspace::new(&slabs, arrays.unknowns)? };
            let streamed = Streamed { passes, slabs: slabs.clone() };
            let (report, _) = passes_of(job, grids, place, streamed, Described { on, jit: None })?;
            Ok(report)
        }
        Some(gpu) => {
            let alone = !place.planes.has_neighbour();
            let setup = Setup { alone, model_chooses: job.model_chooses, fail_after: job.fail_after_slabs, fill };
            let passes = GpuPasses::<S, T, N>::new(gpu, &options, &mut grids, inputs, &params, config, setup);
            let passes = place.peers.all_ok(passes)?;
            let slabs = passes.slabs().clone();
            if let Schedule::OutOfCore { inner, .. } = &mut job.schedule {
                // The report names the inner iterations that ran (the model's, for `Auto`).
                *inner = passes.inner();
            }
            if job.model_chooses && !job.check_every_given {
                // Checked once per pass of the height the model chose, not of the one `Auto` named.
                job.stop.check_every = slabs.height;
            }
            let described = Described { on, jit: Some((passes.jit.time, passes.jit.origin)) };
            let (mut report, ran) = passes_of(job, grids, place, Streamed { passes, slabs }, described)?;
            report.model = ran.passes.model_report(&ran.lens);
            Ok(report)
        }
    }
}

/// Out-of-core passes and the slabs they run over.
struct Streamed<X> {
    passes: X,
    slabs: Slabs,
}

/// The passes of a finished out-of-core run, with the length of every pass run.
struct PassesRun<X> {
    passes: X,
    lens: Vec<usize>,
}

/// Drives `streamed`'s passes over its slabs of `grids` (every unknown's, declaration order)
/// and reports; gives the passes back with the length of every pass run.
fn passes_of<S: Stencil<N>, T: Real, const N: usize, P: Peers, X: Passes<T>>(
    mut job: Job<'_, '_, S, T, N>,
    grids: Vec<&mut Grid<T, N>>,
    place: Place<'_, P, N>,
    streamed: Streamed<X>,
    described: Described,
) -> Result<(Report, PassesRun<X>)> {
    let Streamed { passes, slabs } = streamed;
    let (stop, global) = (job.stop, place.global);
    let schedule = slabs.resolved(job.schedule);
    let halos = halos::<S, T, P, N>(&place)?;
    let mut on_slab = job.on_slab.take();
    let observer = job.observer.take();
    let told = on_slab.as_mut().map(|f| &mut **f as &mut dyn FnMut(&SlabProgress));
    let mut monitor = Monitor::for_job(&mut job, Layout::new(S::META, global)?.interior_points());
    let boundary = fill_of::<S, P, N>(job.boundaries, &place, grids[0].shape());
    let (whole, wrap) = (boundary.whole(), boundary.axis0_wrap());
    let layout = Layout::new(S::META, grids[0].shape())?;
    let mut runner =
        Slabbed::new(passes, slabs, grids, place, halos, stop, told)?.with_fill(whole, wrap).with_layout(layout);
    let ran = drive::<S, T, N>(&mut monitor, &mut runner, observer)?;
    let report = monitor.into_report::<S, T, N>(described.on, schedule, global, ran, described.jit);
    Ok((report, PassesRun { passes: runner.passes, lens: runner.lens }))
}
