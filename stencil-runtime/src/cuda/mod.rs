//! The CUDA half of the runtime. `nvrtc` turns a stencil's generated CUDA C into PTX; every
//! entry point checks that the library is present first, because cudarc's dynamic loading
//! panics when it is not.

mod nvrtc;

pub use nvrtc::{CompileOptions, Mode, Ptx, compile, numbered, nvrtc_available};
