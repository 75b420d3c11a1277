//! How the GPU runs a stencil: the floating-point mode and the tuning knobs, as one typed
//! value ([`CudaOptions`]); the environment variables that override them are read once,
//! when a run starts.

use crate::kernel::KernelManifest;
use crate::plan::lanes::LANE_LINES;
use crate::plan::pencils::Staging;
use crate::{Error, Result};

pub use super::nvrtc::Mode;

/// Environment variable overriding the plain kernel's launch shape, `BLOCK_X,BLOCK_Y,MARCH`
/// (for tuning; see [`CudaOptions::plain_shape`]).
pub const SHAPE_VAR: &str = "STENCIL_CUDA_SHAPE";

/// Environment variable overriding the plain pass's points per thread along the contiguous
/// axis: 1, 2 or 4 (for tuning; see [`CudaOptions::plain_vector`]).
pub const VECTOR_VAR: &str = "STENCIL_CUDA_VECTOR";

/// Environment variable choosing the hierarchical kernel: `shared` forces the shared-memory
/// kernel where the register kernel would run (see [`CudaOptions::hierarchical_kernel`]).
pub const HIER_KERNEL_VAR: &str = "STENCIL_CUDA_HIER";

/// Environment variable overriding the planes a wavefront's helpers pass at a time
/// (see [`CudaOptions::wavefront_chunk`]).
pub const WAVEFRONT_CHUNK_VAR: &str = "STENCIL_CUDA_WAVEFRONT_CHUNK";

/// Environment variable overriding the planes of the pencil kernel's shared-memory window
/// (see [`CudaOptions::wavefront_window`]).
pub const WAVEFRONT_WINDOW_VAR: &str = "STENCIL_CUDA_WAVEFRONT_WINDOW";

/// Environment variable choosing the wavefront kernel: `pencils` forces the pencil kernel
/// where the lane kernel would run (see [`CudaOptions::wavefront_kernel`]).
pub const WAVEFRONT_KERNEL_VAR: &str = "STENCIL_CUDA_WAVEFRONT";

/// Environment variable overriding the lines each lane of the lane kernel owns: 1 or 2 (see
/// [`CudaOptions::lane_lines`]).
pub const LANE_LINES_VAR: &str = "STENCIL_CUDA_LANE_LINES";

/// Environment variable overriding the streaming kernel's threads per block (see
/// [`CudaOptions::stream_threads`]).
pub const STREAM_THREADS_VAR: &str = "STENCIL_CUDA_STREAM_THREADS";

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

/// Which kernel runs a sweep's wavefront where both could.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WavefrontKernel {
    /// The lane kernel wherever it applies (2-D sweeps on the antidiagonal hyperplane that
    /// read the unknown at most one line away — new values only on the line before, old ones
    /// only on the line after, and the line after only with the line before — whose windows
    /// fit in shared memory, on devices of compute capability 8.0 or later), the pencil kernel
    /// elsewhere.
    #[default]
    Auto,
    /// The pencil kernel everywhere (to compare them: both give the sequential sweep's bits).
    Pencils,
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
    /// The plain pass's points per thread along the contiguous axis, each row read as one
    /// vector: 1, 2 or 4 (4 in single precision only). `None`: 2, which `docs/performance.md`
    /// measured fastest in both precisions. A width that does not divide the grid's
    /// contiguous extent is halved until it does; in 1-D every width runs as 1.
    pub plain_vector: Option<u32>,
    /// Which kernel runs hierarchical cycles.
    pub hierarchical_kernel: HierarchicalKernel,
    /// Which kernel runs sweeps.
    pub wavefront_kernel: WavefrontKernel,
    /// Planes a wavefront's helpers pass at a time (the pencil kernel's loaders copy in, and
    /// its storer writes back and publishes, chunks of this many planes); `None`: 8.
    pub wavefront_chunk: Option<usize>,
    /// Planes of the pencil kernel's shared-memory window, a ring of chunks: a multiple of
    /// the chunk, at least the chunk the loaders fill, the lag between a tile's first and
    /// last lanes and the reads' reach both ways. Fewer planes take less shared memory, so
    /// that more blocks may share a multiprocessor; more let the loaders run further ahead.
    /// `None`: the planes needed and a chunk more, a power of two where that fits. A window
    /// that is not a multiple of the chunk, too small or too large for shared memory is an
    /// error, whatever the tile (a tile not asked for is not halved to make it fit).
    pub wavefront_window: Option<usize>,
    /// Lines each lane of the lane kernel owns, 1 or 2: lane j of a block owns M consecutive
    /// lines and computes one row of each in a step, so a block takes 32·M lines and the grid
    /// needs M times fewer blocks (and hand-overs between them). `None`: 1, the faster on
    /// the H200 in every mode and precision (`docs/performance.md`: two lines a lane took 1.4
    /// to 1.7 times as long). Where the windows of M lines do not fit in shared memory, a lane
    /// owns one; any other M runs as one.
    pub lane_lines: Option<u32>,
    /// Threads per block of the streaming kernel (`Schedule::Streaming`), 32 to 1024; each
    /// thread takes as many of a working region's columns as it needs. `None`: 1024.
    pub stream_threads: Option<u32>,
}

