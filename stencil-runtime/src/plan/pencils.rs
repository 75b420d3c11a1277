//! The pencils of the wavefront kernel over a grid, from the kernel manifest's facts and a
//! device's limits: the tile's lanes, the chunks and shared-memory window, the pencils'
//! shift onto sectors and the order blocks take them in. Pure arithmetic, like
//! [`super::launch`].

use super::launch::{Limits, Shape, launch_error};
use crate::kernel::{KernelKind, KernelManifest, WAVEFRONT_HELPERS, WAVEFRONT_STAGE_BYTES, WavefrontFacts};
use crate::stencil::{Direction, SweepMeta};
use crate::{Result, StencilMeta};

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

/// How a wavefront block stages its planes, as asked for: the planes its helpers pass at a
/// time and the planes of its shared-memory window (`None`: chosen to fit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Staging {
    /// Planes a chunk (`WF_CHUNK`).
    pub chunk: Option<usize>,
    /// Planes of the window (`WF_WIN`).
    pub window: Option<usize>,
}

impl Staging {
    /// The chunk and window planes for tiles of `tile` and planes of `plane_bytes` bytes, or
    /// why none fit. A chunk not asked for is 8, halved until a window fits (one asked for,
    /// or the planes needed and a chunk more, [`window_of`]).
    fn choose(
        self,
        facts: &WavefrontFacts,
        tile: usize,
        plane_bytes: usize,
        limits: Limits,
    ) -> std::result::Result<(usize, usize), String> {
        let chunks = match self.chunk {
            Some(chunk) => vec![chunk.max(1)],
            None => std::iter::successors(Some(DEFAULT_CHUNK), |&c| (c > 1).then_some(c / 2)).collect(),
        };
        let fits = |planes: usize, chunk: usize| window_bytes(planes, chunk, plane_bytes) <= limits.max_shared;
        let chosen = |chunk: usize| match self.window {
            Some(planes) => {
                (planes.is_multiple_of(chunk) && planes >= facts.window_planes(tile, chunk) && fits(planes, chunk))
                    .then_some(planes)
            }
            None => window_of(facts, tile, chunk, plane_bytes, limits),
        };
        if let Some(fitting) = chunks.iter().find_map(|&c| chosen(c).map(|w| (c, w))) {
            return Ok(fitting);
        }
        let chunk = chunks[chunks.len() - 1];
        let needed = facts.window_planes(tile, chunk);
        let planes = self.window.unwrap_or(needed);
        let bytes = window_bytes(planes, chunk, plane_bytes);
        let fields = facts.windows.len();
        Err(match self.window {
            Some(planes) if planes < needed || !planes.is_multiple_of(chunk) => format!(
                "a window of {planes} planes for a tile of {tile} lanes and chunks of {chunk}: it needs a multiple of \
                 the chunk of at least {needed} planes (a chunk being loaded, the lag between the tile's first and last \
                 lanes and the reads' reach)"
            ),
            _ => format!(
                "the windows of a tile of {tile} lanes ({fields} fields, {planes} planes) need {bytes} B of shared \
                 memory, and the device allows {} B per block: use a smaller tile{}",
                limits.max_shared,
                if self.window.is_some() { " or window" } else { "" }
            ),
        })
    }
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
    /// The pencils of a grid of `shape` for tiles of `tile` lanes per axis, their planes staged
    /// as `staging` asks, elements of `elem` bytes, checked against the device's limits.
    pub fn new(
        meta: &StencilMeta,
        manifest: &KernelManifest,
        shape: &[usize],
        tile: usize,
        staging: Staging,
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
        let (chunk, window) = staging.choose(facts, tile, plane_bytes, limits).map_err(fail)?;
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
mod tests {
    use super::*;
    use crate::plan::launch::tests::{LIMITS, manifest};

    /// `gs7`'s facts: a 3-D sweep staging the unknown and a field read at the point, reads one
    /// plane away.
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
            point_windows: 1,
            z_radius: [1, 1, 1],
            lane_axes: 2,
            lane_reals: [0, 0],
        };
        (meta, KernelManifest { wavefront: Some(facts), ..manifest([1, 1, 1], &[0, 1, 2]) })
    }

