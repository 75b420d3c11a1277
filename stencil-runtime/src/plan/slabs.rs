//! The slabs of the out-of-core pyramid schedule (papers 000 and 001; docs/references.md), shared by the
//! GPU schedule and its CPU twin, so that both cut, load, iterate and write back the same planes in order.
//!
//! The interior planes of the slowest axis are cut into slabs of `width` planes (the last
//! one narrower). A pass of `len` iterations (`len ≤ height`) handles the slabs in order.
//! Slab `[a, b)` is loaded with `g = len · r` ghost planes per side (its *chunk*, clipped to
//! the grid); iteration `k` (0-based) updates the interior of the region that still holds
//! iterate `k` correctly, `[a − (len − k)·r, b + (len − k)·r)`, which shrinks by `r` planes
//! per iteration — the pyramid — so that after `len` iterations the slab's own planes hold
//! iterate `len` exactly, and only they are written back.
//!
//! Write-back is in place. The next slab's lower ghost planes `[b − g, b)` lie in planes
//! already written back, so the chunk's old values of those planes are kept aside (the
//! *carry*) before iterating and become the next chunk's lower part.

use std::ops::Range;

use crate::plan::Layout;
use crate::{Error, Inner, Result};

/// The slowest axis of a grid as slabs cut it: the planes `own` that the slabs cover, of a
/// grid of `planes` planes of `plane_len` elements whose stencil reads `radius` planes
/// around a point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cut {
    pub own: Range<usize>,
    pub planes: usize,
    pub radius: usize,
    pub plane_len: usize,
}

impl Cut {
    /// The interior planes of a grid of `planes` planes (one process).
    pub fn interior(planes: usize, radius: usize, plane_len: usize) -> Self {
        Self { own: radius..planes - radius, planes, radius, plane_len }
    }
}

/// An out-of-core run's schedule, as its slabs are built from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Config {
    /// The planes the slabs cover: the interior, or a rank's own planes.
    pub own: Range<usize>,
    /// Planes per slab; `None`: the widest that fits `device_memory`.
    pub slab: Option<usize>,
    /// Iterations per pass at most.
    pub height: usize,
    pub inner: Inner,
    /// Bytes the slabs' buffers may take.
    pub device_memory: Option<usize>,
}

/// What the slabs of an out-of-core run are asked to be ([`slabs_for`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlabRequest {
    /// Planes per slab; `None`: the widest whose buffers fit `device_memory`, or all the own
    /// planes without a limit.
    pub slab: Option<usize>,
    /// Iterations per pass at most.
    pub height: usize,
    /// Bytes the slabs' buffers may take.
    pub device_memory: Option<usize>,
    /// Skewed slabs instead of pyramids.
    pub skewed: bool,
}

impl Config {
    /// The slabs this configuration asks for.
    pub fn request(&self) -> SlabRequest {
        SlabRequest {
            slab: self.slab,
            height: self.height,
            device_memory: self.device_memory,
            skewed: self.inner == Inner::Skewed,
        }
    }
}

/// The slabs of one grid for one pyramid height.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Slabs {
    /// Planes along the slowest axis (boundary planes included).
    pub planes: usize,
    /// The stencil's radius along the slowest axis.
    pub radius: usize,
    /// Elements in one plane (1 for a 1-D grid).
    pub plane_len: usize,
    /// Iterations per pass.
    pub height: usize,
    /// Every slab's own planes, in the order they run; together the interior planes.
    pub own: Vec<Range<usize>>,
    /// Skewed slabs (`Inner::Skewed`) instead of pyramids.
    pub skewed: bool,
    /// The slab a pass starts with: a pass runs slabs `first..` and then `..first`
    /// ([`order`](Self::order)). 0 but under an MPI rank, where the slabs that read no
    /// ghost plane go first so that the exchange overlaps them.
    pub first: usize,
}

impl Slabs {
    /// Slabs of `width` planes (at least 1, at most the interior) over a grid of `planes`
    /// planes of `plane_len` elements.
    pub fn new(planes: usize, radius: usize, plane_len: usize, height: usize, width: usize) -> Self {
        Self::over(&Cut::interior(planes, radius, plane_len), height, width)
    }

