//! The GPU backend's loop for sweep stencils (`Schedule::Wavefront`, and `Plain`, which is
//! the same sweep): one launch of the generated `_wavefront` kernel per sweep, in place on
//! one device buffer, and the residual measured by the `_plain_measure` kernel into the
//! second buffer, as the CPU twin measures it.
//!
//! The kernel runs *pencils*: a pencil is the set of points whose skewed coordinates
//! (z₁, z₂) lie in one tile of `tile` (× `tile`) lanes, marched along z₀ by one block. Its
//! ready flag counts the planes it has stored; the pencils a pencil reads new values from
//! are those before it on each lane axis, and it waits for their flags. Blocks take pencils
//! from a ticket counter in tile-hyperplane order (p₁ + p₂ ascending), so every pencil waited
//! for belongs to a block that is already running: the launch cannot deadlock however many
//! blocks fit on the device at once.

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchConfig, PushKernelArg};

use super::device::{Gpu, driver_error};
use super::nvrtc::Mode;
use std::sync::Arc;
use std::time::Instant;

use super::run::{DeviceState, JitTime, Scalars, as_3d, load_module, plain_config, plain_shape};
use crate::plan::Layout;
use crate::run::monitor::Monitor;
use crate::report::StopReason;
use crate::solver::Job;
use crate::{Direction, Error, Grid, Real, Report, Result, Schedule, Stencil, StencilMeta, Tolerance};

/// Environment variable overriding the planes between two ready flags (default: the tile
/// edge, so that flags are per tile of `tile` × `tile` points); for tuning.
pub const CHUNK_VAR: &str = "STENCIL_CUDA_WAVEFRONT_CHUNK";

/// Threads per block that load and store the windows: a tile of fewer lanes gets helper
/// warps, so that a boundary's loads are in flight together.
const HELPED_THREADS: usize = 256;

/// A stencil's sweep on its own axes padded to three, as the kernel sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pencils {
    /// The stencil's number of axes.
    pub dim: usize,
    /// Extents with the boundary layer, a missing axis having one point.
    pub extents: [usize; 3],
    /// Lanes per tile on axes 1 and 2 (1 on a missing axis).
    pub lanes: [usize; 2],
    /// Pencils on axes 1 and 2.
    pub count: [usize; 2],
    /// Planes between two ready flags.
    pub chunk: usize,
    /// Planes of the shared-memory window.
    pub window: usize,
    /// Bytes of the shared-memory window.
    pub shared_bytes: usize,
    /// (p₁, p₂) in the order blocks take them.
    pub order: Vec<i32>,
}

/// The radius of the reads (of every field) in the skewed coordinates z₀ = x'₀,
/// zₖ = x'ₖ + cₖ·zₖ₋₁ (x' oriented by the sweep's directions), per own axis: the halo of
/// the kernel's windows.
pub(crate) fn z_radius(meta: &StencilMeta) -> [usize; 3] {
    let sweep = meta.sweep.as_ref().expect("a sweep stencil");
    let mut radius = [0usize; 3];
    for read in meta.reads {
        let mut z = [0i64; 3];
        for k in 0..meta.dim {
            let sign = if sweep.directions[k] == Direction::Descending { -1 } else { 1 };
            z[k] = read.offset[k] as i64 * sign + if k > 0 { sweep.skew[k] as i64 * z[k - 1] } else { 0 };
            radius[k] = radius[k].max(z[k].unsigned_abs() as usize);
        }
    }
    radius
}

