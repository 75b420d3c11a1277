//! A stencil's translation unit compiled (or taken from the cache) and loaded for one grid:
//! the element type, the index type the grid needs, the plain kernels' launch shape, the plain
//! pass's vector width and the other kernels' definitions.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::CudaModule;

use super::cache;
use super::device::{Gpu, driver_error};
use super::launch::Kernel;
use super::nvrtc::CompileOptions;
use super::options::CudaOptions;
use crate::kernel::KernelKind;
use crate::report::Origin;
use crate::{Real, Result, Stencil};

/// Time spent getting a module, and where it came from, for the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct JitTime {
    pub time: Duration,
    pub origin: Origin,
}

impl JitTime {
    /// Both times together; compiled if either was.
    pub fn and(self, other: JitTime) -> JitTime {
        let origin = if other.origin == Origin::Compiled { other.origin } else { self.origin };
        JitTime { time: self.time + other.time, origin }
    }
}

/// A stencil's module for a grid seen as `dims` (kernel axes), holding the kernels a run
/// asked for.
pub(crate) struct Module<S> {
    module: Arc<CudaModule>,
    /// The kernels compiled in.
    kinds: Vec<KernelKind>,
    /// The plain pass's points per thread (its `VEC`).
    vector: u32,
    _stencil: std::marker::PhantomData<S>,
}

impl<S> Module<S> {
    /// Compiles (or takes from the cache) and loads `S`'s kernels `kinds` for elements `T`,
    /// a grid seen as `dims`, `options`, and the kernels' own `defines` (the register
    /// kernel's rows, the wavefront's tile). The unit's other kernels are left out of the
    /// compilation: a run compiles only what it launches.
    pub fn load<T: Real, const N: usize>(
        gpu: &Gpu,
        options: &CudaOptions,
        dims: [usize; 3],
        kinds: &[KernelKind],
        defines: &[(&str, usize)],
    ) -> Result<(Self, JitTime)>
    where
        S: Stencil<N>,
    {
        let [block_x, block_y, march] = options.plain_block(S::KERNELS, N);
        let vector = options.vector_width(T::BYTES, N, dims);
        // 32-bit index arithmetic is measurably faster; it is exact below 2³¹ points.
        let index = if dims.iter().product::<usize>() < i32::MAX as usize { "int" } else { "long long" };
        let mut compile = CompileOptions::new::<T>(options.mode, gpu.arch.clone())
            .define("INDEX", index)
            .define("BLOCK_X", block_x)
            .define("BLOCK_Y", block_y)
            .define("MARCH", march)
            .define("VEC", vector);
        for &(name, value) in defines {
            compile = compile.define(name, value);
        }
        for spec in S::KERNELS.kernels {
            compile = compile.define(spec.guard, u8::from(kinds.contains(&spec.kind)));
        }
        let started = Instant::now();
        let compiled = cache::get(S::META.name, S::CUDA_SOURCE, &compile, gpu.driver_version)?;
        let module = gpu
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin.0))
            .map_err(driver_error("loading the compiled module"))?;
        let module = Self { module, kinds: kinds.to_vec(), vector, _stencil: std::marker::PhantomData };
        Ok((module, JitTime { time: started.elapsed(), origin: compiled.origin }))
    }

    /// The module's kernel of kind `kind`.
    pub fn kernel<const N: usize>(&self, kind: KernelKind) -> Result<Kernel>
    where
        S: Stencil<N>,
    {
        if !self.kinds.contains(&kind) {
            return Err(crate::Error::Launch {
                kernel: format!("{}'s {kind:?} kernel", S::META.name),
                reason: "the module was compiled without it".into(),
            });
        }
        let vector = if kind == KernelKind::Plain { self.vector } else { 1 };
        Ok(Kernel::load(&self.module, S::KERNELS, kind)?.with_vector(vector))
    }
}
