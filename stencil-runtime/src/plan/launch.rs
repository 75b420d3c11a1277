//! The launch geometry of the generated kernels, computed from the kernel manifest's facts
//! (`kernel.rs`) and a device's limits: the plain pass's blocks, a hierarchical cycle's tiles
//! and working regions, a wavefront's pencils. Pure arithmetic: the CUDA backend turns a
//! [`Shape`] into a launch.

use crate::kernel::{KernelKind, KernelManifest, WAVEFRONT_HELPERS, WAVEFRONT_STAGE_BYTES, WavefrontFacts};
use crate::schedule::CycleSizes;
use crate::stencil::{Direction, SweepMeta};
use crate::{Error, Result, StencilMeta};

/// What a launch needs from the device: its limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Threads in one block.
    pub max_threads: usize,
    /// Blocks on the grid's y and z axes.
    pub max_grid_yz: usize,
    /// Shared memory of one block in bytes, dynamic memory opted in.
    pub max_shared: usize,
    /// Streaming multiprocessors.
    pub multiprocessors: usize,
    /// Compute capability, major version.
    pub major: usize,
}

/// A launch's shape: blocks per axis, threads per block, dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
}

impl Shape {
    /// Blocks launched.
    pub fn blocks(&self) -> usize {
        self.grid.iter().map(|&n| n as usize).product()
    }
}

pub(crate) fn launch_error(manifest: &KernelManifest, kind: KernelKind, reason: String) -> Error {
    let kernel = manifest.kernel(kind).map_or("a kernel", |k| k.symbol).to_owned();
    Error::Launch { kernel, reason }
}

/// The plain and measuring kernels' launch over the interior of a grid seen as `dims`
/// (kernel axes), with `block` = `[BLOCK_X, BLOCK_Y, MARCH]`: a column of BLOCK_X × BLOCK_Y
/// threads marching MARCH planes, one block per column and run of planes, each thread
/// `vector` points along x (a divisor of the extent there). On the two fast axes the threads
/// start at the array's origin (a warp's own points then start on an aligned segment wherever
/// a row does), so the blocks cover the whole extents there.
pub(crate) fn plain(
    manifest: &KernelManifest,
    dims: [usize; 3],
    block: [u32; 3],
    vector: u32,
    limits: Limits,
) -> Result<Shape> {
    columns(manifest, dims, block, limits, [dims[1], dims[2] / vector as usize])
}

/// The tiled kernel's launch: as [`plain`]'s, but on the two fast axes the threads start at
/// the interior's origin (its staged tiles, which begin a radius before the threads, then
/// start on an aligned segment).
pub(crate) fn tiled(manifest: &KernelManifest, dims: [usize; 3], block: [u32; 3], limits: Limits) -> Result<Shape> {
    let radius = manifest.radius;
    columns(manifest, dims, block, limits, [dims[1] - 2 * radius[1], dims[2] - 2 * radius[2]])
}

/// [`plain`] and [`tiled`]: `points[0]` threads along y and `points[1]` along x.
fn columns(
    manifest: &KernelManifest,
    dims: [usize; 3],
    block: [u32; 3],
    limits: Limits,
    points: [usize; 2],
) -> Result<Shape> {
    let radius = manifest.radius;
    let [bx, by, march] = block.map(|b| b as usize);
    let (x, y, z) = (points[1].div_ceil(bx), points[0].div_ceil(by), (dims[0] - 2 * radius[0]).div_ceil(march));
    let fail = |reason| launch_error(manifest, KernelKind::Plain, reason);
    if x > i32::MAX as usize || y > limits.max_grid_yz || z > limits.max_grid_yz {
        let limit = limits.max_grid_yz;
        return Err(fail(format!("a grid of {x}×{y}×{z} blocks exceeds the device's limits (y and z ≤ {limit})")));
    }
    if bx * by > limits.max_threads {
        return Err(fail(format!("{} threads per block, the device allows {}", bx * by, limits.max_threads)));
    }
    Ok(Shape { grid: [x as u32, y as u32, z as u32], block: [bx as u32, by as u32, 1], shared: 0 })
}