impl Pencils {
    /// The pencils of a grid of `shape` for tiles of `tile` lanes per axis, checked against
    /// the device's limits (`max_threads`, `max_shared` bytes per block).
    pub(crate) fn new<S: Stencil<N>, T: Real, const N: usize>(
        shape: [usize; N],
        tile: usize,
        chunk: Option<usize>,
        (max_threads, max_shared): (usize, usize),
    ) -> Result<Self> {
        let meta = S::META;
        let sweep = meta.sweep.as_ref().expect("a sweep stencil");
        let fail = |reason: String| Error::Launch { kernel: format!("{}_wavefront", meta.name), reason };
        let extents: [usize; 3] = std::array::from_fn(|k| shape.get(k).copied().unwrap_or(1));
        let radius: [usize; 3] = std::array::from_fn(|k| meta.radius.get(k).copied().unwrap_or(0));
        let interior: [usize; 3] = std::array::from_fn(|k| extents[k] - 2 * radius[k]);
        let skew: [usize; 3] = std::array::from_fn(|k| sweep.skew.get(k).copied().unwrap_or(0) as usize);
        if interior.iter().zip(&extents).any(|(&i, _)| i > i32::MAX as usize / (2 + skew.iter().sum::<usize>()))
            || extents.iter().product::<usize>() > i64::MAX as usize
        {
            return Err(fail("the grid's axes are too long for the kernel's `int` coordinates".into()));
        }
        // The largest z₁ and z₂ of an interior point: the pencils cover [0, z_max] on each.
        let z1_max = interior[1] - 1 + skew[1] * (interior[0] - 1);
        let z2_max = interior[2] - 1 + skew[2] * z1_max;
        let lanes = [if N >= 2 { tile } else { 1 }, if N >= 3 { tile } else { 1 }];
        if lanes[0].saturating_mul(lanes[1]) > max_threads {
            let largest = if N >= 3 { max_threads.isqrt() } else { max_threads };
            return Err(fail(format!(
                "a tile of {tile} lanes per axis needs {} threads per block, and the device allows {max_threads}: \
                 use a tile of at most {largest}",
                lanes[0].saturating_mul(lanes[1])
            )));
        }
        let chunk = chunk.unwrap_or(tile).max(1);
        let z_radius = z_radius(meta);
        let lag = lanes[0] - 1 + lanes[1] - 1;
        // The unknown and every read-only field that is read (the kernel's staged fields).
        let staged = 1
            + (0..meta.fields.len()).filter(|&f| f != meta.unknown && meta.reads.iter().any(|r| r.field == f)).count();
        let plane_bytes = staged * (lanes[0] + 2 * z_radius[1]) * (lanes[1] + 2 * z_radius[2]) * T::BYTES;
        // The planes the kernel needs; rounded up to a power of two (a slot is then a mask
        // rather than a division) where that still fits.
        let needed = chunk + lag + 2 * z_radius[0] + 1;
        let window =
            if needed.next_power_of_two() * plane_bytes <= max_shared { needed.next_power_of_two() } else { needed };
        let shared_bytes = window * plane_bytes;
        if shared_bytes > max_shared {
            return Err(fail(format!(
                "the windows of a tile of {tile} lanes ({staged} fields, {window} planes of {} × {} points each) \
                 need {shared_bytes} B of shared memory, and the device allows {max_shared} B per block: use a \
                 smaller tile",
                lanes[0] + 2 * z_radius[1],
                lanes[1] + 2 * z_radius[2]
            )));
        }
        let count = [(z1_max + 1).div_ceil(lanes[0]), (z2_max + 1).div_ceil(lanes[1])];
        let mut pencils: Vec<[usize; 2]> = (0..count[0]).flat_map(|p1| (0..count[1]).map(move |p2| [p1, p2])).collect();
        // Tile-hyperplane order: every pencil comes after those it waits for.
        pencils.sort_by_key(|&[p1, p2]| (p1 + p2, p1));
        let order = pencils.iter().flat_map(|p| p.map(|x| x as i32)).collect();
        Ok(Self { dim: N, extents, lanes, count, chunk, window, shared_bytes, order })
    }

    fn config(&self) -> LaunchConfig {
        let lanes = self.lanes[0] * self.lanes[1];
        // Helper threads (threadIdx.y > 0 in 1-D and 2-D, threadIdx.z > 0 in 3-D, at most 64
        // there) load and store the windows with the lanes.
        let helpers = (HELPED_THREADS / lanes).max(1) as u32;
        LaunchConfig {
            grid_dim: ((self.count[0] * self.count[1]) as u32, 1, 1),
            // The last lane axis is threadIdx.x (contiguous in memory), the first threadIdx.y.
            block_dim: if self.dim == 3 {
                (self.lanes[1] as u32, self.lanes[0] as u32, helpers.min(64))
            } else {
                (self.lanes[0] as u32, helpers, 1)
            },
            shared_mem_bytes: self.shared_bytes as u32,
        }
    }
}