    /// Slabs of `width` planes (at least 1, at most `own`'s) over the planes `cut.own` of its
    /// grid only: a rank's own planes in its local grid, whose ghost planes
    /// (at least `height · radius` a side where `own` does not reach the boundary layer)
    /// hold the iterate a pass starts from and are read, never written back.
    ///
    /// A height above the grid's planes is lowered to them: with a radius of 1 or more, a
    /// pass that long already loads the whole grid as every slab's chunk, so longer passes
    /// would compute the same iterates (passes are exact, whatever their length) in buffers
    /// no larger; and `height · radius` then stays within the grid's planes.
    pub fn over(cut: &Cut, height: usize, width: usize) -> Self {
        let Cut { own, planes, radius, plane_len } = cut.clone();
        let width = width.clamp(1, own.len().max(1));
        let height = height.min(planes);
        let slabs = own.clone().step_by(width).map(|a| a..(a + width).min(own.end)).collect();
        Self { planes, radius, plane_len, height, own: slabs, skewed: false, first: 0 }.rotated()
    }

    /// Under a rank (its own planes short of the interior), pyramids rotated so that a pass
    /// starts with the first slab whose chunks lie within the own planes: the slabs before
    /// the first that reads a ghost plane then run while the ghost planes are exchanged. Not
    /// rotated in one process, when every slab reads beyond the own planes, or for skewed
    /// slabs, whose windows follow one another from the lowest plane up.
    fn rotated(mut self) -> Self {
        let one_process = self.own.first().map(|s| s.start) == Some(self.radius)
            && self.own.last().map(|s| s.end) == Some(self.planes - self.radius);
        let inside = |s: &usize| !self.reads_beyond_own(*s, self.height);
        self.first = match (0..self.own.len()).find(inside) {
            Some(first) if !self.skewed && !one_process => first,
            _ => 0,
        };
        self
    }

    /// The order in which a pass runs the slabs.
    pub fn order(&self) -> impl Iterator<Item = usize> + use<> {
        (self.first..self.own.len()).chain(0..self.first)
    }

    /// Whether slab `s` reads planes beyond the own planes in a pass of `len` iterations
    /// (ghost planes under a rank, boundary planes in one process).
    pub fn reads_beyond_own(&self, s: usize, len: usize) -> bool {
        let (Some(first), Some(last)) = (self.own.first(), self.own.last()) else { return false };
        let read = if self.skewed { self.window(s, len) } else { self.chunk(s, len) };
        read.start < first.start || read.end > last.end
    }

    /// Rotated pyramids: the planes above the own planes of the
    /// slabs before [`first`](Self::first) that slabs `first..` write back before those run,
    /// `[a, chunk(first − 1).end)` with `a` the first slab's first plane. Their old values are
    /// kept aside when the first slab is loaded (the *upper carry*). Empty without a rotation.
    pub fn upper_carry(&self, len: usize) -> Range<usize> {
        if self.first == 0 {
            return 0..0;
        }
        let start = self.own[self.first].start;
        start..self.chunk(self.first - 1, len).end.max(start)
    }

    /// These slabs, skewed (`true`) or as pyramids.
    pub fn skew(mut self, skewed: bool) -> Self {
        self.skewed = skewed;
        self.rotated()
    }

    /// Skewed: the planes slab `s` holds on the device during a pass of `len` iterations,
    /// `[a − (len + 1)·r, b)` (for the first slab from the lowest plane the pass reads, to
    /// the highest for the last). Its lower `(len + 1)·r` planes come from the previous
    /// slab's window.
    pub fn window(&self, s: usize, len: usize) -> Range<usize> {
        let own = &self.own[s];
        let floor = self.fresh(0, len).start;
        let start = if s == 0 { floor } else { own.start.saturating_sub((len + 1) * self.radius).max(floor) };
        start..self.fresh(s, len).end
    }

    /// Skewed: the planes slab `s` loads from the grid for a pass of `len` iterations,
    /// `[a, b)`, and below the first slab and above the last the `len · r` planes beyond the
    /// own planes that the pass reads (within the grid): the boundary planes, or a rank's
    /// ghost planes.
    pub fn fresh(&self, s: usize, len: usize) -> Range<usize> {
        let own = &self.own[s];
        let ghost = self.ghost(len);
        let start = if s == 0 { own.start.saturating_sub(ghost) } else { own.start };
        let end = if s + 1 == self.own.len() { (own.end + ghost).min(self.planes) } else { own.end };
        start..end
    }