/// The cycle kernels' int parameters: tile, the cores of axis 0, three halos, subiterations,
/// the measure flag and three edge flags.
pub(crate) const CYCLE_INTS: usize = 11;

/// Registers per thread the register kernel may spend on its columns (32-bit words).
const REGISTER_COLUMN_WORDS: usize = 128;

/// The launch of a hierarchical cycle over a grid seen as `dims`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cycle {
    pub dims: [usize; 3],
    /// Which kernel runs: the register kernel (1-D and 2-D, a working region at most one
    /// warp wide whose columns fit the register budget) or the shared-memory one.
    pub kind: KernelKind,
    /// The register kernel's rows (its `HIER_ROWS`): the working region's along axis 0.
    pub rows: usize,
    /// Tile edge and halo per axis, clipped to the grid (the same semantics).
    pub tile: usize,
    pub halo: [usize; 3],
    /// The planes of the grid's axis 0 whose cores the tiles cover.
    pub cores0: (usize, usize),
    /// The kernel's axis that is the grid's axis 0.
    pub axis0: usize,
    pub sub: usize,
    /// How the working regions meet the grid's edges per kernel axis
    /// ([`CycleEdges::flags`](crate::plan::fill::CycleEdges::flags)).
    pub edges: [i32; 3],
    pub shape: Shape,
}

/// Threads per block of the boundary fill.
const FILL_BLOCK: usize = 256;

/// The launch of a boundary fill copying `points` points, one thread each.
pub(crate) fn fill_shape(manifest: &KernelManifest, points: usize) -> Result<Shape> {
    let blocks = points.div_ceil(FILL_BLOCK);
    let blocks = u32::try_from(blocks).ok().filter(|&b| b <= i32::MAX as u32).ok_or_else(|| {
        launch_error(manifest, KernelKind::Boundary, format!("{points} points are more than a launch covers"))
    })?;
    Ok(Shape { grid: [blocks.max(1), 1, 1], block: [FILL_BLOCK as u32, 1, 1], shared: 0 })
}

impl Cycle {
    /// The cycle kernel's ints for a cycle of `len` subiterations: tile, the cores of axis
    /// 0, halos, subiterations, the measure flag (`measure − 1` is the measured
    /// subiteration; 0: none) and the edges.
    pub fn ints(&self, len: usize, measure: usize) -> Result<[i32; CYCLE_INTS]> {
        let [h0, h1, h2] = self.halo;
        let values = [self.tile, self.cores0.0, self.cores0.1, h0, h1, h2, len, measure];
        let mut ints = [0i32; CYCLE_INTS];
        ints[8..].copy_from_slice(&self.edges);
        for (int, value) in ints.iter_mut().zip(values) {
            *int = i32::try_from(value).map_err(|_| Error::Launch {
                kernel: "hierarchical".into(),
                reason: format!("a cycle's {value} does not fit the kernel's `int`"),
            })?;
        }
        Ok(ints)
    }

