//! The run-time model of the out-of-core pyramid (paper 000 §3; docs/references.md): what a pass
//! costs from four measured constants, the paper's closed form, and the brute-force choice
//! of the pyramid height n and the slab width R.
//!
//! Paper 000 estimates τ ≈ K·(I−1)³·(R−n)/(R−2n)·(3τc/n + τa): K iterations over (I−1)³
//! points, each pass of n iterations over chunks of R planes computing (R−n)/(R−2n) times
//! the useful work and copying three arrays per point. This module also models the
//! schedule as it runs: per slab, the copy of its chunk in (the unknown from its own first
//! plane, every field whole), its iterations over the shrinking regions and two device
//! copies, and the copy of its own planes out; *sequential* adds them, *overlapped*
//! replays the three streams and two slots (a slab's copy in waits for the slot's previous
//! compute and copy out, compute waits for the copy in, the copy out for compute), pass
//! after pass (a pass's first slab goes up while the pass before ends, and computes once
//! the host has seen that pass written back; a skewed pass's first slab, computed ahead,
//! once the pass before has computed its last).

use std::time::Duration;

use crate::plan::slabs::{Arrays, Cut, Skew, Slabs};

/// The constants the model needs, measured on the device by short probes at start-up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costs {
    /// Seconds per byte copied from page-locked host memory to the device.
    pub up: f64,
    /// Seconds per byte copied from the device to page-locked host memory.
    pub down: f64,
    /// Seconds per point updated by the plain kernel (τa).
    pub update: f64,
    /// Seconds per byte copied within device memory (read once, written once).
    pub device_copy: f64,
}

/// Predicted wall times of one configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// Copies and kernels one after another.
    pub sequential: Duration,
    /// The three streams overlapping as they do on the device.
    pub overlapped: Duration,
    /// Paper 000's closed form for pyramids over the same slabs (R = slab + 2·height·radius),
    /// with τc the time to copy one value up.
    pub paper: Duration,
}

/// The model's view of an out-of-core run: the measured constants, its prediction for the
/// run as it ran, and the configuration it finds best under the same memory limit.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelReport {
    /// The measured constants (τa: the plain kernel's cost per point, or, where `Auto` chose
    /// streaming cycles inside the slabs, their probed cost per point and iteration).
    pub costs: Costs,
    /// For `Auto`: the streaming cycles the probe timed beside the plain kernel, and their
    /// seconds per point and iteration (`None`: not timed).
    pub streaming: Option<(crate::Inner, f64)>,
    /// The prediction for the passes this run made.
    pub predicted: Prediction,
    /// The best (height, slab width) found by brute force, and its overlapped prediction
    /// for the same number of iterations.
    pub best: (usize, usize, Duration),
}

/// What the model needs to know of a grid: its slowest axis, its planes and its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Planes along the slowest axis, boundary included.
    pub planes: usize,
    /// The stencil's radius along the slowest axis.
    pub radius: usize,
    /// Elements of one plane.
    pub plane_len: usize,
    /// Interior points of one plane (those a kernel updates).
    pub plane_interior: usize,
    /// The unknowns, and the read-only fields copied with every chunk.
    pub arrays: Arrays,
    /// Bytes per element.
    pub elem: usize,
}

impl Shape {
    fn interior_points(&self) -> f64 {
        ((self.planes - 2 * self.radius) * self.plane_interior) as f64
    }
}

/// The three streams and two slots as passes follow one another: when each is next free.
#[derive(Clone, Copy, Debug, Default)]
struct Streams {
    up_end: f64,
    /// Compute and copy-out ends of the last two slabs: the slot a slab reuses is free when
    /// both of the slab two before it are done.
    compute_end: [f64; 2],
    slot_free: [f64; 2],
    down_end: f64,
    /// The place of the next slab in the sequence of slabs (its parity picks its slot).
    next: usize,
}

