//! The lane kernel's launch geometry: a block per 32·M lines of a 2-D sweep (M lines a
//! lane), its warps the compute warp, loader, storer, receiver and (fast mode) the parts
//! warp.

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

/// Lines a lane may own: the kernel's `LN_LINES`.
pub(crate) const LANE_LINES: [usize; 2] = [1, 2];

/// Elements of a block's shared memory with `lines` lines a lane (0 without a lane kernel).
fn lane_reals(manifest: &KernelManifest, lines: usize) -> usize {
    let at = LANE_LINES.iter().position(|&l| l == lines);
    manifest.wavefront.zip(at).map_or(0, |(facts, at)| facts.lane_reals[at])
}

/// The lines a lane owns where the lane kernel runs the stencil's sweeps with elements of
/// `elem` bytes, `lines` asked for: `lines`, or 1 where a block's windows for `lines` do not
/// fit in shared memory; `None` where the stencil has no lane kernel, its windows do not fit
/// even with one line a lane, or the device has compute capability below 8.0 (the kernel's
/// asynchronous copies).
pub(crate) fn lanes_fit(manifest: &KernelManifest, elem: usize, limits: Limits, lines: usize) -> Option<usize> {
    if manifest.kernel(KernelKind::Lanes).is_none() || limits.major < 8 {
        return None;
    }
    let fits = |lines: usize| {
        let reals = lane_reals(manifest, lines);
        reals > 0 && reals * elem <= limits.max_shared.saturating_sub(STATIC_BYTES)
    };
    [lines, 1].into_iter().find(|&l| fits(l))
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
    /// The launch over a grid of `shape` (the stencil's axes), elements of `elem` bytes,
    /// `lines` lines a lane.
    pub fn new(manifest: &KernelManifest, shape: &[usize], elem: usize, lines: usize) -> Result<Self> {
        let fail = |reason: String| launch_error(manifest, KernelKind::Lanes, reason);
        let lane_reals = lane_reals(manifest, lines);
        let extents = manifest.view(shape, 1);
        let interior: [usize; 3] = std::array::from_fn(|k| extents[k].saturating_sub(2 * manifest.radius[k]));
        // Rows and lines are `int`s in the kernel, steps run 31 past the last row.
        if interior.iter().any(|&n| n > (i32::MAX as usize) / 2) {
            return Err(fail("the grid's axes are too long for the kernel's `int` coordinates".into()));
        }
        let blocks = interior[2].div_ceil(32 * lines).max(1);
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

    fn lane_manifest(lane_reals: [usize; 2]) -> KernelManifest {
        KernelManifest {
            kernels: &[LANES],
            wavefront: Some(WavefrontFacts {
                windows: &[0, 1],
                point_windows: 0,
                z_radius: [1, 1, 0],
                lane_axes: 1,
                lane_reals,
            }),
            ..manifest([1, 0, 1], &[0, 2])
        }
    }

    #[test]
    fn the_lanes_run_where_a_block_s_windows_fit() {
        // The alternate-triangular half-step's sizes (two windows).
        let m = lane_manifest([11_396, 22_280]);
        assert_eq!(lanes_fit(&m, 4, LIMITS, 1), Some(1), "f32: 45 KB a block");
        assert_eq!(lanes_fit(&m, 4, LIMITS, 2), Some(2), "f32, two lines a lane: 89 KB");
        assert_eq!(lanes_fit(&m, 8, LIMITS, 2), Some(2), "f64, two lines a lane: 178 KB");
        let wide = lane_manifest([20_000, 40_000]);
        assert_eq!(lanes_fit(&wide, 8, LIMITS, 2), Some(1), "320 KB with two lines a lane; 160 KB with one");
        assert_eq!(lanes_fit(&lane_manifest([40_000, 80_000]), 8, LIMITS, 2), None, "320 KB: too much");
        assert_eq!(lanes_fit(&manifest([1, 0, 1], &[0, 2]), 4, LIMITS, 1), None, "no lane kernel");
        let volta = Limits { major: 7, ..LIMITS };
        assert_eq!(lanes_fit(&m, 4, volta, 1), None, "no cp.async before 8.0");
    }

    #[test]
    fn blocks_cover_the_lines_in_warps_of_32() {
        let m = lane_manifest([11_396, 22_280]);
        let grid = LaneGrid::new(&m, &[3602, 1802], 4, 1).unwrap();
        assert_eq!(grid.extents, [3602, 1, 1802]);
        assert_eq!(grid.shape.grid, [57, 1, 1], "1800 lines: 57 blocks");
        assert_eq!(grid.shape.block, [224, 1, 1], "a compute warp, a loader, a storer, a receiver and a parts warp");
        assert_eq!(grid.shape.shared as usize, 11_396 * 4);
        assert_eq!(grid.handoff_words, 57 * 3600 * 2, "a 64-bit word per block and row");
        assert_eq!(LaneGrid::new(&m, &[3602, 1802], 8, 1).unwrap().handoff_words, 57 * 3600 * 4, "two for f64");
        assert_eq!(LaneGrid::new(&m, &[10, 3], 4, 1).unwrap().shape.grid, [1, 1, 1], "one line");
        let pairs = LaneGrid::new(&m, &[3602, 1802], 4, 2).unwrap();
        assert_eq!(pairs.shape.grid, [29, 1, 1], "two lines a lane: 64 a block");
        assert_eq!(pairs.shape.shared as usize, 22_280 * 4);
        assert_eq!(pairs.handoff_words, 29 * 3600 * 2);
    }
}