    /// The cycle of `sizes` over a grid seen as `dims`, elements of `elem` bytes, whose
    /// working regions meet the grid's edges as `edges` says (per kernel axis; a region goes
    /// on past the edge of a wrapping axis); `registers`: whether the register kernel may run
    /// where it applies (it meets only Dirichlet edges).
    pub fn new(
        manifest: &KernelManifest,
        dims: [usize; 3],
        sizes: CycleSizes,
        elem: usize,
        registers: bool,
        limits: Limits,
        edges: [i32; 3],
    ) -> Result<Self> {
        let CycleSizes { tile, halo, sub } = sizes;
        let fail = |reason| launch_error(manifest, KernelKind::Hierarchical, reason);
        let radius = manifest.radius;
        let interior: [usize; 3] = std::array::from_fn(|a| dims[a] - 2 * radius[a]);
        let largest = dims.iter().copied().max().unwrap_or(1);
        // A tile or halo beyond the grid is clipped to it by the kernel anyway.
        let tile = tile.min(largest);
        let halo: [usize; 3] = std::array::from_fn(|a| if radius[a] == 0 { 0 } else { halo.min(largest) });
        let wraps = |a: usize| edges[a] & 1 != 0;
        let extent: [usize; 3] = std::array::from_fn(|a| match wraps(a) {
            true => tile.min(interior[a]) + 2 * halo[a],
            false => (tile.min(interior[a]) + 2 * halo[a]).min(dims[a]),
        });
        let tiles: [usize; 3] = std::array::from_fn(|a| interior[a].div_ceil(tile));
        if tiles[2] > i32::MAX as usize || tiles[1] > 65535 || tiles[0] > 65535 {
            return Err(fail(format!("{}×{}×{} tiles exceed the device's grid limits", tiles[0], tiles[1], tiles[2])));
        }
        let axis0 = manifest.axes.first().copied().unwrap_or(0);
        if dims[axis0] > i32::MAX as usize {
            return Err(fail(format!("{} planes do not fit the kernel's `int`", dims[axis0])));
        }
        let facts = &manifest.hierarchical;
        let cores0 = (radius[axis0], dims[axis0] - radius[axis0]);
        let words = extent[0] * facts.registers.len() * elem.div_ceil(4);
        let fits_registers = manifest.kernel(KernelKind::HierarchicalRows).is_some()
            && edges == [0; 3]
            && extent[2] <= facts.register_width
            && words <= REGISTER_COLUMN_WORDS;
        let base = Self {
            dims,
            kind: KernelKind::Hierarchical,
            rows: 0,
            tile,
            halo,
            cores0,
            axis0,
            sub,
            edges,
            shape: Shape { grid: [tiles[2] as u32, tiles[1] as u32, tiles[0] as u32], block: [1, 1, 1], shared: 0 },
        };
        if registers && fits_registers {
            let shape = Shape { grid: [tiles[2] as u32, 1, tiles[0] as u32], block: [32, 1, 1], shared: 0 };
            return Ok(Self { kind: KernelKind::HierarchicalRows, rows: extent[0], shape, ..base });
        }
        let volume: usize = extent.iter().product();
        let shared_bytes = facts.shared_bytes(volume, elem);
        if shared_bytes > limits.max_shared {
            return Err(fail(format!(
                "a working region of {}×{}×{} points (tile {tile} and halo {} on each side) needs {shared_bytes} B of \
                 shared memory ({} arrays of {} B), and the device allows {} B per block: use a smaller tile or halo",
                extent[0],
                extent[1],
                extent[2],
                halo.iter().max().unwrap_or(&0),
                facts.arrays(),
                volume * elem,
                limits.max_shared
            )));
        }
        // Threads: powers of two up to 512, the fast axis first, at least one warp (the
        // kernel's reduction works on whole warps).
        let bx = extent[2].next_power_of_two().min(64);
        let by = extent[1].next_power_of_two().min(512 / bx);
        let bz = extent[0].next_power_of_two().min(512 / (bx * by));
        let bx = bx * (32 / (bx * by * bz)).max(1);
        let shape = Shape { block: [bx as u32, by as u32, bz as u32], shared: shared_bytes as u32, ..base.shape };
        Ok(Self { shape, ..base })
    }

    /// The same launch for the tiles whose cores cover `planes` of axis 0 only (a part of
    /// the interior starting at a tile's edge), the working regions still clipped at the grid.
    pub fn cores_of_axis_0(mut self, planes: std::ops::Range<usize>) -> Self {
        debug_assert!(planes.start >= self.cores0.0 && planes.end <= self.cores0.1);
        self.cores0 = (planes.start, planes.end);
        let tiles = planes.len().div_ceil(self.tile) as u32;
        match self.axis0 {
            0 => self.shape.grid[2] = tiles,
            _ => self.shape.grid[0] = tiles,
        }
        self
    }
}