    /// Skewed: the planes that iteration `t` (1 to `len`) of slab `s` updates during a pass
    /// of `len` iterations, `[a − t·r, b − t·r)` within [`span`](Self::span), which the first
    /// slab starts and the last ends; for every `t` the slabs' levels tile the span.
    pub fn level(&self, s: usize, len: usize, t: usize) -> Range<usize> {
        let own = &self.own[s];
        let span = self.span(len, t);
        let shifted = |plane: usize| plane.saturating_sub(t * self.radius).max(span.start);
        let lo = if s == 0 { span.start } else { shifted(own.start) };
        let hi = if s + 1 == self.own.len() { span.end } else { shifted(own.end) };
        lo.min(hi)..hi
    }

    /// Skewed: the planes iteration `t` of a pass of `len` updates over all slabs: the own
    /// planes and `(len − t)·r` beyond them on each side, within the interior. In one
    /// process that is the interior; under a rank the iterations shrink over its ghost
    /// planes as a pyramid does, so that only the own planes hold iterate `len` at the end.
    pub fn span(&self, len: usize, t: usize) -> Range<usize> {
        let (Some(first), Some(last)) = (self.own.first(), self.own.last()) else { return 0..0 };
        let (r, margin) = (self.radius, (len - t) * self.radius);
        first.start.saturating_sub(margin).max(r)..(last.end + margin).min(self.planes - r)
    }

    /// Ghost planes per side for a pass of `len` iterations.
    pub fn ghost(&self, len: usize) -> usize {
        len * self.radius
    }

    /// The planes slab `s` loads for a pass of `len` iterations.
    pub fn chunk(&self, s: usize, len: usize) -> Range<usize> {
        self.around(s, self.ghost(len))
    }

    /// The planes that hold iterate `done` of slab `s` correctly during a pass of `len`:
    /// the view that iteration `done + 1` reads; it updates the view's interior.
    pub fn region(&self, s: usize, len: usize, done: usize) -> Range<usize> {
        self.around(s, (len - done) * self.radius)
    }

    /// The planes whose old values slab `s + 1` loads from slab `s`'s chunk (its lower ghost
    /// planes, already written back when it runs).
    pub fn carry(&self, s: usize, len: usize) -> Range<usize> {
        let end = self.own[s].end;
        end.saturating_sub(self.ghost(len))..end
    }

    /// The largest chunk (skewed: window) of a full pass, in planes.
    pub fn max_chunk(&self) -> usize {
        let planes = |s| if self.skewed { self.window(s, self.height).len() } else { self.chunk(s, self.height).len() };
        (0..self.own.len()).map(planes).max().unwrap_or(0)
    }

    /// Elements of a range of planes.
    pub fn elements(&self, planes: &Range<usize>) -> Range<usize> {
        planes.start * self.plane_len..planes.end * self.plane_len
    }

    fn around(&self, s: usize, margin: usize) -> Range<usize> {
        let own = &self.own[s];
        own.start.saturating_sub(margin)..(own.end + margin).min(self.planes)
    }

    /// The widest slab over `cut` whose buffers fit `limit` bytes
    /// ([`buffer_bytes`](Self::buffer_bytes)): per slot (two, so that copies and kernels
    /// overlap) the chunk buffers of `arrays`, of `elem` bytes per element, plus the
    /// carries. `None` when not even one plane fits.
    pub fn widest(limit: usize, cut: &Cut, height: usize, arrays: Arrays, elem: usize, skewed: bool) -> Option<usize> {
        let own = &cut.own;
        let plane_bytes = cut.plane_len.checked_mul(elem)?.max(1);
        let fits = |width| Self::over(cut, height, width).skew(skewed).buffer_bytes(arrays, elem) <= limit;
        // The buffers grow with the width; ghost planes clipped at the grid's edge make them
        // smaller than `2 · arrays · (w + ghosts)`, so search every width up to what the own
        // planes alone would allow.
        let mut fitting = 0;
        let mut above = (limit / plane_bytes / (2 * arrays.per_slot()).max(1)).min(own.len().max(1)) + 1;
        while above - fitting > 1 {
            let middle = fitting + (above - fitting) / 2;
            if fits(middle) { fitting = middle } else { above = middle }
        }
        (fitting > 0).then_some(fitting)
    }

