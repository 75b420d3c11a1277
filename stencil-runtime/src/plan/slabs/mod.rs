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
    /// Skewed slabs or pyramids.
    pub skew: Skew,
}

/// Skewed slabs or pyramids, and the streaming cycles run in skewed slabs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Skew {
    /// Skewed slabs instead of pyramids.
    pub skewed: bool,
    /// Skewed: the length of the streaming cycles run in them, 0 for plain iterations
    /// ([`Inner::skewed_cycle`]).
    pub cycle: usize,
}

impl Skew {
    /// Pyramids.
    #[cfg(test)]
    pub const PYRAMID: Skew = Skew { skewed: false, cycle: 0 };
    /// Skewed slabs of plain iterations.
    #[cfg(test)]
    pub const PLAIN: Skew = Skew { skewed: true, cycle: 0 };

    /// The slabs `inner` runs on.
    pub fn of(inner: Inner) -> Self {
        Skew { skewed: inner.is_skewed(), cycle: inner.skewed_cycle() }
    }
}

impl Config {
    /// The slabs this configuration asks for.
    pub fn request(&self) -> SlabRequest {
        SlabRequest {
            slab: self.slab,
            height: self.height,
            device_memory: self.device_memory,
            skew: Skew::of(self.inner),
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
    /// Skewed: the length of the streaming cycles run in them (0: plain iterations). A
    /// window reaches `(height + max(cycle, 1))·radius` planes below its slab (a cycle's lower
    /// skirt), and each slab sets skirts aside for the next ([`skirt_planes`](Self::skirt_planes)).
    pub cycle: usize,
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
        Self { planes, radius, plane_len, height, own: slabs, skewed: false, cycle: 0, first: 0 }.rotated()
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

    /// These slabs, skewed or not as `skew` says.
    pub fn skewing(self, skew: Skew) -> Self {
        Self { cycle: skew.cycle, ..self.skew(skew.skewed) }
    }

    /// Skewed streaming cycles of `sub` iterations: the planes a slab sets aside for the next
    /// one at each cycle boundary T of a pass of `len`, `[b − T·r − 2·sub·r, b − T·r)`, lie in
    /// its level T, for every slab but the last and every T ≤ `len`. Where the own planes start
    /// at the boundary (one process, or the lowest rank) they may also lie below the interior,
    /// where the boundary planes are constant: a level that reaches the interior's first
    /// plane (a pass taller than the slabs below) holds every interior plane of its skirt,
    /// and a level emptied there sets aside boundary planes only.
    pub fn hold_cycle_skirts(&self, len: usize, sub: usize) -> bool {
        let r = self.radius;
        let bottom_is_boundary = self.own.first().map(|s| s.start) == Some(r);
        (0..self.own.len().saturating_sub(1)).all(|s| {
            (0..=len).all(|t| {
                let top = self.own[s].end.saturating_sub(t * r);
                let low = top.saturating_sub(2 * sub * r);
                let level = if t == 0 { self.own[s].clone() } else { self.level(s, len, t) };
                let held = level.end == top && (low >= level.start || (bottom_is_boundary && level.start == r));
                held || (bottom_is_boundary && top <= r)
            })
        })
    }

    /// Skewed: the planes slab `s` holds on the device during a pass of `len` iterations,
    /// `[a − (len + c)·r, b)`, c = max(cycle, 1) (for the first slab from the lowest plane the
    /// pass reads, to the highest for the last). Its lower `(len + c)·r` planes come from the previous
    /// slab's window.
    pub fn window(&self, s: usize, len: usize) -> Range<usize> {
        let own = &self.own[s];
        let floor = self.fresh(0, len).start;
        let depth = (len + self.cycle.max(1)) * self.radius;
        let start = if s == 0 { floor } else { own.start.saturating_sub(depth).max(floor) };
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

    /// The planes slab `s` writes back at the end of a pass of `len`: its own planes, or
    /// (skewed) its last level. Over every slab they tile the own planes.
    pub fn written_back(&self, s: usize, len: usize) -> Range<usize> {
        if self.skewed { self.level(s, len, len) } else { self.own[s].clone() }
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
    pub fn widest(limit: usize, cut: &Cut, height: usize, arrays: Arrays, elem: usize, skew: Skew) -> Option<usize> {
        let own = &cut.own;
        let plane_bytes = cut.plane_len.checked_mul(elem)?.max(1);
        let fits = |width| Self::over(cut, height, width).skewing(skew).buffer_bytes(arrays, elem) <= limit;
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
                inner: if self.skewed && !inner.is_skewed() { crate::Inner::Skewed } else { inner },
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
        let written_to = self.written_back(written - 1, pass.len()).end;
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
    /// windows, no separate carry, and the skirts' store; rotated: two carries per unknown).
    pub fn buffer_bytes(&self, arrays: Arrays, elem: usize) -> usize {
        let carries = arrays.unknowns * self.carries() * self.ghost(self.height);
        let carries = carries + arrays.unknowns * self.skirt_planes();
        let planes = (2 * arrays.per_slot() * self.max_chunk()).saturating_add(carries);
        planes.saturating_mul(self.plane_len).saturating_mul(elem)
    }

    /// Skewed streaming cycles: the planes a slab sets aside per unknown for the next slab,
    /// `2 · cycle · r` at each of a pass's cycle boundaries (its start included; a checked
    /// pass has one more, before its measuring level), in one store: at each boundary the
    /// next slab restores the skirt before it sets its own aside in its place.
    pub fn skirt_planes(&self) -> usize {
        match (self.skewed, self.cycle) {
            (true, cycle) if cycle > 0 => (self.height.div_ceil(cycle) + 1) * 2 * cycle * self.radius,
            _ => 0,
        }
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
                "skewed windows of up to {} planes (a slab of {width} and (height {} + {}) · radius {r} below it)",
                self.max_chunk(),
                self.height,
                self.cycle.max(1)
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
        let skirts = match self.skirt_planes() {
            0 => String::new(),
            planes => format!(", and {} skirt stores of {planes} planes", arrays.unknowns),
        };
        format!("{shape}, in two slots of {} buffers{carries}{skirts}", arrays.per_slot())
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
    let SlabRequest { slab, height, device_memory, skew } = request;
    let plane_len: usize = layout.shape[1..].iter().product();
    let cut = Cut { own, planes: layout.shape[0], radius: layout.radius[0], plane_len };
    let slabs_of = |width| Slabs::over(&cut, height, width).skewing(skew);
    let too_large = |slabs: Slabs, limit| Error::DeviceMemory {
        needed: slabs.buffer_bytes(arrays, elem),
        limit,
        reason: slabs.describe_buffers(arrays),
    };
    let width = match (slab, device_memory) {
        (Some(width), _) => width,
        (None, Some(limit)) => {
            Slabs::widest(limit, &cut, height, arrays, elem, skew).ok_or_else(|| too_large(slabs_of(1), limit))?
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
mod tests;
