//! The CUDA half of the runtime: NVRTC turns a stencil's generated CUDA C into PTX
//! (cached in memory and on disk), and the driver runs it. Every entry point checks that
//! the libraries are present first, because cudarc's dynamic loading panics when they are
//! not.

mod cache;
mod device;
#[cfg(feature = "mpi")]
pub(crate) mod distributed;
mod nvrtc;
pub(crate) mod out_of_core;
mod probe;
pub(crate) mod run;
pub(crate) mod wavefront;

pub use cache::{CACHE_DIR_VAR, Compiled, DUMP_DIR_VAR, Origin, cache_dir, clear_memory_cache, get as compile_cached};
pub use device::{Gpu, device_count, driver_available, unusable_reason};
pub use nvrtc::{CompileOptions, EXTRA_OPTIONS_VAR, Mode, Ptx, compile, numbered, nvrtc_available};
pub use probe::copy_bandwidth;
pub use run::{HIER_KERNEL_VAR, SHAPE_VAR};
pub use wavefront::CHUNK_VAR as WAVEFRONT_CHUNK_VAR;
