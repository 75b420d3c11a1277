//! How the GPU runs a stencil: the floating-point mode and the tuning knobs, as one typed
//! value ([`CudaOptions`]); the environment variables that override them are read once,
//! when a run starts.

use crate::kernel::KernelManifest;
use crate::{Error, Result};

pub use super::nvrtc::Mode;

/// Environment variable overriding the plain kernel's launch shape, `BLOCK_X,BLOCK_Y,MARCH`
/// (for tuning; see [`CudaOptions::plain_shape`]).
pub const SHAPE_VAR: &str = "STENCIL_CUDA_SHAPE";

/// Environment variable choosing the hierarchical kernel: `shared` forces the shared-memory
/// kernel where the register kernel would run (see [`CudaOptions::hierarchical_kernel`]).
pub const HIER_KERNEL_VAR: &str = "STENCIL_CUDA_HIER";

/// Environment variable overriding the planes between two of a wavefront's ready flags
/// (see [`CudaOptions::wavefront_chunk`]).
pub const WAVEFRONT_CHUNK_VAR: &str = "STENCIL_CUDA_WAVEFRONT_CHUNK";

/// Which kernel runs hierarchical cycles where both could.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HierarchicalKernel {
    /// The register kernel wherever it applies (1-D and 2-D working regions at most one
    /// warp wide), the shared-memory kernel elsewhere.
    #[default]
    Auto,
    /// The shared-memory kernel everywhere (to compare them: both give the same bits).
    Shared,
}

/// How the GPU runs a stencil, given to [`Solver::cuda`](crate::Solver::cuda). The defaults
/// are what `docs/performance.md` measured fastest.
///
/// ```
/// use stencil_runtime::cuda::{CudaOptions, Mode};
/// let options = CudaOptions { mode: Mode::Exact, plain_shape: Some([128, 2, 4]), ..CudaOptions::default() };
/// assert_eq!(options.wavefront_chunk, None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CudaOptions {
    /// How floating-point operations are compiled.
    pub mode: Mode,
    /// The plain (and measuring, and tiled) kernel's launch shape `[BLOCK_X, BLOCK_Y,
    /// MARCH]`: a BLOCK_X × BLOCK_Y column of threads marching MARCH planes (BLOCK_Y is 1 in
    /// 2-D and 1-D, MARCH 1 in 1-D). `None`: the stencil's default (its kernel manifest's).
    pub plain_shape: Option<[u32; 3]>,
    /// Which kernel runs hierarchical cycles.
    pub hierarchical_kernel: HierarchicalKernel,
    /// Planes a wavefront's pencil computes between two ready flags; `None`: the tile edge.
    pub wavefront_chunk: Option<usize>,
}

impl CudaOptions {
    /// These options with every environment variable that is set ([`SHAPE_VAR`],
    /// [`HIER_KERNEL_VAR`], [`WAVEFRONT_CHUNK_VAR`]) in place of its own.
    ///
    /// **Errors**: [`Error::Launch`] for a variable that does not parse.
    pub fn with_environment(mut self) -> Result<Self> {
        let fail = |var: &str, text: &str, what: &str| Error::Launch {
            kernel: "any".into(),
            reason: format!("{var}={text:?} is not {what}"),
        };
        if let Ok(text) = std::env::var(SHAPE_VAR) {
            let parts: Vec<u32> = text.split(',').filter_map(|p| p.trim().parse().ok()).collect();
            match parts[..] {
                [x, y, m] if x > 0 && y > 0 && m > 0 && x * y <= 1024 => self.plain_shape = Some([x, y, m]),
                _ => return Err(fail(SHAPE_VAR, &text, "BLOCK_X,BLOCK_Y,MARCH with BLOCK_X·BLOCK_Y ≤ 1024")),
            }
        }
        if let Ok(text) = std::env::var(HIER_KERNEL_VAR) {
            self.hierarchical_kernel = match text.as_str() {
                "shared" => HierarchicalKernel::Shared,
                "auto" | "" => HierarchicalKernel::Auto,
                _ => return Err(fail(HIER_KERNEL_VAR, &text, "`shared` or `auto`")),
            };
        }
        if let Ok(text) = std::env::var(WAVEFRONT_CHUNK_VAR) {
            let chunk = text.trim().parse::<usize>().ok().filter(|&c| c > 0);
            self.wavefront_chunk = Some(chunk.ok_or_else(|| fail(WAVEFRONT_CHUNK_VAR, &text, "a positive number"))?);
        }
        Ok(self)
    }

    /// The plain kernel's launch shape for a stencil of `dim` axes with `manifest`: the one
    /// asked for (the middle axis of a 2-D grid and the marching axis of a 1-D one have one
    /// point), or the manifest's default.
    pub(crate) fn plain_block(&self, manifest: &KernelManifest, dim: usize) -> [u32; 3] {
        match self.plain_shape {
            Some([x, y, m]) => [x, if dim == 3 { y } else { 1 }, if dim == 1 { 1 } else { m }],
            None => manifest.plain_block,
        }
    }
}
