//! The streaming kernel's launch (`Schedule::Streaming`): one block per core tile of the
//! two fast axes and chunk of the slowest axis's cores, marching the chunk's working region
//! plane by plane. Computed from the kernel manifest's facts and the device's limits only.

use super::launch::{Cycle, Limits, Shape, launch_error};
use crate::Result;
use crate::kernel::{KernelKind, KernelManifest, StreamingFacts};
use crate::schedule::CycleSizes;

/// Threads per block unless asked otherwise: a 3-D region of 32 × 32 columns, one column
/// per thread.
pub(crate) const DEFAULT_STREAM_THREADS: usize = 1024;

/// Threads resident on one multiprocessor (Hopper, Ampere).
const THREADS_PER_MULTIPROCESSOR: usize = 2048;

/// Waves of blocks the chunks of axis 0 aim at, so that the last wave's idle
/// multiprocessors cost little.
const WAVES: usize = 4;

/// What the streaming kernel is compiled with: its `-D` definitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StreamBuild {
    /// Levels held (`STREAM_SUB`): the longest cycle a launch may run.
    pub levels: usize,
    /// Region columns per thread (`STREAM_COLS`).
    pub cols: usize,
    /// Threads per block (`STREAM_THREADS`).
    pub threads: usize,
    /// The widest working region's extents on kernel axes 1 and 2 (`STREAM_W1`,
    /// `STREAM_W2`): a plane's layout in shared memory.
    pub extents: [usize; 2],
    /// Whether the mirror rule is compiled (`STREAM_MIRRORS`): some region may meet a
    /// Neumann side.
    pub mirrors: bool,
    /// Whether a step computes its levels in ascending order (`STREAM_ASCENDING`).
    pub ascending: bool,
    /// Whether level 0 is the last iteration of the levels' loop in descending order
    /// (`STREAM_ZERO_IN_LOOP`), rather than following it.
    pub zero_in_loop: bool,
    /// Elements on each side of a plane in shared memory that reads from a column at the
    /// plane's edge, or past it, may touch and nothing writes (`STREAM_GUARD`): the kernel
    /// computes every column of a steady step and keeps the updated ones.
    pub guard: usize,
}

impl StreamBuild {
    /// The build for cycles of at most `sizes.sub` subiterations on a grid seen as `dims`
    /// whose working regions meet its edges as `edges` says (per kernel axis; a window's
    /// regions meet the same edges on axes 1 and 2), with `threads` per block asked for
    /// (default [`DEFAULT_STREAM_THREADS`]), for elements of `elem` bytes.
    pub fn new(
        manifest: &KernelManifest,
        dims: [usize; 3],
        sizes: CycleSizes,
        threads: Option<usize>,
        edges: [i32; 3],
        elem: usize,
    ) -> Self {
        let mirrors = edges.iter().any(|e| e & 6 != 0);
        let extents = region_extents(manifest, dims, sizes, edges);
        // The order of the levels and the place of level 0, as measured fastest on an H100
        // (`docs/performance.md`). Ascending order takes a shorter queue of registers per
        // level and column for a field read at the point, and a shorter ring, but makes each
        // level wait on the one before it in the same step: with 8-byte elements in 3-D the
        // descending order's queues spill (`jacobi7`, sub 4, 1024 threads: 40 bytes of stack
        // against 8) and ascending ran faster; with 4-byte elements, or in 2-D (one column
        // row a region), descending did. Level 0 in the levels' loop ran faster in 3-D (most
        // at 1024³) and slower in 2-D.
        let three_d = extents[0] > 1;
        let ascending = !mirrors && elem >= 8 && three_d && manifest.streaming.ascending_ring.is_some();
        let zero_in_loop = three_d;
        let columns = extents[0] * extents[1];
        let most = threads.unwrap_or(DEFAULT_STREAM_THREADS).clamp(32, 1024);
        let cols = columns.div_ceil(most);
        let threads = columns.div_ceil(cols).next_multiple_of(32);
        let [_, r1, r2] = manifest.radius;
        let guard = r1 * extents[1] + r2 + threads * cols - columns;
        Self { levels: sizes.sub, cols, threads, extents, mirrors, ascending, zero_in_loop, guard }
    }

    /// Elements of one plane's slot in shared memory: the plane and its guards.
    pub fn slot(&self) -> usize {
        self.extents[0] * self.extents[1] + 2 * self.guard
    }

    /// Planes of each level's ring in shared memory.
    fn ring(&self, manifest: &KernelManifest) -> usize {
        manifest.streaming.ring(self.mirrors, self.ascending)
    }

