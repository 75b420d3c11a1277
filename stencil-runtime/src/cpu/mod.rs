//! The rayon CPU twin: every schedule of the project, run on the host.

pub(crate) mod hierarchical;
pub(crate) mod out_of_core;
mod plain;
mod sweep;

pub use plain::Difference;
#[cfg(feature = "mpi")]
pub(crate) use plain::apply as plain_apply;

use crate::plan::Layout;
use crate::run::monitor::Monitor;
use crate::report::StopReason;
use crate::plan::slabs::Slabs;
use crate::solver::Job;
use crate::{Backend, Error, Grid, Real, Report, Result, Schedule, SlabProgress, Stencil, Tolerance};

/// Runs `job` on the CPU. Validation is done by the caller except for the grid size.
pub(crate) fn run<S: Stencil<N>, T: Real, const N: usize>(
    mut job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
) -> Result<Report> {
    let meta = S::META;
    let layout = Layout::new(meta, u.shape())?;
    if let Schedule::Hierarchical { tile, halo, sub } = job.schedule {
        let cycle = hierarchical::Cycle::new(&layout, tile, halo, sub);
        return run_cycles(job, u, &layout, cycle);
    }
    if let Schedule::OutOfCore { slab, height, inner, device_memory } = job.schedule {
        let arrays = 2 + job.inputs.iter().flatten().count();
        let interior = layout.radius[0]..layout.shape[0] - layout.radius[0];
        let skewed = inner == crate::Inner::Skewed;
        let slabs = slabs_for(&layout, interior, height, (slab, device_memory), (arrays, T::BYTES), skewed)?;
        return run_slabs(job, u, &layout, &slabs, inner);
    }
    let stop = job.stop;
    // A second buffer: the Jacobi target, or where a sweep's residual is measured. It
    // starts as a copy so that its boundary layer holds the Dirichlet values.
    // Allocated before the clock starts, so that reports time the iterations alone.
    let mut scratch = match !meta.is_sweep() || stop.tolerance.is_some() {
        true => Some(second_buffer(u)?),
        false => None,
    };
    let points = layout.interior_points();
    let mut monitor = Monitor::for_job(&mut job, points);
    let mut iteration = monitor.first_iteration();
    let stop_reason = loop {
        if stop.max_iterations.is_some_and(|max| iteration >= max) {
            break StopReason::IterationLimit;
        }
        iteration += 1;
        let check = stop.checks_at(iteration);
        let difference = if meta.is_sweep() {
            if iteration == 1 && matches!(stop.tolerance, Some(Tolerance::Relative { .. })) {
                // The reference ρ(u⁰) must be measured before the first sweep changes u.
                let d = residual::<S, T, N>(&layout, &job, u, &mut scratch);
                monitor.set_reference(d.max_abs, d.sum_sq.sqrt());
            }
            let fields = job.inputs.iter().map(|f| f.unwrap_or(&[])).collect::<Vec<_>>();
            sweep_once::<S, T, N>(&layout, u.as_mut_slice(), &fields, &job.params, job.schedule);
            match (check, stop.tolerance) {
                (false, _) => None,
                (true, Some(_)) => Some(residual::<S, T, N>(&layout, &job, u, &mut scratch)),
                (true, None) => Some(Difference {
                    max_abs: f64::NAN,
                    sum_sq: f64::NAN,
                    first_non_finite: u.first_non_finite().map(|(index, _)| flat(&layout, index)),
                }),
            }
        } else {
            let Some(target) = scratch.as_mut() else { unreachable!("Jacobi runs allocate their second buffer") };
            let fields = fields_with(&job.inputs, meta.unknown, u.as_slice());
            let d = plain::apply::<S, T, N>(&layout, &fields, target, &job.params, check);
            u.swap_data(target);
            d
        };
        monitor.holds(iteration);
        let Some(d) = difference else { continue };
        if let Some(at) = d.first_non_finite {
            return Err(stop.non_finite(u, at, iteration));
        }
        let measured = (!d.max_abs.is_nan()).then(|| (d.max_abs, d.sum_sq.sqrt()));
        if monitor.check_and_save::<S, T, N>(iteration, measured, (u, iteration), |_| Ok(()))? {
            break StopReason::Converged;
        }
    };
    let wall = monitor.elapsed();
    let _ = job.stencil;
    Ok(monitor.into_report::<S, T, N>(
        Backend::Cpu.to_string(),
        job.schedule,
        u.shape(),
        (iteration, stop_reason),
        wall,
        None,
    ))
}

