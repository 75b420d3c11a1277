//! The CUDA backend: NVRTC turns a stencil's generated CUDA C into device code (cached in
//! memory and on disk), and an engine runs it on a device. Every entry point checks that
//! the libraries are present first, because cudarc's dynamic loading panics when they are
//! not.
//!
//! `device.rs` is the thin layer over the raw driver (devices, memory, page-locking);
//! `launch.rs` the one place a generated kernel is launched, from its manifest; `engine.rs`
//! the grid held on the device; `out_of_core/` the grid streamed through it in slabs.

mod cache;
mod device;
pub(crate) mod engine;
mod launch;
mod module;
pub(crate) mod nccl;
mod nvrtc;
mod options;
pub(crate) mod out_of_core;
mod probe;
mod sweeper;

pub use crate::report::Origin;
pub use cache::{CACHE_DIR_VAR, DUMP_DIR_VAR, cache_dir, clear_memory_cache};
pub use device::{Gpu, device_count, driver_available, unusable_reason};
pub use nccl::nccl_available;
pub use nvrtc::{EXTRA_OPTIONS_VAR, Mode, nvrtc_available};
// The compiler and its cache by themselves, for the tests of the generated CUDA: a user
// compiles through `Solver`.
#[doc(hidden)]
pub use cache::{Compiled, get as compile_cached};
#[doc(hidden)]
pub use nvrtc::{CompileOptions, Cubin, Output, Ptx, compile};
pub use options::{
    CudaOptions, HIER_KERNEL_VAR, HierarchicalKernel, LANE_LINES_VAR, SHAPE_VAR, STREAM_THREADS_VAR, VECTOR_VAR,
    WAVEFRONT_CHUNK_VAR, WAVEFRONT_KERNEL_VAR, WAVEFRONT_WINDOW_VAR, WavefrontKernel,
};
pub use probe::copy_bandwidth;

/// Compares every kernel of `S`'s translation unit, compiled for `T` and loaded on device
/// `device`, with its entry in `S::KERNELS`: the same number of parameters, each of the size
/// the manifest's type has. A mismatch is an error naming the kernel and the parameter.
/// For tests of the kernel contract.
#[doc(hidden)]
pub fn check_manifest<S: crate::Stencil<N>, T: crate::Real, const N: usize>(device: usize) -> crate::Result<usize> {
    let gpu = Gpu::open(device)?;
    // A grid of a few points per axis: the parameters do not depend on the grid.
    let dims = S::KERNELS.view(&[8; N], 1);
    let defines = [("HIER_ROWS", 8), ("WF_TILE", 4), ("WF_CHUNK", 4), ("WF_WIN", 32)];
    let kinds: Vec<_> = S::KERNELS.kernels.iter().map(|spec| spec.kind).collect();
    let (module, _) = module::Module::<S>::load::<T, N>(&gpu, &CudaOptions::default(), dims, &kinds, &defines)?;
    for spec in S::KERNELS.kernels {
        let loaded = module.kernel::<N>(spec.kind)?.loaded_params()?;
        let fail = |reason: String| crate::Error::Launch { kernel: spec.symbol.into(), reason };
        if loaded.len() != spec.params.len() {
            return Err(fail(format!("{} parameters loaded, {} in the manifest", loaded.len(), spec.params.len())));
        }
        for (param, (_, size)) in spec.params.iter().zip(&loaded) {
            if param.ty.size(T::BYTES) != *size {
                return Err(fail(format!(
                    "`{}` is {size} B loaded, {} B in the manifest",
                    param.name,
                    param.ty.size(T::BYTES)
                )));
            }
        }
    }
    Ok(S::KERNELS.kernels.len())
}