/// Planes a wavefront's helpers pass at a time where the options do not say.
const DEFAULT_CHUNK: usize = 8;

/// Bytes of shared memory of a wavefront block with a window of `planes` planes of
/// `plane_bytes` each, passed `chunk` at a time: the windows, three mbarriers a chunk of
/// the window and the block's other words.
fn window_bytes(planes: usize, chunk: usize, plane_bytes: usize) -> usize {
    planes * plane_bytes + planes / chunk * WAVEFRONT_STAGE_BYTES + 64
}

/// The planes of a wavefront block's window for chunks of `chunk` planes, if any fit: the
/// planes the kernel needs and a chunk more, so that the loaders work a chunk ahead of the
/// lanes' reads, rounded up to a power of two (a slot is then a mask rather than a
/// division) where the chunk is one and that still fits; else as few as fit.
fn window_of(facts: &WavefrontFacts, tile: usize, chunk: usize, plane_bytes: usize, limits: Limits) -> Option<usize> {
    let needed = facts.window_planes(tile, chunk);
    let ahead = needed + chunk;
    [if chunk.is_power_of_two() { ahead.next_power_of_two() } else { ahead }, ahead, needed]
        .into_iter()
        .find(|&planes| window_bytes(planes, chunk, plane_bytes) <= limits.max_shared)
}

/// Bytes of the memory's sectors: a store that covers one whole is written without reading it.
const SECTOR_BYTES: usize = 32;

/// The pencils' origins on the lane axes. On the grid's contiguous axis (the last lane
/// axis), where it has no skew and a tile spans whole sectors, the shift that starts every
/// pencil's rows on a sector boundary of an aligned array: its storers then write whole
/// sectors, where unshifted rows leave two sectors a row partly written, which the memory
/// fills by reading them. Zero elsewhere, and on an axis whose rows do not start on sectors
/// the shift is merely harmless.
fn sector_origin(
    sweep: &SweepMeta,
    extents: &[usize; 3],
    radius: &[usize; 3],
    lanes: [usize; 2],
    lane_axes: usize,
    elem: usize,
) -> [usize; 2] {
    let mut origin = [0, 0];
    if lane_axes == 0 || !SECTOR_BYTES.is_multiple_of(elem) {
        return origin;
    }
    // Lane axis k runs along the stencil's axis k + 1; the last axis is the contiguous one.
    let (lane_axis, axis) = (lane_axes - 1, lane_axes);
    let per_sector = SECTOR_BYTES / elem;
    if sweep.skew.get(axis).is_some_and(|&k| k != 0) || !lanes[lane_axis].is_multiple_of(per_sector) {
        return origin;
    }
    // Interior coordinate c lies at memory index r + c ascending and n − 1 − r − c
    // descending, so a pencil's lowest index is ≡ r − o or n − r + o modulo a sector.
    let (r, n) = (radius[axis] as i64, extents[axis] as i64);
    let shift = match sweep.directions.get(axis) {
        Some(Direction::Descending) => r - n,
        _ => r,
    };
    origin[lane_axis] = shift.rem_euclid(per_sector as i64) as usize;
    origin
}