/// One sweep of a sweep stencil in place: the rayon wavefront for `Wavefront { tile }`, the
/// sequential sweep in declared order otherwise (the same values). `fields` holds every
/// field in declaration order; the unknown's entry is not read.
pub(crate) fn sweep_once<S: Stencil<N>, T: Real, const N: usize>(
    layout: &Layout<N>,
    u: &mut [T],
    fields: &[&[T]],
    params: &S::Params<T>,
    schedule: Schedule,
) {
    match schedule {
        Schedule::Wavefront { tile } => sweep::wavefront::<S, T, N>(layout, u, fields, params, tile),
        _ => sweep::sequential::<S, T, N>(layout, u, fields, params),
    }
}

/// Runs a Jacobi stencil by cycles of hierarchical subiterations. A cycle whose iterations
/// include a checked one measures ρ of the iterate it starts from (its first subiteration
/// is one plain application on every core point) and is recorded, as in the plain loop, at
/// the iteration after that iterate; it also looks for non-finite values in the iterate it
/// produces. The last cycle is shortened to the iteration limit.
fn run_cycles<S: Stencil<N>, T: Real, const N: usize>(
    mut job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    layout: &Layout<N>,
    cycle: hierarchical::Cycle<N>,
) -> Result<Report> {
    let meta = S::META;
    let stop = job.stop;
    let mut target = second_buffer(u)?;
    let points = layout.interior_points();
    let mut monitor = Monitor::for_job(&mut job, points);
    let mut iteration = monitor.first_iteration();
    let exact = job.schedule.is_exact_blocking(meta);
    let stop_reason = loop {
        let Some(plan) = stop.next_cycle(iteration, cycle.sub, exact) else { break StopReason::IterationLimit };
        iteration += plan.len;
        let fields = fields_with(&job.inputs, meta.unknown, u.as_slice());
        let this = hierarchical::Cycle { sub: plan.len, ..cycle };
        let difference =
            hierarchical::cycle::<S, T, N>(layout, &this, &fields, &mut target, &job.params, plan.measure_step)?;
        u.swap_data(&mut target);
        monitor.holds(iteration);
        let Some(d) = difference else { continue };
        if let Some(at) = d.first_non_finite {
            return Err(stop.non_finite(u, at, iteration));
        }
        if monitor.check_and_save::<S, T, N>(
            plan.record_at,
            Some((d.max_abs, d.sum_sq.sqrt())),
            (u, iteration),
            |_| Ok(()),
        )? {
            break StopReason::Converged;
        }
    };
    let wall = monitor.elapsed();
    Ok(monitor.into_report::<S, T, N>(
        Backend::Cpu.to_string(),
        job.schedule,
        u.shape(),
        (iteration, stop_reason),
        wall,
        None,
    ))
}

/// The slabs of an out-of-core run over the planes `own` (the interior, or a rank's own
/// planes): `slab` planes, or the widest that fits `device_memory` (with `arrays` chunk
/// buffers per slot), or all of `own`. The limit bounds the slab
/// buffers (two slots of `arrays` chunks, and the carry); an explicit `slab` whose buffers
/// exceed it is an error too, on every backend.
pub(crate) fn slabs_for<const N: usize>(
    layout: &Layout<N>,
    own: std::ops::Range<usize>,
    height: usize,
    (slab, device_memory): (Option<usize>, Option<usize>),
    (arrays, elem): (usize, usize),
    skewed: bool,
) -> Result<Slabs> {
    let planes = layout.shape[0];
    let radius = layout.radius[0];
    let plane_len: usize = layout.shape[1..].iter().product();
    let slabs_of = |width| Slabs::over(own.clone(), planes, radius, plane_len, height, width).skew(skewed);
    let too_large = |slabs: Slabs, limit| Error::DeviceMemory {
        needed: slabs.buffer_bytes(arrays, elem),
        limit,
        reason: slabs.describe_buffers(arrays),
    };
    let width = match (slab, device_memory) {
        (Some(width), _) => width,
        (None, Some(limit)) => {
            Slabs::widest(limit, (own.clone(), planes, radius, plane_len), height, arrays, elem, skewed)
                .ok_or_else(|| too_large(slabs_of(1), limit))?
        }
        (None, None) => own.len(),
    };
    let slabs = slabs_of(width);
    match device_memory {
        Some(limit) if slabs.buffer_bytes(arrays, elem) > limit => Err(too_large(slabs, limit)),
        _ => Ok(slabs),
    }
}