    /// `schedule` (an out-of-core one) with the slab width and height these slabs have, for
    /// reports.
    pub fn resolved(&self, schedule: crate::Schedule) -> crate::Schedule {
        match schedule {
            crate::Schedule::OutOfCore { inner, device_memory, .. } => crate::Schedule::OutOfCore {
                slab: Some(self.own.first().map_or(0, |r| r.len())),
                height: self.height,
                inner: if self.skewed { crate::Inner::Skewed } else { inner },
                device_memory,
            },
            other => other,
        }
    }

    /// The error for a pass from iterate `pass.start` to `pass.end` stopped by `source`
    /// after `written` slabs were written back: `source` itself when none was (the grid is
    /// still iterate `pass.start`), else [`Error::StoppedMidPass`]. Rotated slabs (under an
    /// MPI rank, whose grid is lost with the run anyway) are written back out of order, so
    /// for them it is `source` itself.
    pub fn interrupted(
        &self,
        pass: Range<usize>,
        written: usize,
        checkpoint: Option<(std::path::PathBuf, usize)>,
        source: crate::Error,
    ) -> crate::Error {
        if written == 0 || self.first != 0 {
            return source;
        }
        let written_to =
            if self.skewed { self.level(written - 1, pass.len(), pass.len()).end } else { self.own[written - 1].end };
        crate::Error::StoppedMidPass {
            pass_start: pass.start,
            pass_end: pass.end,
            written_to,
            planes: self.planes,
            checkpoint,
            source: Box::new(source),
        }
    }

    /// Bytes of the buffers of [`widest`](Self::widest) for these slabs (skewed: two slots of
    /// windows, no separate carry; rotated: two carries per unknown).
    pub fn buffer_bytes(&self, arrays: Arrays, elem: usize) -> usize {
        let carries = arrays.unknowns * self.carries() * self.ghost(self.height);
        let planes = (2 * arrays.per_slot() * self.max_chunk()).saturating_add(carries);
        planes.saturating_mul(self.plane_len).saturating_mul(elem)
    }

    /// Carry buffers of `ghost(height)` planes per unknown: none for skewed slabs (a window's
    /// lower planes come from the previous window), one for pyramids, two when rotated.
    fn carries(&self) -> usize {
        match (self.skewed, self.first) {
            (true, _) => 0,
            (false, 0) => 1,
            (false, _) => 2,
        }
    }

    /// What [`buffer_bytes`](Self::buffer_bytes) counts, in words, for errors.
    pub fn describe_buffers(&self, arrays: Arrays) -> String {
        let width = self.own.first().map_or(0, |r| r.len());
        let r = self.radius;
        let shape = if self.skewed {
            format!(
                "skewed windows of up to {} planes (a slab of {width} and (height {} + 1) · radius {r} below it)",
                self.max_chunk(),
                self.height
            )
        } else {
            format!(
                "chunks of up to {} planes (a slab of {width} and height {} · radius {r} ghost planes per side)",
                self.max_chunk(),
                self.height
            )
        };
        let carries = match arrays.unknowns * self.carries() {
            0 => String::new(),
            n => format!(", and {n} carr{} of {} planes", if n == 1 { "y" } else { "ies" }, self.ghost(self.height)),
        };
        format!("{shape}, in two slots of {} buffers{carries}", arrays.per_slot())
    }
}

/// A slot's buffers: every unknown's chunk twice, every field's once; each unknown's carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arrays {
    pub unknowns: usize,
    pub fields: usize,
}

impl Arrays {
    /// The arrays of stencil `S`'s run with `fields` read-only fields given.
    pub fn of<S: crate::Stencil<N>, const N: usize>(fields: usize) -> Self {
        Self { unknowns: S::META.unknowns.len(), fields }
    }

    /// Chunk buffers per slot.
    pub fn per_slot(self) -> usize {
        2 * self.unknowns + self.fields
    }
}