/// A sweep stencil's pencils over a grid: what the wavefront kernel is launched with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pencils {
    /// Extents with the boundary layer on the stencil's own axes, a missing one having one point.
    pub extents: [usize; 3],
    /// The tile the kernel is compiled for (`WF_TILE`).
    pub tile: usize,
    /// Lanes per tile on axes 1 and 2 (1 on a missing axis).
    pub lanes: [usize; 2],
    /// Pencils on axes 1 and 2.
    pub count: [usize; 2],
    /// Planes the helpers pass at a time (`WF_CHUNK`).
    pub chunk: usize,
    /// Planes of the shared-memory window (`WF_WIN`).
    pub window: usize,
    /// The pencils' shift on each lane axis: pencil p covers z in `[p·lanes − origin, …)`
    /// ([`sector_origin`]).
    pub origin: [usize; 2],
    /// Pencils on along each lane axis whose cells a pencil's window holds (the reads'
    /// radius in z over the lanes, rounded up): a sweep after the first of a launch waits for
    /// the furthest of them in the sweep before (the kernel's `WF_A1`, `WF_A2`).
    pub reach: [usize; 2],
    /// One sweep's launch: a block per pencil.
    pub shape: Shape,
}

impl Pencils {
    /// The pencils of a grid of `shape` for tiles of `tile` lanes per axis and `chunk` planes
    /// passed at a time (default 8, halved until the window fits), elements of `elem` bytes, checked against
    /// the device's limits.
    pub fn new(
        meta: &StencilMeta,
        manifest: &KernelManifest,
        shape: &[usize],
        tile: usize,
        chunk: Option<usize>,
        elem: usize,
        limits: Limits,
    ) -> Result<Self> {
        let fail = |reason| launch_error(manifest, KernelKind::Wavefront, reason);
        let (Some(sweep), Some(facts)) = (meta.sweep.as_ref(), manifest.wavefront.as_ref()) else {
            return Err(fail(format!("`{}` is not a sweep stencil", meta.name)));
        };
        let extents: [usize; 3] = std::array::from_fn(|k| shape.get(k).copied().unwrap_or(1));
        let radius: [usize; 3] = std::array::from_fn(|k| meta.radius.get(k).copied().unwrap_or(0));
        let interior: [usize; 3] = std::array::from_fn(|k| extents[k] - 2 * radius[k]);
        let skew: [usize; 3] = std::array::from_fn(|k| sweep.skew.get(k).copied().unwrap_or(0) as usize);
        if interior.iter().any(|&i| i > i32::MAX as usize / (2 + skew.iter().sum::<usize>()))
            || extents.iter().product::<usize>() > i64::MAX as usize
        {
            return Err(fail("the grid's axes are too long for the kernel's `int` coordinates".into()));
        }
        // The largest z₁ and z₂ of an interior point: the pencils cover [0, z_max] on each.
        let z1_max = interior[1] - 1 + skew[1] * (interior[0] - 1);
        let z2_max = interior[2] - 1 + skew[2] * z1_max;
        let lanes = facts.lanes(tile);
        let threads =
            lanes[0].saturating_mul(lanes[1]).div_ceil(32).saturating_mul(32).saturating_add(WAVEFRONT_HELPERS);
        if threads > limits.max_threads {
            let most = limits.max_threads.saturating_sub(WAVEFRONT_HELPERS) / 32 * 32;
            let largest = if facts.lane_axes >= 2 { most.isqrt() } else { most };
            return Err(fail(format!(
                "a tile of {tile} lanes per axis needs {threads} threads per block (its lanes' warps and \
                 {WAVEFRONT_HELPERS} helpers), and the device allows {}: use a tile of at most {largest}",
                limits.max_threads
            )));
        }
        let plane_bytes = facts.plane_bytes(tile, elem);
        // A chunk that was not asked for is halved until the window fits.
        let chunks = match chunk {
            Some(chunk) => vec![chunk.max(1)],
            None => std::iter::successors(Some(DEFAULT_CHUNK), |&c| (c > 1).then_some(c / 2)).collect(),
        };
        let fitting = chunks.iter().find_map(|&c| window_of(facts, tile, c, plane_bytes, limits).map(|w| (c, w)));
        let Some((chunk, window)) = fitting else {
            let chunk = chunks[chunks.len() - 1];
            let planes = facts.window_planes(tile, chunk);
            return Err(fail(format!(
                "the windows of a tile of {tile} lanes ({} fields, {planes} planes) need {} B of shared memory, \
                 and the device allows {} B per block: use a smaller tile",
                facts.windows.len(),
                window_bytes(planes, chunk, plane_bytes),
                limits.max_shared
            )));
        };
        let shared = window * plane_bytes;
        let origin = sector_origin(sweep, &extents, &radius, lanes, facts.lane_axes, elem);
        let count = [(z1_max + 1 + origin[0]).div_ceil(lanes[0]), (z2_max + 1 + origin[1]).div_ceil(lanes[1])];
        let reach = [facts.z_radius[1].div_ceil(lanes[0]), facts.z_radius[2].div_ceil(lanes[1])];
        let block = facts.block(lanes);
        let shape = Shape { grid: [(count[0] * count[1]) as u32, 1, 1], block, shared: shared as u32 };
        Ok(Self { extents, tile, lanes, count, origin, chunk, window, reach, shape })
    }

