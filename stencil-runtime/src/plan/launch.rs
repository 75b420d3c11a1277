//! The launch geometry of the generated kernels, computed from the kernel manifest's facts
//! (`kernel.rs`) and a device's limits: the plain pass's blocks, a hierarchical cycle's tiles
//! and working regions (a wavefront's pencils are in [`super::pencils`]). Pure arithmetic: the CUDA backend turns a
//! [`Shape`] into a launch.

use crate::kernel::{KernelKind, KernelManifest};
use crate::schedule::CycleSizes;
use crate::{Error, Result};

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
}