/// The slabs of an out-of-core run over the planes `own` (the interior, or a rank's own
/// planes): `request.slab` planes, or the widest that fits `request.device_memory` (with
/// the chunk buffers of `arrays`, of `elem` bytes per element, per slot), or all of `own`.
/// The limit bounds the slab buffers (two slots of chunks, and the carries); an explicit
/// `slab` whose buffers exceed it is an error too, on every backend.
pub(crate) fn slabs_for<const N: usize>(
    layout: &Layout<N>,
    own: Range<usize>,
    request: SlabRequest,
    arrays: Arrays,
    elem: usize,
) -> Result<Slabs> {
    let SlabRequest { slab, height, device_memory, skewed } = request;
    let plane_len: usize = layout.shape[1..].iter().product();
    let cut = Cut { own, planes: layout.shape[0], radius: layout.radius[0], plane_len };
    let slabs_of = |width| Slabs::over(&cut, height, width).skew(skewed);
    let too_large = |slabs: Slabs, limit| Error::DeviceMemory {
        needed: slabs.buffer_bytes(arrays, elem),
        limit,
        reason: slabs.describe_buffers(arrays),
    };
    let width = match (slab, device_memory) {
        (Some(width), _) => width,
        (None, Some(limit)) => {
            Slabs::widest(limit, &cut, height, arrays, elem, skewed).ok_or_else(|| too_large(slabs_of(1), limit))?
        }
        (None, None) => cut.own.len(),
    };
    let slabs = slabs_of(width);
    match device_memory {
        Some(limit) if slabs.buffer_bytes(arrays, elem) > limit => Err(too_large(slabs, limit)),
        _ => Ok(slabs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slabs_cover_the_interior_and_regions_shrink_to_the_slab() {
        let slabs = Slabs::new(20, 1, 6, 3, 5);
        assert_eq!(slabs.own, [1..6, 6..11, 11..16, 16..19]);
        assert_eq!(slabs.chunk(0, 3), 0..9);
        assert_eq!(slabs.chunk(1, 3), 3..14);
        assert_eq!(slabs.chunk(3, 3), 13..20);
        assert_eq!(slabs.region(1, 3, 0), 3..14);
        assert_eq!(slabs.region(1, 3, 2), 5..12);
        assert_eq!(slabs.carry(1, 3), 8..11);
        assert_eq!(slabs.chunk(2, 3).start, slabs.carry(1, 3).start);
        assert_eq!(slabs.elements(&(2..4)), 12..24);
        assert_eq!(slabs.max_chunk(), 11);
    }

    #[test]
    fn slabs_over_own_planes_read_the_ghost_planes_and_write_back_only_their_own() {
        // A rank's local grid: 3 ghost planes (depth 3, radius 1) below and above 10 own.
        let slabs = Slabs::over(&Cut { own: 3..13, planes: 16, radius: 1, plane_len: 4 }, 3, 4);
        assert_eq!(slabs.own, [3..7, 7..11, 11..13]);
        assert_eq!(slabs.chunk(0, 3), 0..10);
        assert_eq!(slabs.chunk(2, 3), 8..16);
        // A shorter pass reads fewer ghost planes.
        assert_eq!(slabs.chunk(0, 2), 1..9);
        assert_eq!(slabs.region(0, 3, 2), 2..8);
    }

    #[test]
    fn under_a_rank_pyramids_start_with_the_first_slab_that_reads_no_ghost_plane() {
        // Own planes 3..13 between 3 ghost planes a side; slabs of 2 planes, height 3.
        let slabs = Slabs::over(&Cut { own: 3..13, planes: 16, radius: 1, plane_len: 4 }, 3, 2);
        assert_eq!(slabs.own, [3..5, 5..7, 7..9, 9..11, 11..13]);
        // Slab 2's chunk, 4..12, is the first within the own planes.
        assert_eq!(slabs.first, 2);
        assert_eq!(slabs.order().collect::<Vec<_>>(), [2, 3, 4, 0, 1]);
        // It runs while the ghost planes are exchanged; slab 3's chunk, 6..14, reads one.
        assert!(!slabs.reads_beyond_own(2, 3));
        assert!([3, 4, 0, 1].iter().all(|&s| slabs.reads_beyond_own(s, 3)));
        // Slab 1's chunk ends at 10: planes 7..10, written back before it runs, are carried.
        assert_eq!(slabs.upper_carry(3), 7..10);
        assert_eq!(slabs.upper_carry(1), 7..8);
        // Two carries of 3 planes per unknown: (a − 1) · 3 planes, a = 2 · unknowns + 1 buffers per slot.
        let bytes = |unknowns| slabs.buffer_bytes(Arrays { unknowns, fields: 1 }, 8);
        assert_eq!([bytes(1), bytes(2)], [3, 5].map(|a| (2 * a * slabs.max_chunk() + (a - 1) * 3) * 4 * 8));
        // One process, skewed slabs, and slabs that all read ghost planes keep their order.
        assert_eq!(Slabs::new(16, 1, 4, 3, 2).first, 0);
        assert_eq!(Slabs::over(&Cut { own: 3..13, planes: 16, radius: 1, plane_len: 4 }, 3, 2).skew(true).first, 0);
        assert_eq!(Slabs::over(&Cut { own: 3..13, planes: 16, radius: 1, plane_len: 4 }, 3, 5).first, 0);
        // Slabs written back out of order: the error itself, not StoppedMidPass.
        let error = slabs.interrupted(0..3, 2, None, crate::Error::injected());
        assert!(matches!(error, crate::Error::Cuda { .. }), "{error}");
    }

    #[test]
    fn the_widest_slab_fits_its_limit() {
        let (planes, radius, plane_len, height, elem) = (1000, 1, 100, 4, 4);
        let arrays = Arrays { unknowns: 1, fields: 1 };
        for limit in [10_000, 50_000, 123_456, 10_000_000] {
            let Some(width) =
                Slabs::widest(limit, &Cut::interior(planes, radius, plane_len), height, arrays, elem, false)
            else {
                assert!(Slabs::new(planes, radius, plane_len, height, 1).buffer_bytes(arrays, elem) > limit);
                continue;
            };
            let slabs = Slabs::new(planes, radius, plane_len, height, width);
            assert!(slabs.buffer_bytes(arrays, elem) <= limit, "{limit}: width {width}");
            if width < planes - 2 * radius {
                let wider = Slabs::new(planes, radius, plane_len, height, width + 1);
                assert!(wider.buffer_bytes(arrays, elem) > limit, "{limit}: width {width} is not the widest");
            }
        }
        assert_eq!(Slabs::widest(100, &Cut::interior(planes, radius, plane_len), height, arrays, elem, false), None);
        for limit in [50_000, 123_456, 10_000_000] {
            let width =
                Slabs::widest(limit, &Cut::interior(planes, radius, plane_len), height, arrays, elem, true).unwrap();
            let slabs = Slabs::new(planes, radius, plane_len, height, width).skew(true);
            assert!(slabs.buffer_bytes(arrays, elem) <= limit, "{limit}: width {width}");
            let wider = Slabs::new(planes, radius, plane_len, height, width + 1).skew(true);
            let whole = width == planes - 2 * radius;
            assert!(whole || wider.buffer_bytes(arrays, elem) > limit, "{limit}: width {width} is not the widest");
        }
        // Ghost planes clipped at the edge of a small grid: exactly the smallest slabs' bytes fit.
        for skewed in [false, true] {
            let (planes, height) = (33, 32);
            let one = Slabs::new(planes, radius, plane_len, height, 1).skew(skewed).buffer_bytes(arrays, elem);
            let cut = Cut::interior(planes, radius, plane_len);
            assert!(Slabs::widest(one, &cut, height, arrays, elem, skewed).is_some_and(|w| w >= 1));
            assert_eq!(Slabs::widest(one - 1, &cut, height, arrays, elem, skewed), None);
        }
    }

    #[test]
    fn skewed_levels_tile_the_interior_and_windows_hold_what_they_read() {
        let slabs = Slabs::new(40, 2, 3, 4, 7).skew(true);
        for t in 1..=4 {
            let levels: Vec<_> = (0..slabs.own.len()).map(|s| slabs.level(s, 4, t)).collect();
            assert_eq!(levels.first().unwrap().start, 2);
            assert_eq!(levels.last().unwrap().end, 38);
            assert!(levels.windows(2).all(|w| w[0].end == w[1].start), "{levels:?}");
            for (s, level) in levels.iter().enumerate() {
                let window = slabs.window(s, 4);
                assert!(level.is_empty() || (window.start + 2 <= level.start && level.end + 2 <= window.end));
            }
        }
        assert_eq!(slabs.window(2, 4), 6..23);
        assert_eq!(slabs.fresh(0, 4), 0..9);
        assert_eq!(slabs.fresh(slabs.own.len() - 1, 4), 37..40);
    }

    /// Replays a skewed pass plane by plane: which iterate each plane holds in each of the
    /// two buffers, and that every update reads its neighbours at the iterate before.
    fn replay_skewed(slabs: &Slabs, len: usize) -> Vec<Option<usize>> {
        let r = slabs.radius;
        // Per plane: the iterate in the even buffer and in the odd one (None: not loaded).
        let mut held: Vec<[Option<usize>; 2]> = vec![[None, None]; slabs.planes];
        let mut grid: Vec<Option<usize>> = vec![Some(0); slabs.planes];
        for s in 0..slabs.own.len() {
            let (window, fresh) = (slabs.window(s, len), slabs.fresh(s, len));
            assert!(window.start <= fresh.start && fresh.end <= slabs.planes, "slab {s}: {window:?} {fresh:?}");
            // Planes of the window below the fresh ones were in the previous window; the
            // rest of the buffers is loaded.
            for (p, h) in held.iter_mut().enumerate() {
                if fresh.contains(&p) {
                    *h = [Some(0), Some(0)];
                } else if !window.contains(&p) {
                    *h = [None, None];
                }
            }
            for t in 1..=len {
                let level = slabs.level(s, len, t);
                for p in level.clone() {
                    for (q, read) in held.iter().enumerate().take(p + r + 1).skip(p - r) {
                        let boundary = q < r || q >= slabs.planes - r;
                        let ok = read[(t - 1) % 2] == Some(t - 1) || (boundary && read[0].is_some());
                        assert!(ok, "slab {s} iteration {t} plane {p} reads plane {q}: {read:?}");
                    }
                }
                for p in level {
                    held[p][t % 2] = Some(t);
                }
            }
            for p in slabs.level(s, len, len) {
                grid[p] = held[p][len % 2];
            }
        }
        grid
    }

    #[test]
    fn skewed_passes_read_what_they_hold_and_write_back_the_own_planes_at_the_last_iterate() {
        // One process: every interior plane, for every pass length and slab width.
        for width in [1, 2, 3, 7, 40] {
            for len in 1..=4 {
                let slabs = Slabs::new(40, 2, 3, 4, width).skew(true);
                let grid = replay_skewed(&slabs, len);
                assert!(grid[2..38].iter().all(|&i| i == Some(len)), "width {width}, len {len}: {grid:?}");
            }
        }
        // A rank: 8 ghost planes (depth 4, radius 2) on each side of the own planes 8..30, or
        // the boundary layer on one side; the levels shrink over the ghost planes and only
        // the own planes are written back, at iterate len.
        for own in [8..30, 2..30, 8..38] {
            let planes = own.end + if own.end == 38 { 2 } else { 8 };
            for width in [1, 3, 5, 22, 40] {
                for len in 1..=4 {
                    let slabs =
                        Slabs::over(&Cut { own: own.clone(), planes, radius: 2, plane_len: 3 }, 4, width).skew(true);
                    for t in 1..=len {
                        let span = slabs.span(len, t);
                        let levels: Vec<_> = (0..slabs.own.len()).map(|s| slabs.level(s, len, t)).collect();
                        assert_eq!((levels[0].start, levels.last().unwrap().end), (span.start, span.end));
                        assert!(levels.windows(2).all(|w| w[0].end == w[1].start), "{levels:?}");
                    }
                    let grid = replay_skewed(&slabs, len);
                    for (p, iterate) in grid.iter().enumerate() {
                        let expected = if own.contains(&p) { Some(len) } else { Some(0) };
                        assert_eq!(*iterate, expected, "{own:?} width {width} len {len} plane {p}");
                    }
                }
            }
        }
    }
}