    /// The launch of `sweeps` sweeps one after another: a block per pencil and sweep.
    pub fn shape_of(&self, sweeps: usize) -> Shape {
        Shape { grid: [(self.count[0] * self.count[1] * sweeps) as u32, 1, 1], ..self.shape }
    }

    /// The pencils of `sweeps` sweeps in the order blocks take them, as the kernel reads them:
    /// (p₁, p₂ + n·pencils₂) for pencil (p₁, p₂) of sweep n. Every pencil comes after those it
    /// waits for: in its sweep the pencils before it on each lane axis (p₁ + p₂ smaller), in
    /// the sweep before the furthest one its window reaches (p₁ + p₂ larger by at most
    /// `reach[0] + reach[1]`), so the order is by p₁ + p₂ + n·(reach[0] + reach[1] + 1).
    pub fn order(&self, sweeps: usize) -> Vec<i32> {
        let [c1, c2] = self.count;
        let stride = self.reach[0] + self.reach[1] + 1;
        let mut pencils: Vec<[usize; 3]> =
            (0..sweeps).flat_map(|n| (0..c1).flat_map(move |p1| (0..c2).map(move |p2| [n, p1, p2]))).collect();
        pencils.sort_by_key(|&[n, p1, p2]| (p1 + p2 + n * stride, n, p1));
        pencils.iter().flat_map(|&[n, p1, p2]| [p1 as i32, (p2 + n * c2) as i32]).collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kernel::HierarchicalFacts;

    /// An H100's limits.
    pub(crate) const LIMITS: Limits =
        Limits { max_threads: 1024, max_grid_yz: 65535, max_shared: 227 * 1024, multiprocessors: 132, major: 9 };

    /// The manifest of a one-unknown stencil of `radius` on `axes`, staging one field.
    pub(crate) fn manifest(radius: [usize; 3], axes: &'static [usize]) -> KernelManifest {
        KernelManifest {
            axes,
            radius,
            hierarchical: HierarchicalFacts { unknowns: 1, staged: &[1], registers: &[0, 1], register_width: 32 },
            ..KernelManifest::NONE
        }
    }

    #[test]
    fn plain_blocks_cover_the_grid_and_tiled_ones_the_interior() {
        let m = manifest([1, 1, 1], &[0, 1, 2]);
        let shape = plain(&m, [34, 18, 130], [64, 4, 8], 1, LIMITS).unwrap();
        assert_eq!(shape.grid, [3, 5, 4], "x and y from the array's origin, z over the interior");
        assert_eq!(tiled(&m, [34, 18, 130], [64, 4, 8], LIMITS).unwrap().grid, [2, 4, 4], "over the interior");
        assert_eq!(shape.block, [64, 4, 1]);
        assert_eq!(plain(&m, [34, 18, 130], [64, 4, 8], 2, LIMITS).unwrap().grid, [2, 5, 4], "65 threads per row");
        assert!(plain(&m, [34, 18, 130], [64, 32, 8], 1, LIMITS).is_err(), "2048 threads");
    }

    #[test]
    fn cycles_clip_tiles_and_halos_to_the_grid_and_count_their_shared_memory() {
        let m = manifest([1, 0, 1], &[0, 2]);
        let sizes = CycleSizes { tile: usize::MAX, halo: usize::MAX, sub: 2 };
        let c = Cycle::new(&m, [20, 1, 30], sizes, 8, true, LIMITS, [0; 3]).unwrap();
        assert_eq!((c.tile, c.halo), (30, [30, 0, 30]));
        assert_eq!(c.kind, KernelKind::Hierarchical, "no register kernel in the manifest");
        assert_eq!(c.shape.shared as usize, 3 * 20 * 30 * 8, "the unknown twice and one staged field");
        assert_eq!(c.shape.grid, [1, 1, 1]);
    }
    /// `gs7`'s facts: a 3-D sweep staging the unknown and one field, reads one plane away.
    fn gs7() -> (StencilMeta, KernelManifest) {
        use crate::kernel::WavefrontFacts;
        use crate::stencil::{Direction, SweepMeta};
        static DIRECTIONS: [Direction; 3] = [Direction::Ascending; 3];
        let sweep = SweepMeta { directions: &DIRECTIONS, hyperplane: &[1, 1, 1], skew: &[0, 0, 0] };
        let meta = StencilMeta {
            name: "gs7",
            dim: 3,
            fields: &[],
            unknown: 0,
            unknowns: &[0],
            params: &[],
            reads: &[],
            radius: &[1, 1, 1],
            sweep: Some(sweep),
            flops: 8,
            arrays_per_point: 3,
        };
        let facts = WavefrontFacts {
            windows: &[0, 1],
            point_windows: 0,
            z_radius: [1, 1, 1],
            lane_axes: 2,
            lane_reals: [0, 0],
        };
        (meta, KernelManifest { wavefront: Some(facts), ..manifest([1, 1, 1], &[0, 1, 2]) })
    }

    #[test]
    fn pencils_hold_their_lanes_warps_their_helpers_and_whole_chunks() {
        let (meta, m) = gs7();
        let p = Pencils::new(&meta, &m, &[258, 258, 258], 16, None, 4, LIMITS).unwrap();
        assert_eq!(p.shape.block, [256 + 192, 1, 1]);
        assert_eq!((p.chunk, p.window), (8, 64), "41 planes needed, a chunk ahead, a power of two");
        assert_eq!(p.shape.shared as usize, 64 * 18 * 18 * 2 * 4);
        assert_eq!(p.count, [16, 17], "the contiguous axis's pencils shifted by a cell: 257 cells");
        assert_eq!(p.origin, [0, 1]);
        let f64_16 = Pencils::new(&meta, &m, &[258, 258, 258], 16, None, 8, LIMITS).unwrap();
        assert_eq!((f64_16.chunk, f64_16.window), (4, 44), "f64: 48 planes of chunks of 8 do not fit, 44 of 4 do");
        let odd = Pencils::new(&meta, &m, &[258, 258, 258], 8, Some(6), 4, LIMITS).unwrap();
        assert_eq!(odd.window % 6, 0, "a chunk that is not a power of two: whole chunks");
        assert!(odd.window > 6 + 14 + 2, "more than a chunk, the lag and the reach");
        assert_eq!(Pencils::new(&meta, &m, &[10, 10, 10], 3, None, 4, LIMITS).unwrap().shape.block, [32 + 192, 1, 1]);
        let wide = Pencils::new(&meta, &m, &[258, 258, 258], 32, None, 4, LIMITS).unwrap_err().to_string();
        assert!(wide.contains("1216 threads per block") && wide.contains("at most 28"), "{wide}");
        let deep = Pencils::new(&meta, &m, &[258, 258, 258], 16, Some(64), 8, LIMITS).unwrap_err().to_string();
        assert!(deep.contains("shared memory"), "{deep}");
    }

    #[test]
    fn pencils_rows_start_on_sectors_where_the_contiguous_axis_allows() {
        use crate::stencil::{Direction::*, SweepMeta};
        let ascending = SweepMeta { directions: &[Ascending; 3], hyperplane: &[1, 1, 1], skew: &[0, 0, 0] };
        let descending = SweepMeta { directions: &[Ascending, Descending, Descending], ..ascending };
        // The memory index of the lowest cell on the contiguous axis of pencil p's row.
        let lowest = |sweep: &SweepMeta, axis: usize, n: usize, r: usize, tile: usize, o: usize, p: usize| {
            let first = p * tile - o;
            match sweep.directions[axis] {
                Ascending => r + first,
                Descending => n - 1 - r - (first + tile - 1),
            }
        };
        for sweep in [&ascending, &descending] {
            for (n, r, elem, tile) in [(258, 1, 4, 16), (515, 1, 4, 8), (517, 2, 8, 4), (300, 2, 8, 16), (99, 3, 2, 16)]
            {
                let o3 = sector_origin(sweep, &[n; 3], &[r; 3], [tile, tile], 2, elem);
                let o2 = sector_origin(sweep, &[n, n, 1], &[r, r, 0], [tile, 1], 1, elem);
                assert_eq!((o3[0], o2[1]), (0, 0), "only the contiguous axis moves");
                for p in 1..4 {
                    assert_eq!(lowest(sweep, 2, n, r, tile, o3[1], p) * elem % 32, 0, "3-D {n} {r} {elem} {tile}");
                    assert_eq!(lowest(sweep, 1, n, r, tile, o2[0], p) * elem % 32, 0, "2-D {n} {r} {elem} {tile}");
                }
            }
        }
        let skewed = SweepMeta { skew: &[0, 1, 0], ..ascending };
        assert_eq!(sector_origin(&skewed, &[99, 99, 1], &[1, 1, 0], [16, 1], 1, 4), [0, 0], "skewed");
        assert_eq!(sector_origin(&ascending, &[99; 3], &[1; 3], [4, 4], 2, 4), [0, 0], "half a sector");
        assert_eq!(sector_origin(&ascending, &[99, 1, 1], &[1, 0, 0], [1, 1], 0, 4), [0, 0], "no lanes");
    }

    #[test]
    fn sweeps_of_a_launch_take_each_pencil_once_after_those_it_waits_for() {
        let (meta, m) = gs7();
        for (shape, tile) in [([258, 258, 258], 16), ([40, 30, 20], 4), ([12, 9, 30], 1)] {
            let p = Pencils::new(&meta, &m, &shape, tile, None, 4, LIMITS).unwrap();
            let [c1, c2] = p.count;
            assert_eq!(p.reach, [1, 1], "reads one cell away on each lane axis");
            assert_eq!(p.order(1).len(), 2 * c1 * c2);
            let order = p.order(5);
            assert_eq!(p.shape_of(5).grid[0] as usize * 2, order.len());
            let taken: std::collections::HashMap<[usize; 3], usize> = order
                .chunks(2)
                .enumerate()
                .map(|(at, e)| ([e[1] as usize / c2, e[0] as usize, e[1] as usize % c2], at))
                .collect();
            assert_eq!(taken.len(), 5 * c1 * c2, "every pencil of every sweep once");
            for (&[n, p1, p2], &at) in &taken {
                let mut waited = vec![[n, p1.saturating_sub(1), p2], [n, p1, p2.saturating_sub(1)]];
                if n > 0 {
                    waited.push([n - 1, (p1 + p.reach[0]).min(c1 - 1), (p2 + p.reach[1]).min(c2 - 1)]);
                }
                for w in waited.into_iter().filter(|w| *w != [n, p1, p2]) {
                    assert!(taken[&w] < at, "{w:?} before {:?} ({shape:?}, tile {tile})", [n, p1, p2]);
                }
            }
        }
    }
}