impl CudaOptions {
    /// These options with every environment variable that is set ([`SHAPE_VAR`],
    /// [`VECTOR_VAR`], [`HIER_KERNEL_VAR`], [`WAVEFRONT_KERNEL_VAR`], [`WAVEFRONT_CHUNK_VAR`],
    /// [`WAVEFRONT_WINDOW_VAR`], [`LANE_LINES_VAR`], [`STREAM_THREADS_VAR`]) in place of its
    /// own.
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
        if let Ok(text) = std::env::var(VECTOR_VAR) {
            let width = text.trim().parse::<u32>().ok().filter(|w| [1, 2, 4].contains(w));
            self.plain_vector = Some(width.ok_or_else(|| fail(VECTOR_VAR, &text, "1, 2 or 4"))?);
        }
        if let Ok(text) = std::env::var(HIER_KERNEL_VAR) {
            self.hierarchical_kernel = match text.as_str() {
                "shared" => HierarchicalKernel::Shared,
                "auto" | "" => HierarchicalKernel::Auto,
                _ => return Err(fail(HIER_KERNEL_VAR, &text, "`shared` or `auto`")),
            };
        }
        if let Ok(text) = std::env::var(WAVEFRONT_KERNEL_VAR) {
            self.wavefront_kernel = match text.as_str() {
                "pencils" => WavefrontKernel::Pencils,
                "auto" | "" => WavefrontKernel::Auto,
                _ => return Err(fail(WAVEFRONT_KERNEL_VAR, &text, "`pencils` or `auto`")),
            };
        }
        if let Ok(text) = std::env::var(WAVEFRONT_CHUNK_VAR) {
            let chunk = text.trim().parse::<usize>().ok().filter(|&c| c > 0);
            self.wavefront_chunk = Some(chunk.ok_or_else(|| fail(WAVEFRONT_CHUNK_VAR, &text, "a positive number"))?);
        }
        if let Ok(text) = std::env::var(WAVEFRONT_WINDOW_VAR) {
            let planes = text.trim().parse::<usize>().ok().filter(|&c| c > 0);
            self.wavefront_window = Some(planes.ok_or_else(|| fail(WAVEFRONT_WINDOW_VAR, &text, "a positive number"))?);
        }
        if let Ok(text) = std::env::var(LANE_LINES_VAR) {
            let lines = text.trim().parse::<u32>().ok().filter(|&l| LANE_LINES.contains(&(l as usize)));
            self.lane_lines = Some(lines.ok_or_else(|| fail(LANE_LINES_VAR, &text, "1 or 2"))?);
        }
        if let Ok(text) = std::env::var(STREAM_THREADS_VAR) {
            let threads = text.trim().parse::<u32>().ok().filter(|t| (32..=1024).contains(t));
            self.stream_threads = Some(threads.ok_or_else(|| fail(STREAM_THREADS_VAR, &text, "32 to 1024"))?);
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

    /// How the pencil kernel stages its planes, as asked for.
    pub(crate) fn staging(&self) -> Staging {
        Staging { chunk: self.wavefront_chunk, window: self.wavefront_window }
    }

    /// Lines a lane of the lane kernel asks for: the option, else 1.
    pub(crate) fn lines_a_lane(&self) -> usize {
        self.lane_lines.map_or(1, |lines| lines as usize)
    }

    /// The streaming kernel's threads per block asked for, if any.
    pub(crate) fn stream_block_threads(&self) -> Option<usize> {
        self.stream_threads.map(|t| t as usize)
    }

    /// The plain pass's points per thread for elements of `bytes` bytes on a grid of `dim`
    /// axes seen as `dims` (kernel axes): the width asked for or the default, halved until
    /// it divides the contiguous extent (so that every row, and every window of whole planes,
    /// starts on a vector); 1 in 1-D, whose windows start anywhere.
    pub(crate) fn vector_width(&self, bytes: usize, dim: usize, dims: [usize; 3]) -> u32 {
        let mut width = match self.plain_vector {
            // CUDA's vectors are 16 bytes at most (its 32-byte double4 is not used).
            Some(w) => w.min(16 / bytes as u32),
            None => 2,
        };
        while width > 1 && (dim < 2 || !dims[2].is_multiple_of(width as usize)) {
            width /= 2;
        }
        width
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_owns_one_line_unless_two_are_asked_for() {
        assert_eq!(CudaOptions::default().lines_a_lane(), 1);
        assert_eq!(CudaOptions { mode: Mode::Exact, ..CudaOptions::default() }.lines_a_lane(), 1);
        assert_eq!(CudaOptions { lane_lines: Some(2), ..CudaOptions::default() }.lines_a_lane(), 2);
    }

    #[test]
    fn the_plain_vector_divides_the_contiguous_extent_and_fits_sixteen_bytes() {
        let default = CudaOptions::default();
        assert_eq!(default.vector_width(4, 3, [10, 10, 10]), 2);
        assert_eq!(default.vector_width(8, 2, [10, 1, 64]), 2);
        assert_eq!(default.vector_width(4, 3, [10, 10, 11]), 1, "an odd row");
        assert_eq!(default.vector_width(4, 1, [1, 1, 64]), 1, "1-D windows start anywhere");
        let four = CudaOptions { plain_vector: Some(4), ..default };
        assert_eq!(four.vector_width(4, 3, [10, 10, 12]), 4);
        assert_eq!(four.vector_width(4, 3, [10, 10, 10]), 2, "4 does not divide 10, 2 does");
        assert_eq!(four.vector_width(4, 3, [10, 10, 9]), 1);
        assert_eq!(four.vector_width(8, 3, [10, 10, 12]), 2, "two doubles make sixteen bytes");
    }
}