/// Runs a sweep stencil on the GPU: `Wavefront { tile }` with that tile, `Plain` (the
/// sequential sweep, the same values) with the default tile.
pub(crate) fn run<S: Stencil<N>, T: Real, const N: usize>(
    mut job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    gpu: &Gpu,
    device: usize,
    layout: &Layout<N>,
    mode: Mode,
) -> Result<Report> {
    let meta = S::META;
    let (pencils, module, sweep, jit) = sweep_kernel::<S, T, N>(gpu, mode, u.shape(), tile_of(meta, job.schedule)?)?;
    let dims = as_3d(&u.shape(), 1);
    let radius = as_3d(meta.radius, 0);
    // The module holds the measuring kernel too, compiled with the same launch shape.
    let measure = module
        .load_function(&format!("{}_plain_measure", meta.name))
        .map_err(driver_error("finding a kernel in the module"))?;
    let measure_cfg = plain_config::<S, N>(gpu, dims, radius, plain_shape::<N>()?)?;
    let (x, y, z) = measure_cfg.grid_dim;
    let mut state = DeviceState::upload(gpu, &job, u, dims, x as usize * y as usize * z as usize)?;
    let mut flags = Flags::new(gpu, &gpu.stream, &pencils)?;
    let stop = job.stop;
    let mut monitor = Monitor::for_job(&mut job, layout.interior_points());
    let mut iteration = monitor.first_iteration();
    let stop_reason = loop {
        if stop.max_iterations.is_some_and(|max| iteration >= max) {
            break StopReason::IterationLimit;
        }
        iteration += 1;
        if iteration == 1 && matches!(stop.tolerance, Some(Tolerance::Relative { .. })) {
            // The reference ρ(u⁰) must be measured before the first sweep changes u.
            let (max, l2) = measure_residual(gpu, &mut state, (&measure, measure_cfg), u, (0, stop))?;
            monitor.set_reference(max, l2);
        }
        let inputs = read_only(&state.inputs);
        let args = (&mut state.current.as_view_mut(), &inputs[..], &state.scalars);
        launch_sweep(&gpu.stream, args, &mut flags, &pencils, &sweep)?;
        if !stop.checks_at(iteration) {
            continue;
        }
        let measured = measure_residual(gpu, &mut state, (&measure, measure_cfg), u, (iteration, stop))?;
        let measured = stop.tolerance.is_some().then_some(measured);
        if monitor.check_and_save::<S, T, N>(iteration, measured, (u, iteration), |u| state.copy_to_host(gpu, u))? {
            break StopReason::Converged;
        }
    };
    state.finish(gpu, &job, u, device, monitor, (iteration, stop_reason), jit)
}

/// The ready flags and the ticket counter, zeroed before every sweep.
pub(super) struct Flags {
    order: CudaSlice<i32>,
    progress: CudaSlice<i32>,
    ticket: CudaSlice<u32>,
}

impl Flags {
    /// The flags of `pencils`, allocated on `stream`.
    pub(super) fn new(gpu: &Gpu, stream: &Arc<CudaStream>, pencils: &Pencils) -> Result<Self> {
        Ok(Self {
            order: gpu.upload(stream, &pencils.order, "the wavefront's pencil order")?,
            progress: gpu.alloc_zeros(stream, pencils.count[0] * pencils.count[1], "the wavefront's ready flags")?,
            ticket: gpu.alloc_zeros(stream, 1, "the wavefront's ticket")?,
        })
    }
}

/// A sweep's unknown, its read-only fields in declaration order and scalars: windows of
/// the same planes.
pub(super) type SweepArgs<'a, 'b, T> = (&'a mut CudaViewMut<'b, T>, &'a [CudaView<'b, T>], &'a Scalars<T>);

