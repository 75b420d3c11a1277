//! The lane kernel's launch geometry: a block per 32 lines of a 2-D sweep, its warps the
//! compute warp, loader, storer, receiver and (fast mode) the parts warp.

use super::launch::{Limits, Shape, launch_error};
use crate::Result;
use crate::kernel::{KernelKind, KernelManifest};

/// Threads of a block: a compute warp, its loader, its storer, its receiver and, in fast mode,
/// the warp that computes the parts of the compute warp's steps, warp 6 (warps 4 and 5 leave
/// at once: a warp's index picks its quarter of the multiprocessor); the kernel's launch
/// bounds.
const BLOCK_THREADS: usize = 224;

/// Bytes of static shared memory the lane kernel declares besides its windows, rounded up:
/// its ticket and the receiver's count of rows taken.
const STATIC_BYTES: usize = 64;

/// Whether the lane kernel runs the stencil's sweeps with elements of `elem` bytes: it has
/// one, a block's windows fit in shared memory and the device has compute capability 8.0 or
/// later (the kernel's asynchronous copies).
pub(crate) fn lanes_fit(manifest: &KernelManifest, elem: usize, limits: Limits) -> bool {
    let Some(facts) = manifest.wavefront else { return false };
    manifest.kernel(KernelKind::Lanes).is_some()
        && limits.major >= 8
        && facts.lane_reals * elem <= limits.max_shared.saturating_sub(STATIC_BYTES)
}

/// The lane kernel's launch over a grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LaneGrid {
    /// The grid's extents as the kernel sees them (kernel axes).
    pub extents: [usize; 3],
    pub shape: Shape,
    /// 32-bit words of the hand-over between blocks (the kernel's `handoff`): for each block
    /// and row, the value of its last line in 32-bit pieces, each with a 32-bit tag.
    pub handoff_words: usize,
}

impl LaneGrid {
    /// The launch over a grid of `shape` (the stencil's axes), elements of `elem` bytes.
    pub fn new(manifest: &KernelManifest, shape: &[usize], elem: usize) -> Result<Self> {
        let fail = |reason: String| launch_error(manifest, KernelKind::Lanes, reason);
        let lane_reals = manifest.wavefront.map_or(0, |w| w.lane_reals);
        let extents = manifest.view(shape, 1);
        let interior: [usize; 3] = std::array::from_fn(|k| extents[k].saturating_sub(2 * manifest.radius[k]));
        // Rows and lines are `int`s in the kernel, steps run 31 past the last row.
        if interior.iter().any(|&n| n > (i32::MAX as usize) / 2) {
            return Err(fail("the grid's axes are too long for the kernel's `int` coordinates".into()));
        }
        let blocks = interior[2].div_ceil(32).max(1);
        let shape = Shape {
            grid: [blocks as u32, 1, 1],
            block: [BLOCK_THREADS as u32, 1, 1],
            shared: (lane_reals * elem) as u32,
        };
        // A 64-bit word per 32 bits of each row's value of each block's last line.
        let handoff_words = blocks * interior[0].max(1) * elem.div_ceil(4) * 2;
        Ok(Self { extents, shape, handoff_words })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{KernelSpec, WavefrontFacts};
    use crate::plan::launch::tests::{LIMITS, manifest};

    const LANES: KernelSpec =
        KernelSpec { kind: KernelKind::Lanes, symbol: "s_lanes", guard: "KERNEL_LANES", params: &[], defines: &[] };

    fn lane_manifest(lane_reals: usize) -> KernelManifest {
        KernelManifest {
            kernels: &[LANES],
            wavefront: Some(WavefrontFacts { windows: &[0, 1], z_radius: [1, 1, 0], lane_axes: 1, lane_reals }),
            ..manifest([1, 0, 1], &[0, 2])
        }
    }

    #[test]
    fn the_lanes_run_where_a_block_s_windows_fit() {
        assert!(lanes_fit(&lane_manifest(10_116), 4, LIMITS), "f32: 40 KB a block");
        assert!(lanes_fit(&lane_manifest(10_116), 8, LIMITS), "f64: 81 KB a block");
        assert!(!lanes_fit(&lane_manifest(40_000), 8, LIMITS), "320 KB: too much");
        assert!(!lanes_fit(&manifest([1, 0, 1], &[0, 2]), 4, LIMITS), "no lane kernel");
        let volta = Limits { major: 7, ..LIMITS };
        assert!(!lanes_fit(&lane_manifest(10_116), 4, volta), "no cp.async before 8.0");
    }

    #[test]
    fn blocks_cover_the_lines_in_warps_of_32() {
        let m = lane_manifest(10_116);
        let grid = LaneGrid::new(&m, &[3602, 1802], 4).unwrap();
        assert_eq!(grid.extents, [3602, 1, 1802]);
        assert_eq!(grid.shape.grid, [57, 1, 1], "1800 lines: 57 blocks");
        assert_eq!(grid.shape.block, [224, 1, 1], "a compute warp, a loader, a storer, a receiver and a parts warp");
        assert_eq!(grid.shape.shared as usize, 10_116 * 4);
        assert_eq!(grid.handoff_words, 57 * 3600 * 2, "a 64-bit word per block and row");
        assert_eq!(LaneGrid::new(&m, &[3602, 1802], 8).unwrap().handoff_words, 57 * 3600 * 4, "two for f64");
        assert_eq!(LaneGrid::new(&m, &[10, 3], 4).unwrap().shape.grid, [1, 1, 1], "one line");
    }
}