    #[test]
    fn pencils_hold_their_lanes_warps_their_helpers_and_whole_chunks() {
        let (meta, m) = gs7();
        let chosen = Staging::default();
        let chunk = |chunk| Staging { chunk: Some(chunk), window: None };
        let p = Pencils::new(&meta, &m, &[258, 258, 258], 16, chosen, 4, LIMITS).unwrap();
        assert_eq!(p.shape.block, [256 + 192, 1, 1]);
        assert_eq!((p.chunk, p.window), (8, 64), "41 planes needed, a chunk ahead, a power of two");
        assert_eq!(m.wavefront.unwrap().halo_plane_reals(16, 4), 18 * 18, "f32: rows not padded");
        assert_eq!(p.shape.shared as usize, 64 * (18 * 18 + 16 * 16) * 4, "`f` has no halo");
        assert_eq!(p.count, [16, 17], "the contiguous axis's pencils shifted by a cell: 257 cells");
        assert_eq!(p.origin, [0, 1]);
        // f64: 18 rows of 18, each row's 16 lanes on 16 bytes, 2 values in, after a pad and
        // the halo cell; the last row's halo cell past its 18th value and a pad, 326 in all.
        assert_eq!(m.wavefront.unwrap().halo_plane_reals(16, 8), 17 * 18 + 2 + 16 + 1 + 1);
        assert_eq!(m.wavefront.unwrap().halo_plane_reals(12, 8), 13 * 14 + 2 + 12 + 1 + 1, "rows of 14");
        assert_eq!(m.wavefront.unwrap().halo_plane_reals(3, 8), 5 * 5, "rows of 24 bytes: not padded");
        assert_eq!(m.wavefront.unwrap().halo_plane_reals(1, 8), 3 * 3, "a lane a row: not padded");
        let f64_16 = Pencils::new(&meta, &m, &[258, 258, 258], 16, chosen, 8, LIMITS).unwrap();
        assert_eq!((f64_16.chunk, f64_16.window), (8, 48), "f64: 64 or 56 planes do not fit, the 48 needed do");
        let odd = Pencils::new(&meta, &m, &[258, 258, 258], 8, chunk(6), 4, LIMITS).unwrap();
        assert_eq!(odd.window % 6, 0, "a chunk that is not a power of two: whole chunks");
        assert!(odd.window > 6 + 14 + 2, "more than a chunk, the lag and the reach");
        assert_eq!(Pencils::new(&meta, &m, &[10, 10, 10], 3, chosen, 4, LIMITS).unwrap().shape.block, [32 + 192, 1, 1]);
        let wide = Pencils::new(&meta, &m, &[258, 258, 258], 32, chosen, 4, LIMITS).unwrap_err().to_string();
        assert!(wide.contains("1216 threads per block") && wide.contains("at most 28"), "{wide}");
        let deep = Pencils::new(&meta, &m, &[258, 258, 258], 16, chunk(64), 8, LIMITS).unwrap_err().to_string();
        assert!(deep.contains("shared memory"), "{deep}");
    }

    #[test]
    fn a_window_asked_for_is_whole_chunks_above_what_the_lanes_read_and_fits() {
        let (meta, m) = gs7();
        let window = |chunk, window| Staging { chunk, window: Some(window) };
        let pencils = |staging, elem| Pencils::new(&meta, &m, &[258, 258, 258], 16, staging, elem, LIMITS);
        let fewest = pencils(window(None, 48), 4).unwrap();
        assert_eq!((fewest.chunk, fewest.window), (8, 48), "the planes the lanes read, no chunk ahead");
        assert!(2 * fewest.shape.shared as usize <= LIMITS.max_shared, "two blocks share a multiprocessor");
        let halved = pencils(window(None, 44), 4).unwrap();
        assert_eq!((halved.chunk, halved.window), (4, 44), "a chunk not asked for is halved until it divides");
        let short = pencils(window(Some(8), 40), 4).unwrap_err().to_string();
        assert!(short.contains("a window of 40 planes") && short.contains("at least 48"), "{short}");
        let uneven = pencils(window(Some(8), 52), 4).unwrap_err().to_string();
        assert!(uneven.contains("a multiple of the chunk"), "{uneven}");
        let large = pencils(window(Some(8), 64), 8).unwrap_err().to_string();
        assert!(large.contains("shared memory") && large.contains("smaller tile or window"), "{large}");
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
            let p = Pencils::new(&meta, &m, &shape, tile, Staging::default(), 4, LIMITS).unwrap();
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