/// One sweep in place on `u` (a grid, or a window of planes of one seen as a grid of its
/// own), queued on `stream`; `inputs` holds the read-only fields in declaration order.
pub(super) fn launch_sweep<T: Real>(
    stream: &Arc<CudaStream>,
    (u, inputs, scalars): SweepArgs<'_, '_, T>,
    flags: &mut Flags,
    pencils: &Pencils,
    kernel: &CudaFunction,
) -> Result<()> {
    stream.memset_zeros(&mut flags.progress).map_err(driver_error("clearing the ready flags"))?;
    stream.memset_zeros(&mut flags.ticket).map_err(driver_error("clearing the ready flags"))?;
    let [n0, n1, n2] = pencils.extents.map(|n| n as i64);
    let pencils2 = pencils.count[1] as i32;
    let mut launch = stream.launch_builder(kernel);
    launch.arg(u);
    for input in inputs {
        launch.arg(input);
    }
    launch.arg(&n0).arg(&n1).arg(&n2);
    scalars.push(&mut launch);
    launch.arg(&flags.order).arg(&mut flags.progress).arg(&mut flags.ticket).arg(&pencils2);
    // SAFETY: the arguments match `<name>_wavefront`'s signature, generated from the same
    // stencil: the unknown (updated in place), the other fields in declaration order, the
    // extents on the stencil's own axes, the scalars, the pencil order, one flag per pencil
    // and the ticket counter (both zeroed above; `Flags` has room for these pencils), and the
    // pencils on the last lane axis. The launch has one block per pencil with the lanes the
    // kernel was compiled for, and the dynamic shared memory of its windows (opted into when
    // the kernel was loaded); every index it computes lies in the grid.
    unsafe { launch.launch(pencils.config()) }.map_err(driver_error("launching a kernel"))?;
    Ok(())
}

/// A sweep stencil's wavefront kernel for one grid: compiled, loaded, and allowed the
/// shared memory of its windows.
pub(super) fn sweep_kernel<S: Stencil<N>, T: Real, const N: usize>(
    gpu: &Gpu,
    mode: Mode,
    shape: [usize; N],
    tile: (usize, bool),
) -> Result<(Pencils, std::sync::Arc<cudarc::driver::CudaModule>, CudaFunction, JitTime)> {
    let meta = S::META;
    let chunk = match std::env::var(CHUNK_VAR) {
        Ok(text) => Some(text.trim().parse::<usize>().ok().filter(|&c| c > 0).ok_or_else(|| Error::Launch {
            kernel: format!("{}_wavefront", meta.name),
            reason: format!("{CHUNK_VAR}={text:?} is not a positive number of planes"),
        })?),
        Err(_) => None,
    };
    let limits = (gpu.max_threads_per_block as usize, gpu.max_shared_per_block);
    // A tile that was not asked for (`Plain`, `Auto`) is halved until its windows fit. One
    // wider than the grid's longest axis (in skewed coordinates, at most the sum of the
    // axes times the largest skew factor plus one) is lowered to it: its pencils hold the
    // whole of every lane extent either way, so the sweep is the same.
    let (tile, explicit) = tile;
    let skew_sum = 1 + meta.sweep.as_ref().map_or(0, |s| s.skew.iter().map(|&c| c as usize).sum::<usize>());
    let longest = shape.iter().sum::<usize>().saturating_mul(skew_sum.saturating_mul(skew_sum));
    let mut tile = tile.min(longest.max(1));
    let pencils = loop {
        match Pencils::new::<S, T, N>(shape, tile, chunk, limits) {
            Err(Error::Launch { .. }) if !explicit && tile > 1 => tile /= 2,
            result => break result?,
        }
    };
    let dims = as_3d(&shape, 1);
    let defines = [("WF_TILE", tile), ("WF_CHUNK", pencils.chunk), ("WF_WIN", pencils.window)];
    let (module, jit) = load_module::<S, T, N>(gpu, mode, dims, &defines)?;
    let kernel = module
        .load_function(&format!("{}_wavefront", meta.name))
        .map_err(driver_error("finding a kernel in the module"))?;
    kernel
        .set_attribute(
            cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            pencils.shared_bytes as i32,
        )
        .map_err(driver_error("raising the kernel's shared-memory limit"))?;
    Ok((pencils, module, kernel, jit))
}

/// The tile of a sweep's schedule on the GPU and whether it was asked for: `Wavefront {
/// tile }`'s, or the default one for `Plain` (the sequential sweep, whose values a wavefront
/// computes).
pub(super) fn tile_of(meta: &'static StencilMeta, schedule: Schedule) -> Result<(usize, bool)> {
    match schedule {
        Schedule::Wavefront { tile } => Ok((tile, true)),
        Schedule::Plain | Schedule::Auto => match Schedule::Auto.resolve(meta)? {
            Schedule::Wavefront { tile } => Ok((tile, false)),
            _ => unreachable!("`Auto` resolves to a wavefront for sweeps"),
        },
        other => Err(Error::InvalidSchedule {
            schedule: other.to_string(),
            stencil: meta.name,
            reason: "a sweep stencil runs `Plain` or `Wavefront` on the GPU".into(),
        }),
    }
}