/// Runs a Jacobi stencil by passes of the out-of-core pyramid over `slabs`, with the
/// stopping rules of an exact hierarchical schedule: a pass ends at the first checked
/// iteration it reaches and measures in its last iteration, so checks, residuals, the
/// stopping iteration and the iterate are `Plain`'s.
fn run_slabs<S: Stencil<N>, T: Real, const N: usize>(
    mut job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    layout: &Layout<N>,
    slabs: &Slabs,
    inner: crate::Inner,
) -> Result<Report> {
    let stop = job.stop;
    let mut work = out_of_core::Workspace::new(slabs)?;
    let mut monitor = Monitor::for_job(&mut job, layout.interior_points());
    let mut on_slab = job.on_slab.take();
    let pass = out_of_core::Pass::<S, T, N> {
        slabs,
        shape: layout.shape,
        inputs: &job.inputs,
        params: &job.params,
        inner,
        fail_after: job.fail_after_slabs,
    };
    let mut iteration = monitor.first_iteration();
    let stop_reason = loop {
        let Some(plan) = stop.next_cycle(iteration, slabs.height, true) else { break StopReason::IterationLimit };
        iteration += plan.len;
        let pass_start = iteration - plan.len;
        let mut written = |slab| {
            if let Some(callback) = on_slab.as_mut() {
                let elapsed = monitor.elapsed();
                callback(&SlabProgress { pass_start, pass_end: iteration, slab, slabs: slabs.own.len(), elapsed });
            }
        };
        let difference = pass
            .run(u.as_mut_slice(), &mut work, (plan.len, plan.measure_step.is_some()), &mut written, None)
            .map_err(|(written, e)| slabs.interrupted(pass_start..iteration, written, monitor.last_checkpoint(), e))?;
        monitor.holds(iteration);
        let Some(d) = difference else { continue };
        if let Some(at) = d.first_non_finite {
            return Err(stop.non_finite(u, at, iteration));
        }
        if monitor.check_and_save::<S, T, N>(
            plan.record_at,
            Some((d.max_abs, d.sum_sq.sqrt())),
            (u, iteration),
            |_| Ok(()),
        )? {
            break StopReason::Converged;
        }
    };
    let wall = monitor.elapsed();
    Ok(monitor.into_report::<S, T, N>(
        Backend::Cpu.to_string(),
        slabs.resolved(job.schedule),
        u.shape(),
        (iteration, stop_reason),
        wall,
        None,
    ))
}

/// Fields in parameter order, with `unknown` at its place.
fn fields_with<'a, T>(inputs: &[Option<&'a [T]>], index: usize, unknown: &'a [T]) -> Vec<&'a [T]> {
    inputs.iter().enumerate().map(|(i, f)| if i == index { unknown } else { f.unwrap_or(&[]) }).collect()
}

/// The iterate's second buffer (the Jacobi target, or where a sweep's residual is measured):
/// a copy of `u`, so that its boundary layer holds the Dirichlet values.
pub(crate) fn second_buffer<T: Real, const N: usize>(u: &Grid<T, N>) -> Result<Vec<T>> {
    crate::memory::copy_of(u.as_slice(), || format!("the solver's second buffer (shape {:?}, {})", u.shape(), T::NAME))
}

/// ρ(u) = ‖S(u) − u‖ by one plain application into `scratch` (allocated for every run
/// with a tolerance).
fn residual<S: Stencil<N>, T: Real, const N: usize>(
    layout: &Layout<N>,
    job: &Job<'_, '_, S, T, N>,
    u: &Grid<T, N>,
    scratch: &mut Option<Vec<T>>,
) -> Difference {
    let Some(target) = scratch.as_mut() else { unreachable!("runs with a tolerance allocate a second buffer") };
    let fields = fields_with(&job.inputs, S::META.unknown, u.as_slice());
    plain::apply::<S, T, N>(layout, &fields, target, &job.params, true).expect("measured")
}

fn flat<const N: usize>(layout: &Layout<N>, index: [usize; N]) -> usize {
    (0..N).map(|a| index[a] * layout.strides[a]).sum()
}
