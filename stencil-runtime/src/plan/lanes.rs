//! The lane kernel's launch geometry: a team of three warps (compute, loader, storer) per 32
//! lines of a 2-D sweep, as many teams per block as their windows in shared memory allow.

use super::launch::{Limits, Shape, launch_error};
use crate::Result;
use crate::kernel::{KernelKind, KernelManifest};

/// Compute warps per block at most: each brings a loader and a storer, and a block of 4
/// teams measured fastest (`docs/performance.md`).
pub(crate) const MAX_LANE_WARPS: usize = 4;

/// Threads of a team: a compute warp, its loader and its storer (the kernel's `LN_TEAM`).
const TEAM_THREADS: usize = 96;

/// Bytes of static shared memory the lane kernel declares besides its windows, rounded up:
/// its ticket, a counter and 32 mbarriers of 8 bytes per warp.
const STATIC_BYTES: usize = 64 + MAX_LANE_WARPS * (4 + 32 * 8);

/// Compute warps per block for elements of `elem` bytes: as many windows as fit in a block's
/// shared memory, at most [`MAX_LANE_WARPS`]; `None` where the stencil has no lane kernel, not
/// one window fits or the device is older than compute capability 8.0 (the kernel's
/// asynchronous copies and mbarriers).
pub(crate) fn lane_warps(manifest: &KernelManifest, elem: usize, limits: Limits) -> Option<usize> {
    manifest.kernel(KernelKind::Lanes)?;
    if limits.major < 8 {
        return None;
    }
    let per_warp = manifest.wavefront?.lane_reals * elem;
    let warps = limits.max_shared.saturating_sub(STATIC_BYTES) / per_warp.max(1);
    (warps >= 1).then_some(warps.min(MAX_LANE_WARPS))
}

/// The lane kernel's launch over a grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LaneGrid {
    /// The grid's extents as the kernel sees them (kernel axes).
    pub extents: [usize; 3],
    pub shape: Shape,
}

impl LaneGrid {
    /// The launch over a grid of `shape` (the stencil's axes) with `warps` compute warps per
    /// block, elements of `elem` bytes.
    pub fn new(manifest: &KernelManifest, shape: &[usize], warps: usize, elem: usize) -> Result<Self> {
        let fail = |reason: String| launch_error(manifest, KernelKind::Lanes, reason);
        let lane_reals = manifest.wavefront.map_or(0, |w| w.lane_reals);
        let extents = manifest.view(shape, 1);
        let interior: [usize; 3] = std::array::from_fn(|k| extents[k].saturating_sub(2 * manifest.radius[k]));
        // Rows and lines are `int`s in the kernel, steps run 31 past the last row.
        if interior.iter().any(|&n| n > (i32::MAX as usize) / 2) {
            return Err(fail("the grid's axes are too long for the kernel's `int` coordinates".into()));
        }
        let lines = interior[2];
        let blocks = lines.div_ceil(32).div_ceil(warps).max(1);
        let shared = warps * lane_reals * elem;
        let shape =
            Shape { grid: [blocks as u32, 1, 1], block: [(TEAM_THREADS * warps) as u32, 1, 1], shared: shared as u32 };
        Ok(Self { extents, shape })
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
    fn warps_per_block_are_what_the_windows_let_fit() {
        assert_eq!(lane_warps(&lane_manifest(10_116), 4, LIMITS), Some(4), "f32: 40 KB a warp");
        assert_eq!(lane_warps(&lane_manifest(10_116), 8, LIMITS), Some(2), "f64: 81 KB a warp");
        assert_eq!(lane_warps(&lane_manifest(40_000), 8, LIMITS), None, "320 KB: not one warp");
        assert_eq!(lane_warps(&manifest([1, 0, 1], &[0, 2]), 4, LIMITS), None, "no lane kernel");
        let volta = Limits { major: 7, ..LIMITS };
        assert_eq!(lane_warps(&lane_manifest(10_116), 4, volta), None, "no cp.async or mbarrier before 8.0");
    }

    #[test]
    fn blocks_cover_the_lines_in_warps_of_32() {
        let m = lane_manifest(10_116);
        let grid = LaneGrid::new(&m, &[3602, 1802], 4, 4).unwrap();
        assert_eq!(grid.extents, [3602, 1, 1802]);
        assert_eq!(grid.shape.grid, [15, 1, 1], "1800 lines: 57 warps, 15 blocks of 4");
        assert_eq!(grid.shape.block, [384, 1, 1], "a compute warp, a loader and a storer per 32 lines");
        assert_eq!(grid.shape.shared as usize, 4 * 10_116 * 4);
        assert_eq!(LaneGrid::new(&m, &[10, 3], 4, 4).unwrap().shape.grid, [1, 1, 1], "one line");
    }
}