impl Streams {
    /// Replays the pass of `len` iterations over `slabs` after the passes replayed so far;
    /// returns its copies and kernels one after another, in seconds. A pass's first slab is
    /// copied up as the pass before ends, and computed once the host has seen that pass
    /// written back (its check), or, of skewed slabs, computed ahead as soon as the pass
    /// before has computed its last slab.
    fn pass(&mut self, shape: &Shape, slabs: &Slabs, len: usize, costs: &Costs) -> f64 {
        let previous_end = if slabs.skewed { self.compute_end[0].max(self.compute_end[1]) } else { self.down_end };
        let mut sequential = 0.0;
        for s in 0..slabs.own.len() {
            let (up, compute, down) = slab_costs(shape, slabs, s, len, costs);
            sequential += up + compute + down;
            let slot = (self.next + s) % 2;
            let up_start = self.up_end.max(self.slot_free[slot]);
            self.up_end = up_start + up;
            let host_ready = if s == 0 { previous_end } else { 0.0 };
            let compute_start = self.up_end.max(self.compute_end[slot ^ 1]).max(host_ready);
            self.compute_end[slot] = compute_start + compute;
            self.down_end = self.compute_end[slot].max(self.down_end) + down;
            self.slot_free[slot] = self.compute_end[slot].max(self.down_end);
        }
        self.next += slabs.own.len();
        sequential
    }
}

/// Slab `s`'s seconds in a pass of `len`: (copy up, compute, copy down).
fn slab_costs(shape: &Shape, slabs: &Slabs, s: usize, len: usize, costs: &Costs) -> (f64, f64, f64) {
    let bytes = |planes: usize| (planes * shape.plane_len * shape.elem) as f64;
    let Arrays { unknowns, fields } = shape.arrays;
    if slabs.skewed {
        // The fresh planes of every array up; each level once; the lower part of the
        // window (every array) and the fresh planes' second copy on the device; the last
        // level down.
        let (fresh, window) = (slabs.fresh(s, len), slabs.window(s, len));
        let up = bytes((unknowns + fields) * fresh.len()) * costs.up;
        let updated: usize = (1..=len).map(|t| slabs.level(s, len, t).len() * shape.plane_interior).sum();
        let kept = if s == 0 { 0 } else { fresh.start - window.start };
        let copied = bytes(shape.arrays.per_slot() * kept + unknowns * fresh.len()) * costs.device_copy;
        let down = bytes(unknowns * slabs.level(s, len, len).len()) * costs.down;
        (up, updated as f64 * costs.update + copied, down)
    } else {
        let chunk = slabs.chunk(s, len);
        let own = &slabs.own[s];
        let uploaded = if s == 0 { chunk.len() } else { chunk.end - own.start };
        let up = bytes(unknowns * uploaded + fields * chunk.len()) * costs.up;
        // Each iteration updates the interior of its region's view.
        let updated: usize = (0..len)
            .map(|done| slabs.region(s, len, done).len().saturating_sub(2 * slabs.radius) * shape.plane_interior)
            .sum();
        // The carry in and out, and the second buffer's copy of the chunk.
        let copied = bytes(unknowns * (chunk.len() + 2 * slabs.ghost(len))) * costs.device_copy;
        (up, updated as f64 * costs.update + copied, bytes(unknowns * own.len()) * costs.down)
    }
}

/// Paper 000's estimate in seconds for `iterations` iterations with pyramid height `height`
/// over chunks of `chunk` planes: K·(I−1)³·(R−n)/(R−2n)·(3τc/n + τa), with n counted in
/// ghost planes (height × radius) and τc the time to copy one value up.
pub(crate) fn paper(shape: &Shape, iterations: usize, height: usize, chunk: usize, costs: &Costs) -> f64 {
    let (r, n) = (chunk as f64, (height * shape.radius) as f64);
    let redundancy = if r > 2.0 * n { (r - n) / (r - 2.0 * n) } else { f64::INFINITY };
    let tau_c = shape.elem as f64 * costs.up;
    iterations as f64 * shape.interior_points() * redundancy * (3.0 * tau_c / height as f64 + costs.update)
}

