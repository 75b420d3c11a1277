//! Hand-written peers of `jacobi7` (`peers.cu`), compiled with NVRTC to device code as the
//! generated kernels are, and timed in the benchmark's own process, so that every table shows
//! them beside the generated kernels: one thread per point, and columns marching along z with
//! a register queue (64 × 4 threads marching 8 planes, 32 × 8 threads marching 16).

use std::error::Error;

use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use cudarc::driver::{CudaContext, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits};
use cudarc::nvrtc::Ptx;
use stencil::cuda::{CompileOptions, Mode, compile};

const SOURCE: &str = include_str!("peers.cu");

/// Launches per timed run.
const LAUNCHES: usize = 20;

/// A peer's kernel and its launch shape: threads per block along x and y, planes per block.
const PEERS: [(&str, &str, [u32; 3]); 3] = [
    ("one thread per point", "peer_point", [32, 4, 1]),
    ("z-march 64×4, 8 planes", "peer_march8", [64, 4, 8]),
    ("z-march 32×8, 16 planes", "peer_march16", [32, 8, 16]),
];

/// Every peer's name and Gpoint/s (interior points per second, the best of `repeats` runs
/// of [`LAUNCHES`] launches) on an n³ grid of `T` (`f32` or `f64`, named `c_type` in C) on
/// device 0.
pub fn time<T>(n: usize, c_type: &str, repeats: usize) -> Result<Vec<(&'static str, f64)>, Box<dyn Error>>
where
    T: DeviceRepr + ValidAsZeroBits + Copy + From<f32>,
{
    let ctx = CudaContext::new(0)?;
    let major = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let arch = format!("sm_{major}{minor}");
    let options = match c_type {
        "double" => CompileOptions::new::<f64>(Mode::Fast, arch),
        _ => CompileOptions::new::<f32>(Mode::Fast, arch),
    };
    let module = ctx.load_module(Ptx::from_binary(compile("peers", SOURCE, &options)?.cubin.0))?;
    let stream = ctx.default_stream();
    // A pattern, not zeros (some memory systems move zeros faster).
    let pattern: Vec<T> = (0..n * n * n).map(|i| T::from((i % 1013) as f32 * 1e-3)).collect();
    let u = stream.clone_htod(&pattern)?;
    let f = stream.clone_htod(&pattern)?;
    let mut v = stream.clone_htod(&pattern)?;
    let (side, h2) = (n as i32, T::from(1e-4));
    let interior = (n - 2).pow(3) as f64;
    let mut rates = Vec::new();
    for (name, symbol, [bx, by, march]) in PEERS {
        let kernel = module.load_function(symbol)?;
        let blocks_z = if march == 1 { n as u32 } else { (n as u32 - 2).div_ceil(march) };
        let config = LaunchConfig {
            grid_dim: ((n as u32).div_ceil(bx), (n as u32).div_ceil(by), blocks_z),
            block_dim: (bx, by, 1),
            shared_mem_bytes: 0,
        };
        let mut best = f64::INFINITY;
        for run in 0..=repeats {
            let start = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            for _ in 0..LAUNCHES {
                let mut launch = stream.launch_builder(&kernel);
                launch.arg(&u).arg(&f).arg(&mut v).arg(&side).arg(&h2);
                // SAFETY: the three buffers hold n³ values and the kernels touch the points of
                // the n³ grid only; the arguments are those `peers.cu` declares, in order.
                unsafe { launch.launch(config) }?;
            }
            let end = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            end.synchronize()?;
            // The first run warms up.
            if run > 0 {
                best = best.min(start.elapsed_ms(&end)? as f64 / LAUNCHES as f64);
            }
        }
        rates.push((name, interior / (best * 1e-3) / 1e9));
    }
    Ok(rates)
}