    /// The definitions the module is compiled with.
    pub fn defines(&self) -> [(&'static str, usize); 9] {
        [
            ("STREAM_SUB", self.levels),
            ("STREAM_COLS", self.cols),
            ("STREAM_THREADS", self.threads),
            ("STREAM_W1", self.extents[0]),
            ("STREAM_W2", self.extents[1]),
            ("STREAM_MIRRORS", usize::from(self.mirrors)),
            ("STREAM_ASCENDING", usize::from(self.ascending)),
            ("STREAM_ZERO_IN_LOOP", usize::from(self.zero_in_loop)),
            ("STREAM_GUARD", self.guard),
        ]
    }

    /// The launch of a cycle of `sizes` over a grid seen as `dims`, whose working regions
    /// meet the grid's edges as `edges` says (per kernel axis), on a module of this build.
    pub fn cycle(
        &self,
        manifest: &KernelManifest,
        dims: [usize; 3],
        sizes: CycleSizes,
        elem: usize,
        limits: Limits,
        edges: [i32; 3],
    ) -> Result<Cycle> {
        let fail = |reason| launch_error(manifest, KernelKind::Streaming, reason);
        if sizes.sub > self.levels {
            return Err(fail(format!("a cycle of {} subiterations on a kernel built for {}", sizes.sub, self.levels)));
        }
        let mirrored = edges.iter().any(|e| e & 6 != 0);
        if mirrored && !self.mirrors {
            return Err(fail(
                "a region meets a mirrored side, and the kernel was built without the mirror rule".into(),
            ));
        }
        // The same tiles, halos and cores as a hierarchical cycle; the shape is the
        // streaming kernel's.
        let base = Cycle::new(manifest, dims, sizes, elem, false, Limits { max_shared: usize::MAX, ..limits }, edges)?;
        let radius = manifest.radius;
        let [w1, w2] = region_extents(manifest, dims, sizes, edges);
        if w1 > self.extents[0] || w2 > self.extents[1] {
            return Err(fail(format!("a region of {w1}×{w2} columns on a kernel built for {:?}", self.extents)));
        }
        // The ring follows the build: one built with the mirror rule has the longer ring on
        // every region.
        let ring = self.ring(manifest);
        let shared = StreamingFacts::shared_bytes(self.levels, manifest.hierarchical.unknowns, ring, self.slot(), elem);
        if shared > limits.max_shared {
            return Err(fail(format!(
                "{} levels of {} planes of {}×{} points (and {} guard points on each side of a plane) need {shared} \
                 B of shared memory, and the device allows {} B per block: use a smaller tile or fewer \
                 subiterations",
                self.levels, ring, self.extents[0], self.extents[1], self.guard, limits.max_shared
            )));
        }
        let [tiles2, tiles1, _] = base.shape.grid;
        let shape = if base.axis0 == 0 {
            // Chunks of axis 0's cores: enough blocks for a few waves, each chunk long
            // enough that its halos and the levels' lag cost little.
            let cores = base.cores0.1 - base.cores0.0;
            let lag = radius[0] + 1;
            // From the levels built, not the cycle's length: every launch of a run then has
            // the same blocks, which bound its check buffers.
            let shortest = (8 * self.levels * lag).max(1);
            let resident = (THREADS_PER_MULTIPROCESSOR / self.threads).min(limits.max_shared / shared.max(1)).max(1);
            let wanted = (WAVES * limits.multiprocessors * resident).div_ceil(tiles1 as usize * tiles2 as usize);
            let chunks = chunks_of(cores, wanted.min(cores.div_ceil(shortest)).clamp(1, limits.max_grid_yz));
            Shape { grid: [tiles2, tiles1, chunks as u32], block: [self.threads as u32, 1, 1], shared: shared as u32 }
        } else {
            Shape { grid: [tiles2, 1, 1], block: [self.threads as u32, 1, 1], shared: shared as u32 }
        };
        Ok(Cycle { kind: KernelKind::Streaming, shape, ..base })
    }
}

/// The number of chunks the kernel cuts `cores` planes into when asked for `wanted`: it
/// takes chunks of ⌈cores / chunks⌉ planes, so fewer may cover the planes, and a chunk past
/// the last plane would start beyond the grid.
fn chunks_of(cores: usize, wanted: usize) -> usize {
    let wanted = wanted.clamp(1, cores.max(1));
    cores.max(1).div_ceil(cores.max(1).div_ceil(wanted))
}

/// The widest working region's extents on kernel axes 1 and 2 for `sizes`: clipped to the
/// grid, except on a periodic axis, where a region goes on past its edge.
fn region_extents(manifest: &KernelManifest, dims: [usize; 3], sizes: CycleSizes, edges: [i32; 3]) -> [usize; 2] {
    // As `Cycle::new` clips them: a tile or halo beyond the grid computes what the grid's
    // own width would.
    let largest = dims.iter().copied().max().unwrap_or(1);
    let extent = |a: usize| {
        let r = manifest.radius[a];
        let halo = if r == 0 { 0 } else { sizes.halo.min(largest) };
        let wide = sizes.tile.min(largest).min(dims[a] - 2 * r) + 2 * halo;
        if edges[a] & 1 != 0 { wide } else { wide.min(dims[a]) }
    };
    [extent(1), extent(2)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::launch::tests::{LIMITS, manifest};

    fn jacobi7() -> KernelManifest {
        let streaming = StreamingFacts { ring: 4, ascending_ring: Some(2), mirrored_ring: 4 };
        KernelManifest { streaming, ..manifest([1, 1, 1], &[0, 1, 2]) }
    }

    const SIZES: CycleSizes = CycleSizes { tile: 24, halo: 4, sub: 4 };

    #[test]
    fn every_plane_slot_has_guards_for_the_reads_past_its_edges() {
        let m = jacobi7();
        let build = StreamBuild::new(&m, [512, 512, 512], SIZES, None, [0; 3], 4);
        assert_eq!((build.extents, build.threads, build.cols), ([32, 32], 1024, 1));
        assert_eq!(build.guard, 32 + 1, "a row and a point on each side");
        assert_eq!(build.slot(), 32 * 32 + 2 * 33);
        let cycle = build.cycle(&m, [512, 512, 512], SIZES, 4, LIMITS, [0; 3]).unwrap();
        assert_eq!(cycle.shape.shared as usize, 4 * 4 * (32 * 32 + 2 * 33) * 4, "levels × ring × slot × bytes");
        // 1024 columns on 96 threads: 11 each; the 32 columns past the region (1056 − 1024),
        // held by the last three threads, reach into the guard too.
        let narrow = StreamBuild::new(&m, [512, 512, 512], SIZES, Some(96), [0; 3], 4);
        assert_eq!((narrow.threads, narrow.cols), (96, 11));
        assert_eq!(narrow.guard, 33 + 96 * 11 - 1024);
        assert!(narrow.defines().contains(&("STREAM_GUARD", narrow.guard)));
    }

    #[test]
    fn the_levels_run_ascending_on_shorter_rings_in_double_precision_in_three_dimensions_only() {
        let m = jacobi7();
        let single = StreamBuild::new(&m, [512, 512, 512], SIZES, None, [0; 3], 4);
        let double = StreamBuild::new(&m, [512, 512, 512], SIZES, None, [0; 3], 8);
        assert!(!single.ascending && double.ascending);
        assert!(double.defines().contains(&("STREAM_ASCENDING", 1)));
        let cycle = double.cycle(&m, [512, 512, 512], SIZES, 8, LIMITS, [0; 3]).unwrap();
        assert_eq!(cycle.shape.shared as usize, 4 * 2 * double.slot() * 8);
        // A stencil whose reads across columns reach R0 planes ahead has no ascending ring.
        let ahead = KernelManifest { streaming: StreamingFacts { ascending_ring: None, ..m.streaming }, ..m };
        assert!(!StreamBuild::new(&ahead, [512, 512, 512], SIZES, None, [0; 3], 8).ascending);
        // A 2-D grid (one row of columns a region) runs them descending, level 0 after the loop.
        let jacobi5 = KernelManifest { streaming: m.streaming, ..manifest([1, 0, 1], &[0, 2]) };
        let flat = StreamBuild::new(&jacobi5, [8192, 1, 8192], SIZES, None, [0; 3], 8);
        assert_eq!(flat.extents[0], 1);
        assert!(!flat.ascending && !flat.zero_in_loop);
        assert!(single.zero_in_loop);
    }

    #[test]
    fn a_build_with_the_mirror_rule_has_its_longer_ring_on_every_region() {
        // Mirrored on axis 0 only: a slab of an out-of-core pass may see no mirrored side
        // (edges 0) on a module built for one that does, whose kernel runs the longer ring.
        let m = KernelManifest { streaming: StreamingFacts { mirrored_ring: 8, ..jacobi7().streaming }, ..jacobi7() };
        let build = StreamBuild::new(&m, [512, 512, 512], SIZES, None, [4, 0, 0], 8);
        assert!(build.mirrors && !build.ascending, "mirrored: descending in either precision");
        for edges in [[4, 0, 0], [0; 3]] {
            let cycle = build.cycle(&m, [512, 512, 512], SIZES, 4, LIMITS, edges).unwrap();
            assert_eq!(cycle.shape.shared as usize, 4 * 8 * build.slot() * 4, "edges {edges:?}");
        }
        let plain = StreamBuild::new(&m, [512, 512, 512], SIZES, None, [0; 3], 8);
        assert!(plain.cycle(&m, [512, 512, 512], SIZES, 4, LIMITS, [4, 0, 0]).is_err());
    }

    #[test]
    fn every_chunk_starts_inside_the_planes() {
        for cores in [1, 2, 7, 64, 130, 8449, 100_000] {
            for wanted in [1, 2, 3, 63, 132, 133, 1000, 200_000] {
                let chunks = chunks_of(cores, wanted);
                let length = cores.div_ceil(chunks);
                assert!(chunks >= 1 && chunks <= wanted.max(1), "{cores} planes, {wanted} wanted: {chunks}");
                assert!(length * (chunks - 1) < cores, "{cores} planes, {wanted} wanted: an empty chunk");
                assert!(length * chunks >= cores, "{cores} planes, {wanted} wanted: planes left out");
            }
        }
        assert_eq!(chunks_of(8449, 132), 130, "chunks of 65 planes");
    }
}