/// Predicted times of `passes` (their lengths, in order) over `slabs`.
pub(crate) fn predict(shape: &Shape, slabs: &Slabs, passes: &[usize], costs: &Costs) -> Prediction {
    let mut streams = Streams::default();
    let sequential: f64 = passes.iter().map(|&len| streams.pass(shape, slabs, len, costs)).sum();
    let overlapped = streams.down_end;
    let iterations = passes.iter().sum();
    // The paper's pyramid over the same slabs (for skewed slabs too: what they replace).
    let base = slabs.own.first().map_or(0, |own| own.len()) + 2 * slabs.ghost(slabs.height);
    let seconds = |s: f64| Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX);
    Prediction {
        sequential: seconds(sequential),
        overlapped: seconds(overlapped),
        paper: seconds(paper(shape, iterations, slabs.height, base, costs)),
    }
}

/// Heights the brute force tries.
pub(crate) const MAX_HEIGHT: usize = 128;

/// The (height, slab width) with the least overlapped time per iteration of full passes,
/// over every height up to [`MAX_HEIGHT`] and, for each, slab widths from the widest that
/// fits `limit` bytes down to an eighth of it (for streaming cycles in skewed slabs, those
/// whose slabs hold their skirts); with its seconds per iteration. `None` when not even one
/// plane fits.
pub(crate) fn best(shape: &Shape, limit: usize, costs: &Costs, skew: Skew) -> Option<(usize, usize, f64)> {
    let mut best: Option<(usize, usize, f64)> = None;
    for height in 1..=MAX_HEIGHT {
        let cut = Cut::interior(shape.planes, shape.radius, shape.plane_len);
        let Some(widest) = Slabs::widest(limit, &cut, height, shape.arrays, shape.elem, skew) else { break };
        for eighths in (1..=8).rev() {
            let width = (widest * eighths / 8).max(1);
            let slabs = Slabs::new(shape.planes, shape.radius, shape.plane_len, height, width).skewing(skew);
            // Streaming cycles in skewed slabs run only where every slab holds its skirts.
            if skew.cycle > 1 && !slabs.hold_cycle_skirts(height, skew.cycle) {
                continue;
            }
            // A full pass after another: the first slab's copy up overlaps the pass before.
            let mut streams = Streams::default();
            streams.pass(shape, &slabs, height, costs);
            let first = streams.down_end;
            streams.pass(shape, &slabs, height, costs);
            let per_iteration = (streams.down_end - first) / height as f64;
            if best.is_none_or(|(_, _, b)| per_iteration < b) {
                best = Some((height, slabs.own[0].len(), per_iteration));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: Shape = Shape {
        planes: 202,
        radius: 1,
        plane_len: 100 * 100,
        plane_interior: 98 * 98,
        arrays: Arrays { unknowns: 1, fields: 1 },
        elem: 4,
    };

    /// Seconds of the pass of `len` iterations over `slabs`, alone: (sequential, overlapped).
    fn pass(shape: &Shape, slabs: &Slabs, len: usize, costs: &Costs) -> (f64, f64) {
        let mut streams = Streams::default();
        let sequential = streams.pass(shape, slabs, len, costs);
        (sequential, streams.down_end)
    }

    fn costs(up: f64, update: f64) -> Costs {
        Costs { up, down: up, update, device_copy: 0.0 }
    }

    #[test]
    fn with_free_copies_a_pass_costs_its_updates_and_overlap_hides_the_cheaper_side() {
        let slabs = Slabs::new(SHAPE.planes, 1, SHAPE.plane_len, 4, 50);
        let (sequential, overlapped) = pass(&SHAPE, &slabs, 4, &costs(0.0, 1e-9));
        // 4 iterations over 200 interior planes plus the pyramids' redundant planes.
        let useful = 4.0 * 200.0 * SHAPE.plane_interior as f64 * 1e-9;
        assert!(sequential > useful && sequential < 1.2 * useful, "{sequential} vs {useful}");
        assert!((overlapped - sequential).abs() < 1e-12);
        // Copies that cost as much as compute: overlapped is well below sequential, but
        // never below either side alone.
        let (sequential, overlapped) = pass(&SHAPE, &slabs, 4, &costs(2e-10, 1e-9));
        assert!(overlapped < 0.8 * sequential, "{overlapped} vs {sequential}");
        assert!(overlapped >= useful);
    }

    #[test]
    fn slow_copies_favour_tall_pyramids_and_slow_kernels_short_ones() {
        let limit = 40 * SHAPE.plane_len * 4 * 6;
        let (tall, ..) = best(&SHAPE, limit, &costs(1e-8, 1e-11), Skew::PYRAMID).unwrap();
        let (short, ..) = best(&SHAPE, limit, &costs(1e-12, 1e-8), Skew::PYRAMID).unwrap();
        assert!(tall > short, "{tall} vs {short}");
        assert_eq!(short, 1);
        assert_eq!(best(&SHAPE, 10, &costs(1.0, 1.0), Skew::PYRAMID), None);
        assert_eq!(best(&SHAPE, 10, &costs(1.0, 1.0), Skew::PLAIN), None);
    }

    #[test]
    fn skewed_slabs_update_every_plane_once_per_iteration() {
        let slabs = Slabs::new(SHAPE.planes, 1, SHAPE.plane_len, 8, 30).skew(true);
        let (sequential, _) = pass(&SHAPE, &slabs, 8, &costs(0.0, 1e-9));
        let useful = 8.0 * 200.0 * SHAPE.plane_interior as f64 * 1e-9;
        assert!((sequential - useful).abs() < 1e-9 * useful, "{sequential} vs {useful}");
        let pyramid = Slabs::new(SHAPE.planes, 1, SHAPE.plane_len, 8, 30);
        assert!(pass(&SHAPE, &pyramid, 8, &costs(0.0, 1e-9)).0 > 1.2 * useful);
        // With copies as dear as compute, skewed slabs still win under the same memory.
        let limit = 60 * SHAPE.plane_len * 4 * 6;
        let (.., skewed) = best(&SHAPE, limit, &costs(2e-10, 1e-9), Skew::PLAIN).unwrap();
        let (.., pyramid) = best(&SHAPE, limit, &costs(2e-10, 1e-9), Skew::PYRAMID).unwrap();
        assert!(skewed < pyramid, "{skewed} vs {pyramid}");
    }

    #[test]
    fn a_pass_copies_its_first_slab_up_while_the_pass_before_ends_and_a_skewed_one_computes_it() {
        let c = costs(2e-10, 1e-9);
        for skewed in [false, true] {
            let slabs = Slabs::new(SHAPE.planes, 1, SHAPE.plane_len, 4, 50).skew(skewed);
            let alone = pass(&SHAPE, &slabs, 4, &c).1;
            let first_up = slab_costs(&SHAPE, &slabs, 0, 4, &c).0;
            let two = predict(&SHAPE, &slabs, &[4, 4], &c).overlapped.as_secs_f64();
            // The second pass hides its first copy up, and a skewed one its predecessor's
            // last copy down too (its first slab is computed ahead of the host's check).
            let last = slabs.own.len() - 1;
            let hidden = first_up + if skewed { slab_costs(&SHAPE, &slabs, last, 4, &c).2 } else { 0.0 };
            assert!((two - (2.0 * alone - hidden)).abs() < 1e-9 * two, "{two} vs {alone} and {hidden}");
        }
    }

    #[test]
    fn predictions_stay_finite_for_slabs_narrower_than_their_ghosts() {
        let c = costs(1e-10, 1e-9);
        for skewed in [false, true] {
            let slabs = Slabs::new(SHAPE.planes, 1, SHAPE.plane_len, 9, 1).skew(skewed);
            let p = predict(&SHAPE, &slabs, &[9, 9, 3], &c);
            assert!(p.overlapped > Duration::ZERO && p.overlapped < Duration::MAX && p.paper < Duration::MAX);
        }
    }

    #[test]
    fn the_paper_form_grows_with_the_pyramids_redundancy() {
        let c = costs(1e-10, 1e-9);
        assert!(paper(&SHAPE, 100, 4, 100, &c) < paper(&SHAPE, 100, 4, 20, &c));
        assert!(paper(&SHAPE, 100, 10, 20, &c).is_infinite());
    }
}
