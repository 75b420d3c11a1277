//! The device's copy bandwidth: the ceiling that GPU figures are compared with, measured
//! in the same run.

use cudarc::driver::{LaunchConfig, PushKernelArg, sys::CUevent_flags};

use super::device::{Gpu, driver_error};
use super::nvrtc::{CompileOptions, Mode, compile};
use crate::Result;

const COPY: &str = r#"
extern "C" __global__ void stencil_copy(const float4* __restrict__ a, float4* __restrict__ b, const long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        b[i] = a[i];
    }
}
"#;

/// Bandwidth in GB/s (10⁹ bytes, read + written) of the best of `repetitions` copies of
/// `bytes / 2` bytes on device `device`, after one warm-up copy; the kernel moves 16-byte
/// vectors and is timed with events.
///
/// **Errors**: [`Error::NoGpu`](crate::Error::NoGpu) and driver or NVRTC errors.
pub fn copy_bandwidth(device: usize, bytes: usize, repetitions: usize) -> Result<f64> {
    let gpu = Gpu::open(device)?;
    let output = compile("stencil_copy", COPY, &CompileOptions::new::<f32>(Mode::Fast, gpu.arch.clone()))?;
    let module = gpu
        .ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(output.cubin.0))
        .map_err(driver_error("loading the copy kernel"))?;
    let copy = module.load_function("stencil_copy").map_err(driver_error("finding the copy kernel"))?;
    let n = (bytes / 2 / 16).max(1);
    let stream = &gpu.stream;
    // Filled with a pattern, not zeros: some memory systems move zeros faster.
    let pattern: Vec<f32> = (0..4 * n).map(|i| (i % 1021) as f32).collect();
    let a = gpu.upload(stream, &pattern, "the copy probe's source")?;
    let mut b = gpu.alloc_zeros::<f32>(stream, 4 * n, "the copy probe's target")?;
    let cfg = LaunchConfig {
        grid_dim: (n.div_ceil(256).min(1 << 20) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let n = n as i64;
    let mut best = f64::INFINITY;
    for rep in 0..=repetitions {
        let start =
            stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(driver_error("recording an event"))?;
        let mut launch = stream.launch_builder(&copy);
        launch.arg(&a).arg(&mut b).arg(&n);
        // SAFETY: `a` and `b` hold 4·n floats = n float4 values, and the kernel touches
        // indices below n only.
        unsafe { launch.launch(cfg) }.map_err(driver_error("launching the copy kernel"))?;
        let end =
            stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(driver_error("recording an event"))?;
        end.synchronize().map_err(driver_error("waiting for the copy"))?;
        let ms = start.elapsed_ms(&end).map_err(driver_error("timing the copy"))? as f64;
        if rep > 0 {
            best = best.min(ms);
        }
    }
    Ok(2.0 * n as f64 * 16.0 / (best * 1e-3) / 1e9)
}