/// [`Alternating::run`](crate::Alternating::run) on GPU `device`: the grid and the fields
/// uploaded once, then a sweep of each stencil per step.
pub(crate) fn alternate<A: Stencil<N>, B: Stencil<N>, T: Real, const N: usize>(
    u: &mut Grid<T, N>,
    params: (&A::Params<T>, &B::Params<T>),
    fields: crate::steps::FieldPair<'_, T>,
    (device, mode, schedule): (usize, Mode, Schedule),
    steps: usize,
    mut on_step: Option<&mut crate::StepFn<'_>>,
) -> Result<crate::StepsReport> {
    let gpu = Gpu::open(device)?;
    let shape = u.shape();
    let (pencils_a, _module_a, kernel_a, jit_a) =
        sweep_kernel::<A, T, N>(&gpu, mode, shape, tile_of(A::META, schedule)?)?;
    let (pencils_b, _module_b, kernel_b, jit_b) =
        sweep_kernel::<B, T, N>(&gpu, mode, shape, tile_of(B::META, schedule)?)?;
    let stream = &gpu.stream;
    let upload = |data: &[T]| gpu.upload(stream, data, "a grid");
    let mut current = upload(u.as_slice())?;
    let inputs_a: Vec<Option<CudaSlice<T>>> =
        fields.0.iter().map(|f| f.map(upload).transpose()).collect::<Result<_>>()?;
    let inputs_b: Vec<Option<CudaSlice<T>>> =
        fields.1.iter().map(|f| f.map(upload).transpose()).collect::<Result<_>>()?;
    let scalars = (Scalars::new(A::param_values(params.0)), Scalars::new(B::param_values(params.1)));
    let mut flags = (Flags::new(&gpu, stream, &pencils_a)?, Flags::new(&gpu, stream, &pencils_b)?);
    stream.synchronize().map_err(driver_error("waiting for the device"))?;
    let views = (read_only(&inputs_a), read_only(&inputs_b));
    let every = steps.div_ceil(100).max(1);
    let started = Instant::now();
    for step in 1..=steps {
        let args = (&mut current.as_view_mut(), &views.0[..], &scalars.0);
        launch_sweep(stream, args, &mut flags.0, &pencils_a, &kernel_a)?;
        let args = (&mut current.as_view_mut(), &views.1[..], &scalars.1);
        launch_sweep(stream, args, &mut flags.1, &pencils_b, &kernel_b)?;
        if let Some(callback) = on_step.as_deref_mut().filter(|_| step % every == 0 || step == steps) {
            stream.synchronize().map_err(driver_error("waiting for the device"))?;
            callback(step, started.elapsed());
        }
    }
    stream.synchronize().map_err(driver_error("waiting for the device"))?;
    let wall = started.elapsed();
    stream.memcpy_dtoh(&current, u.as_mut_slice()).map_err(driver_error("copying to the host"))?;
    Ok(crate::StepsReport {
        steps,
        wall,
        backend: format!("cuda device {device} ({})", gpu.name),
        schedule: match schedule {
            Schedule::Wavefront { .. } => schedule,
            _ => Schedule::Wavefront { tile: pencils_a.lanes[0].max(1) },
        },
        jit: Some(jit_a.time + jit_b.time),
    })
}

/// Views of the read-only fields among `inputs` (`None` at the unknown).
fn read_only<T: Real>(inputs: &[Option<CudaSlice<T>>]) -> Vec<CudaView<'_, T>> {
    inputs.iter().flatten().map(|f| f.as_view()).collect()
}

/// ρ(u) of the current iterate, by one plain application into the second buffer.
fn measure_residual<T: Real, const N: usize>(
    gpu: &Gpu,
    state: &mut DeviceState<T>,
    (kernel, cfg): (&CudaFunction, LaunchConfig),
    u: &mut Grid<T, N>,
    (iteration, stop): (usize, crate::stop::StopRule),
) -> Result<(f64, f64)> {
    state.reset_check(gpu)?;
    let mut launch = gpu.stream.launch_builder(kernel);
    state.push_args(&mut launch, &[], true);
    // SAFETY: as for the plain loop's measuring launch (`run::typed`): the arguments are the
    // generated signature's, and the launch shape is the one the kernel was compiled for.
    unsafe { launch.launch(cfg) }.map_err(driver_error("launching a kernel"))?;
    state.read_check(gpu, u, iteration, stop)
}
