//! The run-time model's constants, measured at start-up on the grid's own planes.

use super::pyramid::view_dims;
use crate::cuda::device::{Gpu, driver_error};
use crate::cuda::launch::{Args, launch};
use crate::cuda::module::{JitTime, Module};
use crate::cuda::options::CudaOptions;
use crate::kernel::KernelKind;
use crate::plan::launch::plain;
use crate::plan::model;
use crate::{Real, Result, Stencil};

/// The model's constants, measured (not timed with the run): the best of a few copies of up
/// to 64 planes of `host` (page-locked) to the device and back (the same values, so `host`
/// is unchanged), of a device-to-device copy, and of plain-kernel launches over them (of a
/// system, updating every unknown). The probe's buffers (three of the same planes, and one
/// more per further unknown) fit `per_buffer` bytes each, and are freed before the run
/// allocates its own.
pub(super) fn probe<S: Stencil<N>, T: Real, const N: usize>(
    gpu: &Gpu,
    options: &CudaOptions,
    host: &mut [T],
    shape: &model::Shape,
    grid: [usize; N],
    per_buffer: usize,
    params: &S::Params<T>,
) -> Result<(model::Costs, JitTime)> {
    const REPEATS: usize = 3;
    const LAUNCHES: usize = 5;
    let plane_bytes = shape.plane_len * shape.elem;
    let fewest = (2 * shape.radius + 1).min(shape.planes);
    let planes = (per_buffer / plane_bytes.max(1)).min(64).min(shape.planes).max(fewest);
    let len = planes * shape.plane_len;
    let bytes = (len * shape.elem) as f64;
    let stream = &gpu.stream;
    let alloc = || gpu.alloc_zeros::<T>(stream, len, "a probe buffer");
    let (mut a, mut b, field) = (alloc()?, alloc()?, alloc()?);
    let mut more_outputs = (1..S::META.unknowns.len()).map(|_| alloc()).collect::<Result<Vec<_>>>()?;
    let best_of = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        let mut best = f64::INFINITY;
        for _ in 0..REPEATS {
            let started = std::time::Instant::now();
            f()?;
            stream.synchronize().map_err(driver_error("waiting for the device"))?;
            best = best.min(started.elapsed().as_secs_f64());
        }
        Ok(best)
    };
    let up = best_of(&mut || stream.memcpy_htod(&host[..len], &mut a).map_err(driver_error("probing copies")))?;
    let down = best_of(&mut || stream.memcpy_dtoh(&a, &mut host[..len]).map_err(driver_error("probing copies")))?;
    let device_copy = best_of(&mut || stream.memcpy_dtod(&a, &mut b).map_err(driver_error("probing copies")))?;

    let dims = view_dims::<S, N>(grid, planes);
    let (module, jit) = Module::<S>::load::<T, N>(gpu, options, dims, &[KernelKind::Plain], &[])?;
    let kernel = module.kernel::<N>(KernelKind::Plain)?;
    let launch_shape = plain(S::KERNELS, dims, options.plain_block(S::KERNELS, N), kernel.vector(), gpu.limits())?;
    let scalars = S::param_values(params);
    let meta = S::META;
    let kernel_time = best_of(&mut || {
        for _ in 0..LAUNCHES {
            let fields = (0..meta.fields.len())
                .map(|i| Some(if meta.unknowns.contains(&i) { a.as_view() } else { field.as_view() }))
                .collect();
            let mut args = Args::new(dims.map(|n| n as i64), fields, &scalars);
            args.output = Some(b.as_view_mut());
            args.more_outputs = more_outputs.iter_mut().map(|o| o.as_view_mut()).collect();
            launch(stream, &kernel, args, launch_shape)?;
        }
        Ok(())
    })?;
    let updated = ((planes - 2 * shape.radius) * shape.plane_interior * LAUNCHES) as f64;
    let costs = model::Costs {
        up: up / bytes,
        down: down / bytes,
        update: kernel_time / updated.max(1.0),
        device_copy: device_copy / bytes,
    };
    Ok((costs, jit))
}
