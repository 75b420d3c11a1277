//! The run-time model's constants, measured at start-up on the grid's own planes.

use cudarc::driver::CudaStream;

use super::pyramid::view_dims;
use crate::cuda::device::{Gpu, driver_error};
use crate::cuda::launch::{Args, Kernel, launch};
use crate::cuda::module::{JitTime, Module};
use crate::cuda::options::CudaOptions;
use crate::kernel::KernelKind;
use crate::plan::launch::{CYCLE_INTS, Shape, plain};
use crate::plan::model;
use crate::plan::stream::StreamBuild;
use crate::schedule::CycleSizes;
use crate::{Real, Result, Stencil};

/// The model's constants, measured (not timed with the run): the best of a few copies of up
/// to 64 planes of `host` (page-locked) to the device and back (the same values, so `host`
/// is unchanged), of a device-to-device copy, and of plain-kernel launches over them (of a
/// system, updating every unknown). The probe's buffers (three of the same planes, and one
/// more per further unknown) fit `per_buffer` bytes each, and are freed before the run
/// allocates its own. With `cycles`, the streaming kernel of that build is timed too, over
/// the same planes: the second value is its seconds per point and iteration.
pub(super) fn probe<S: Stencil<N>, T: Real, const N: usize>(
    gpu: &Gpu,
    options: &CudaOptions,
    planes: Planes<'_, T, N>,
    params: &S::Params<T>,
    cycles: Option<&Cycles>,
) -> Result<(model::Costs, Option<f64>, JitTime)> {
    let Planes { host, shape, grid, per_buffer } = planes;
    let plane_bytes = shape.plane_len * shape.elem;
    let fewest = (2 * shape.radius + 1).min(shape.planes);
    let planes = (per_buffer / plane_bytes.max(1)).min(64).min(shape.planes).max(fewest);
    let len = planes * shape.plane_len;
    let bytes = (len * shape.elem) as f64;
    let stream = &gpu.stream;
    let alloc = || gpu.alloc_zeros::<T>(stream, len, "a probe buffer");
    let (mut a, mut b, field) = (alloc()?, alloc()?, alloc()?);
    // A cycle kernel takes the check's arrays even when it does not measure (it then never
    // writes them).
    let (mut block_max, mut block_sum) =
        (gpu.alloc_zeros::<f64>(stream, 1, "a probe buffer")?, gpu.alloc_zeros::<f64>(stream, 1, "a probe buffer")?);
    let mut first_bad = gpu.alloc_zeros::<u64>(stream, 1, "a probe buffer")?;
    let mut more_outputs = (1..S::META.unknowns.len()).map(|_| alloc()).collect::<Result<Vec<_>>>()?;
    let copies = || driver_error("probing copies");
    let up = best_of(stream, &mut || stream.memcpy_htod(&host[..len], &mut a).map_err(copies()))?;
    let down = best_of(stream, &mut || stream.memcpy_dtoh(&a, &mut host[..len]).map_err(copies()))?;
    let device_copy = best_of(stream, &mut || stream.memcpy_dtod(&a, &mut b).map_err(copies()))?;

    let dims = view_dims::<S, N>(grid, planes);
    let mut kinds = vec![KernelKind::Plain];
    kinds.extend(cycles.map(|_| KernelKind::Streaming));
    let defines = cycles.iter().flat_map(|c| c.build.defines()).collect::<Vec<_>>();
    let (module, jit) = Module::<S>::load::<T, N>(gpu, options, dims, &kinds, &defines)?;
    let kernel = module.kernel::<N>(KernelKind::Plain)?;
    let launch_shape = plain(S::KERNELS, dims, options.plain_block(S::KERNELS, N), kernel.vector(), gpu.limits())?;
    let scalars = S::param_values(params);
    let meta = S::META;
    // Every launch reads `a` (and `field`) and writes `b` (and the further unknowns' buffers).
    let mut time_launches = |kernel: &Kernel, launch_shape: Shape, cycle: [i32; CYCLE_INTS]| {
        best_of(stream, &mut || {
            for _ in 0..LAUNCHES {
                let fields = (0..meta.fields.len())
                    .map(|i| Some(if meta.unknowns.contains(&i) { a.as_view() } else { field.as_view() }))
                    .collect();
                let mut args = Args::new(dims.map(|n| n as i64), fields, &scalars);
                args.output = Some(b.as_view_mut());
                args.more_outputs = more_outputs.iter_mut().map(|o| o.as_view_mut()).collect();
                args.cycle = cycle;
                args.checks = Some((block_max.as_view_mut(), block_sum.as_view_mut(), first_bad.as_view_mut()));
                launch(stream, kernel, args, launch_shape)?;
            }
            Ok(())
        })
    };
    let kernel_time = time_launches(&kernel, launch_shape, [0; CYCLE_INTS])?;
    let updated = ((planes - 2 * shape.radius) * shape.plane_interior * LAUNCHES) as f64;
    // Streaming cycles that cannot run here leave the model its plain choices.
    let cycle_update = cycles.and_then(|Cycles { build, sizes, edges }| {
        let mut timed = || -> Result<f64> {
            let cycle = module.kernel::<N>(KernelKind::Streaming)?;
            let geometry = build.cycle(S::KERNELS, dims, *sizes, T::BYTES, gpu.limits(), *edges)?;
            cycle.allow_shared(geometry.shape.shared as usize)?;
            let time = time_launches(&cycle, geometry.shape, geometry.ints(sizes.sub, 0)?)?;
            Ok(time / (updated * sizes.sub as f64).max(1.0))
        };
        timed().inspect_err(|e| log::warn!("streaming cycles inside the slabs were not timed: {e}")).ok()
    });
    let costs = model::Costs {
        up: up / bytes,
        down: down / bytes,
        update: kernel_time / updated.max(1.0),
        device_copy: device_copy / bytes,
    };
    Ok((costs, cycle_update, jit))
}

/// Runs of each probe: its best counts.
const REPEATS: usize = 3;
/// Kernel launches in one run of a kernel's probe.
const LAUNCHES: usize = 5;

/// The best of [`REPEATS`] runs of `f`, each waited for on `stream`, in seconds.
fn best_of(stream: &CudaStream, f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..REPEATS {
        let started = std::time::Instant::now();
        f()?;
        stream.synchronize().map_err(driver_error("waiting for the device"))?;
        best = best.min(started.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// What a probe copies and updates: the grid `host` of `grid` points (seen by the model
/// as `shape`), in buffers of `per_buffer` bytes at most.
pub(super) struct Planes<'h, T, const N: usize> {
    pub host: &'h mut [T],
    pub shape: &'h model::Shape,
    pub grid: [usize; N],
    pub per_buffer: usize,
}

/// The streaming cycles a probe times: the kernel's build, the cycle's sizes, and how its
/// regions meet the grid's edges (per kernel axis).
pub(super) struct Cycles {
    pub build: StreamBuild,
    pub sizes: CycleSizes,
    pub edges: [i32; 3],
}
