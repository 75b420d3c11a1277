//! Sweep stencils: in one process a sweep of the whole interior; across ranks a pipeline
//! along the sweep's direction on the cut axis.
//!
//! A `sweep(…)` stencil updates in place in the declared order, so the sweep of a rank's
//! own planes reads the planes *before* them (on the side the sweep comes from) as this
//! sweep left them, and the planes *after* them as the previous sweep left them. No depth
//! of ghost planes can stand in for the first: one sweep carries influence through the
//! whole grid. So the ranks take their turn in the sweep's order, and overlap across
//! sweeps. In each sweep a rank
//!
//! 1. receives the `radius` planes before its own, just swept by the *earlier* neighbour;
//! 2. sweeps its first `radius` planes and sends them to the earlier neighbour (which reads
//!    them at the end of its next sweep), and sweeps its middle planes while they travel;
//! 3. receives the `radius` planes after its own from the *later* neighbour (its first
//!    planes of the previous sweep, sent long before), sweeps its last planes and sends
//!    them to the later neighbour, which then starts this sweep.
//!
//! Points in the sweep's order are all the earlier rank's, then all this rank's, and a
//! rank's first, middle and last planes come in that order too, so every rank's planes hold
//! exactly the single-process sweep's values. Only the earlier neighbour's planes are
//! waited for at the start of a sweep: while the later neighbour sweeps sweep k, a rank
//! already sweeps k + 1, so R ranks have R sweeps in flight, and a sweep costs about one
//! rank's part plus one message. Each check (a reduction over every rank) drains the
//! pipeline.
//!
//! At a check the later neighbour's first planes of the sweep just done are received
//! early (both sides of the own planes then hold this sweep's values) and S(u) − u is
//! measured over the own planes and reduced over all ranks, as one process measures it.
//! At the end, every ghost plane (all `depth · radius` a side) is exchanged once more, so
//! the rank's grid holds the last sweep everywhere.
//!
//! Across a periodic cut of axis 0 the first rank of a sweep reads, below its own planes,
//! the last rank's top planes as the sweep before left them (one process's outer layer),
//! and the last rank reads above its own the first rank's bottom planes as the sweep before
//! left them. The two swap those planes at the start of every sweep ([`Pipeline::exchange_wraps`]),
//! and the sweep's order treats them as the first and the last rank. The first rank then waits
//! for the last one to end the sweep before: the ranks sweep one after another.
//!
//! The same [`Pipeline`] runs a cycle of stencils in turn ([`Alternating`](crate::Alternating)
//! steps), each sweeping in its own direction. Which neighbour is earlier then changes from
//! sweep to sweep, so a rank sends its planes facing a neighbour after sweep k only when
//! that neighbour reads them as sweep k left them: it comes later in sweep k, or earlier in
//! sweep k + 1 ([`Cycle::sends`]). Each rank works out the same rule for the other side
//! ([`Cycle::receives`]), so the messages between two ranks pair up in order. A sweep with
//! nothing to send early and nothing to wait for (one the other way after one this way)
//! runs in one launch.

use std::ops::Range;

use super::drive::{Advance, Unit, reduce_check};
use super::jacobi::exchange;
use super::peers::{Peers, Place};
use crate::engine::{Difference, Engine};
use crate::plan::fill::{Edges, FillCopy, fill, fill_plan};
use crate::plan::planes::{Exchange, Planes};
use crate::stop::StopRule;
use crate::{Boundaries, Direction, Grid, Real, Result, Tolerance};

/// One rank's planes in the order a sweep visits them along axis 0.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Order {
    /// The side (0: below, 1: above) of the neighbour whose planes the sweep reaches first.
    earlier_side: usize,
    /// The neighbour whose planes the sweep reaches first, and the one it reaches last.
    earlier: Option<usize>,
    later: Option<usize>,
    /// The own planes swept first, in the middle and last. The first read the earlier
    /// ghost planes and the last the later ones. A rank of fewer than 2 · radius own
    /// planes sweeps them all first (they reach both sides); without an earlier (later)
    /// neighbour the middle planes are swept with the first (last) ones.
    first: Range<usize>,
    middle: Range<usize>,
    last: Range<usize>,
    /// The own planes sent to the earlier and to the later neighbour (`radius` each).
    to_earlier: Range<usize>,
    to_later: Range<usize>,
    /// All the planes the sweep updates: the first, middle and last ones.
    own: Range<usize>,
}

impl Order {
    fn new(planes: &Planes, direction: Direction) -> Self {
        let (own, r) = (planes.own.clone(), planes.radius);
        // A lone rank may own fewer than `radius` planes.
        let low = own.start..(own.start + r).min(own.end);
        let high = own.end.saturating_sub(r).max(own.start)..own.end;
        let split = own.len() >= 2 * r;
        let (earlier, later) = match direction {
            Direction::Ascending => (planes.below, planes.above),
            Direction::Descending => (planes.above, planes.below),
        };
        let none = own.end..own.end;
        let hull = |a: &Range<usize>, b: &Range<usize>| a.start.min(b.start)..a.end.max(b.end);
        let (first, middle, last) = match (split, direction) {
            (false, _) => (own.clone(), none.clone(), none.clone()),
            (true, Direction::Ascending) => (low.clone(), low.end..high.start, high.clone()),
            (true, Direction::Descending) => (high.clone(), low.end..high.start, low.clone()),
        };
        // Planes no neighbour waits for are swept with their neighbours, in one launch.
        let (first, middle, last) = match (earlier, later) {
            _ if !split => (first, middle, last),
            (None, None) => (own.clone(), none.clone(), none),
            (None, Some(_)) => (hull(&first, &middle), none, last),
            (Some(_), None) => (first, none, hull(&middle, &last)),
            (Some(_), Some(_)) => (first, middle, last),
        };
        let (earlier_side, to_earlier, to_later) = match direction {
            Direction::Ascending => (0, low, high),
            Direction::Descending => (1, high, low),
        };
        Self { earlier_side, earlier, later, first, middle, last, to_earlier, to_later, own }
    }

    fn later_side(&self) -> usize {
        1 - self.earlier_side
    }

    /// Whether the first planes read the later ghost planes.
    fn first_reads_later(&self) -> bool {
        self.last.is_empty()
    }
}

/// The sweeps of a run, one [`Order`] each: sweep k (counted from 1) is the cycle's stencil
/// `(k − 1) mod len`, which sweeps in the direction its order was made for.
struct Cycle {
    orders: Vec<Order>,
}

impl Cycle {
    /// The stencil of sweep `k` and its order.
    fn of(&self, k: usize) -> (usize, &Order) {
        let which = (k - 1) % self.orders.len();
        (which, &self.orders[which])
    }

    /// Whether the neighbour on `side` reads this rank's planes facing it as sweep `k` left
    /// them: it comes later in sweep k, or earlier in sweep k + 1 (where it reads this
    /// rank's planes as they were before that sweep). Sweep k's planes are sent then only.
    fn sends(&self, side: usize, k: usize) -> bool {
        side == self.of(k).1.later_side() || side == self.of(k + 1).1.earlier_side
    }

    /// Whether the neighbour on `side` sends its planes facing this rank as sweep `k` left
    /// them (its [`sends`](Self::sends), seen from this side).
    fn receives(&self, side: usize, k: usize) -> bool {
        side == self.of(k).1.earlier_side || side == self.of(k + 1).1.later_side()
    }
}

/// A neighbour's planes received into this rank's ghost planes on one side.
struct Side<T> {
    rank: Option<usize>,
    /// The `radius` ghost planes on this side.
    ghost: Range<usize>,
    /// The ghost planes hold the neighbour's planes as its sweep `received` left them (the
    /// user's grid for 0).
    received: usize,
    buffer: Vec<T>,
}

/// The ghost planes on both sides (below, above).
struct Sides<T>([Side<T>; 2]);

impl<T: Real> Sides<T> {
    /// Whether making the ghost planes on `side` hold the neighbour's planes as its sweep
    /// `sweep` left them needs a message not yet received.
    fn waits(&self, cycle: &Cycle, side: usize, sweep: usize) -> bool {
        let Side { rank, received, .. } = &self.0[side];
        rank.is_some() && (*received + 1..=sweep).any(|k| cycle.receives(side, k))
    }

    /// Makes the ghost planes on `side` hold the neighbour's planes as its sweep `sweep` left
    /// them, receiving every message it sent up to that sweep. (Its planes are not sent after
    /// a sweep no one reads them at; the ghost planes then hold the last ones it sent, which
    /// only the final exchange may leave so.)
    fn fetch<const N: usize>(
        &mut self,
        peers: &impl Peers,
        cycle: &Cycle,
        side: usize,
        sweep: usize,
        engine: &mut impl Engine<T, N>,
    ) -> Result<()> {
        let Side { rank, ghost, received, buffer } = &mut self.0[side];
        let Some(rank) = *rank else { return Ok(()) };
        if *received >= sweep {
            return Ok(());
        }
        let messages = (*received + 1..=sweep).filter(|&k| cycle.receives(side, k)).count();
        for _ in 0..messages {
            peers.post::<T>(&[], &mut [(rank, side, &mut buffer[..])], || Ok(()))?;
        }
        if messages > 0 {
            engine.write(ghost.clone(), buffer)?;
        }
        *received = sweep;
        Ok(())
    }
}

/// The planes a rank at a periodic cut of axis 0 exchanges with the rank across it.
struct Wrap {
    /// The side (0: below, 1: above) the cut is on, and the rank across it.
    side: usize,
    rank: usize,
    /// The own planes facing the cut (sent), and the ghost planes beyond it (received).
    facing: Range<usize>,
    ghost: Range<usize>,
}

/// The pipeline of sweeps on one rank (the module documentation describes it).
pub(crate) struct Pipeline<T> {
    cycle: Cycle,
    sides: Sides<T>,
    /// The sides at a periodic cut of axis 0, and the buffers of their planes sent and
    /// received.
    wraps: Vec<Wrap>,
    wrap_out: Vec<Vec<T>>,
    wrap_in: Vec<Vec<T>>,
    /// The planes sent after a sweep's first and last planes.
    first_out: Vec<T>,
    last_out: Vec<T>,
    /// The boundary fill of the other axes over the planes sent to the earlier neighbour,
    /// and their shape.
    first_fill: (Vec<FillCopy>, Vec<usize>),
}

impl<T: Real> Pipeline<T> {
    /// The pipeline of `planes` for a cycle of stencils, each sweeping in its direction
    /// along the cut axis and of its radius there (at most the split's), with planes of
    /// `plane_len` values. A stencil of a smaller radius than the split's also sweeps the
    /// planes between its boundary layer and the split's, at the ends of the grid.
    pub(crate) fn new(planes: &Planes, stencils: &[(Direction, usize)], plane_len: usize) -> Self {
        let (own, r) = (&planes.own, planes.radius);
        let message = vec![T::ZERO; r * plane_len];
        let side = |rank, ghost| Side { rank, ghost, received: 0, buffer: message.clone() };
        // Across a periodic cut the wrap exchange brings the ghost planes, and the sweep's
        // order treats the rank as the first (or last) one.
        let below = planes.below.filter(|_| !planes.wraps.0);
        let above = planes.above.filter(|_| !planes.wraps.1);
        let order = |&(direction, radius): &(Direction, usize)| {
            debug_assert!(radius <= r, "the split is for the larger radius");
            let mut swept = planes.clone();
            if planes.below.is_none() {
                swept.own.start = radius;
            }
            if planes.above.is_none() {
                swept.own.end = planes.count - radius;
            }
            (swept.below, swept.above) = (below, above);
            Order::new(&swept, direction)
        };
        let wraps: Vec<Wrap> = [
            (planes.wraps.0, planes.below, own.start..own.start + r, own.start - r..own.start),
            (planes.wraps.1, planes.above, own.end - r..own.end, own.end..own.end + r),
        ]
        .into_iter()
        .enumerate()
        .filter_map(|(side, (wraps, rank, facing, ghost))| {
            Some(Wrap { side, rank: rank.filter(|_| wraps)?, facing, ghost })
        })
        .collect();
        Self {
            cycle: Cycle { orders: stencils.iter().map(order).collect() },
            sides: Sides([side(below, own.start - r..own.start), side(above, own.end..own.end + r)]),
            wrap_out: vec![message.clone(); wraps.len()],
            wrap_in: vec![message.clone(); wraps.len()],
            wraps,
            first_out: message.clone(),
            last_out: message.clone(),
            first_fill: (Vec::new(), Vec::new()),
        }
    }

    /// Sweep `k` (counted from 1; every sweep before it has been run) of this rank's own
    /// planes.
    pub(crate) fn sweep<const N: usize>(
        &mut self,
        peers: &impl Peers,
        k: usize,
        engine: &mut impl Engine<T, N>,
    ) -> Result<()> {
        self.exchange_wraps(peers, engine)?;
        let Self { cycle, sides, first_out, last_out, first_fill, .. } = self;
        let (which, order) = cycle.of(k);
        sides.fetch(peers, cycle, order.earlier_side, k, engine)?;
        let sends_first = order.earlier.is_some() && cycle.sends(order.earlier_side, k);
        if !sends_first && !sides.waits(cycle, order.later_side(), k - 1) {
            // Nothing to send early and nothing to wait for (a sweep the other way after
            // one this way): one launch over all the planes.
            engine.sweep(which, order.own.clone())?;
            return send_last(engine, peers, cycle, k, last_out);
        }
        if order.first_reads_later() {
            sides.fetch(peers, cycle, order.later_side(), k - 1, engine)?;
        }
        engine.sweep(which, order.first.clone())?;
        let cycle = &*cycle;
        match order.earlier.filter(|_| cycle.sends(order.earlier_side, k)) {
            Some(earlier) => {
                // The first planes travel while the rest is swept. The earlier neighbour reads
                // them in its next sweep, whose outer layers one process fills from these
                // values: they go with theirs (this rank's own stay as this sweep read them).
                engine.read(order.to_earlier.clone(), first_out)?;
                fill_planes(first_out, &first_fill.1, &first_fill.0);
                peers.post(&[(earlier, order.earlier_side, &first_out[..])], &mut [], || {
                    finish_sweep(engine, peers, cycle, k, sides, last_out)
                })
            }
            None => finish_sweep(engine, peers, cycle, k, sides, last_out),
        }
    }

    /// Makes the ghost planes on both sides hold the neighbours' planes as sweep `k` left
    /// them (those on the earlier side of a sweep in the same direction as sweep `k` already
    /// do).
    pub(crate) fn settle<const N: usize>(
        &mut self,
        peers: &impl Peers,
        k: usize,
        engine: &mut impl Engine<T, N>,
    ) -> Result<()> {
        for side in 0..2 {
            self.sides.fetch(peers, &self.cycle, side, k, engine)?;
        }
        self.exchange_wraps(peers, engine)
    }

    /// At a periodic cut of axis 0: sends the own planes facing it to the rank across it and
    /// receives that rank's into the ghost planes beyond it, both as the sweeps so far left
    /// them. Both ranks at the cut call it at the start of every sweep and at every check, so
    /// that the calls pair up.
    ///
    /// The first rank of a sweep reads the last rank's planes as the sweep before left them,
    /// so it waits for the last rank to end that sweep: across a periodic cut the ranks
    /// sweep one after another. The messages are sent and received at once, so that neither
    /// rank waits for the other to receive while that one waits for it.
    pub(crate) fn exchange_wraps<const N: usize>(
        &mut self,
        peers: &impl Peers,
        engine: &mut impl Engine<T, N>,
    ) -> Result<()> {
        if self.wraps.is_empty() {
            return Ok(());
        }
        // Read after the engine's fill of this sweep (or, at a check, before the one that
        // measures): the planes' outer layers of the other axes are filled as one process
        // fills them.
        for (wrap, out) in self.wraps.iter().zip(&mut self.wrap_out) {
            engine.read(wrap.facing.clone(), out)?;
        }
        let sends: Vec<_> = self.wraps.iter().zip(&self.wrap_out).map(|(w, out)| (w.rank, w.side, &out[..])).collect();
        let mut receives: Vec<_> =
            self.wraps.iter().zip(&mut self.wrap_in).map(|(w, into)| (w.rank, w.side, &mut into[..])).collect();
        peers.post(&sends, &mut receives, || Ok(()))?;
        for (wrap, planes) in self.wraps.iter().zip(&self.wrap_in) {
            engine.write(wrap.ghost.clone(), planes)?;
        }
        Ok(())
    }
}

/// Runs the fill `copies` on `planes`, consecutive planes of axis 0 whose shape is
/// `shape` (one to three axes): a dynamic shape, since the message's plane count is the
/// split's radius.
fn fill_planes<T: Copy>(planes: &mut [T], shape: &[usize], copies: &[FillCopy]) {
    match *shape {
        [a] => fill(planes, [a], copies),
        [a, b] => fill(planes, [a, b], copies),
        [a, b, c] => fill(planes, [a, b, c], copies),
        _ => {}
    }
}

/// The rest of sweep `k` after its first planes: the middle planes, the later neighbour's
/// planes, the last planes, and the last planes sent on.
fn finish_sweep<T: Real, const N: usize>(
    engine: &mut impl Engine<T, N>,
    peers: &impl Peers,
    cycle: &Cycle,
    k: usize,
    sides: &mut Sides<T>,
    out: &mut [T],
) -> Result<()> {
    let (which, order) = cycle.of(k);
    engine.sweep(which, order.middle.clone())?;
    sides.fetch(peers, cycle, order.later_side(), k - 1, engine)?;
    engine.sweep(which, order.last.clone())?;
    send_last(engine, peers, cycle, k, out)
}

/// Sends the last planes of sweep `k` to the later neighbour (when it reads them).
fn send_last<T: Real, const N: usize>(
    engine: &mut impl Engine<T, N>,
    peers: &impl Peers,
    cycle: &Cycle,
    k: usize,
    out: &mut [T],
) -> Result<()> {
    let order = cycle.of(k).1;
    let Some(later) = order.later.filter(|_| cycle.sends(order.later_side(), k)) else { return Ok(()) };
    engine.read(order.to_later.clone(), out)?;
    peers.post(&[(later, order.later_side(), &*out)], &mut [], || Ok(()))
}

/// Sweeps of one stencil, or of several in turn, on an engine: the pipeline across ranks,
/// one sweep of the whole interior in one process.
pub(crate) struct Swept<'p, P: Peers, E, T: Real, const N: usize> {
    pub engine: E,
    peers: &'p P,
    planes: Planes,
    stop: StopRule,
    global: [usize; N],
    pipeline: Pipeline<T>,
    halos: Exchange<T>,
    /// The sweeps done.
    swept: usize,
    measured: Option<Difference>,
}

impl<'p, P: Peers, E: Engine<T, N>, T: Real, const N: usize> Swept<'p, P, E, T, N> {
    /// Sweeps of `stencils` in turn (each sweeping axis 0 in its direction, of its radius
    /// there, at most the split's), on `engine` over `planes` (of a grid whose whole shape
    /// is `global`) under `stop`.
    pub fn new(
        engine: E,
        Place { peers, planes, global, .. }: Place<'p, P, N>,
        halos: Exchange<T>,
        stop: StopRule,
        stencils: &[(Direction, usize)],
    ) -> Result<Self> {
        let plane_len = global[1..].iter().product();
        let pipeline = Pipeline::new(&planes, stencils, plane_len);
        Ok(Self { engine, peers, planes, stop, global, pipeline, halos, swept: 0, measured: None })
    }

    /// These sweeps with the periodic and Neumann layers of `boundaries` (a stencil of
    /// radius `radius`) filled over the planes sent to the earlier neighbour, as one process
    /// fills them before the sweep that reads them (the engine fills the rest); across a
    /// periodic cut of axis 0 the ghost planes beyond it are then exchanged as the run starts
    /// (the reference ρ(u⁰) of a relative tolerance reads them; every sweep brings them
    /// again).
    pub fn with_boundaries(mut self, boundaries: &Boundaries<N>, radius: [usize; N]) -> Result<Self> {
        let mut shape = self.global;
        shape[0] = self.planes.radius;
        let copies = fill_plan(boundaries, radius, shape, Edges { low: false, high: false });
        self.pipeline.first_fill = (copies, shape.to_vec());
        self.pipeline.exchange_wraps(self.peers, &mut self.engine)?;
        Ok(self)
    }

    /// ρ of the current iterate over the own planes, by a measuring update (into the
    /// second buffer: the iterate does not change).
    fn residual(&mut self) -> Result<Difference> {
        self.engine.fill()?;
        self.engine.update(self.planes.own.clone(), 1, true)?;
        self.engine.difference()
    }
}

impl<P: Peers, E: Engine<T, N>, T: Real, const N: usize> Advance<T, N> for Swept<'_, P, E, T, N> {
    fn reference(&mut self) -> Result<Option<(f64, f64)>> {
        if !matches!(self.stop.tolerance, Some(Tolerance::Relative { .. })) {
            return Ok(None);
        }
        // The reference ρ(u⁰) is measured before the first sweep changes u.
        let d = self.residual()?;
        let (max, sum, _, _) = self.peers.reduce(d.max_abs, d.sum_sq, u64::MAX, 0.0);
        Ok(Some((max, sum.sqrt())))
    }

    fn advance(&mut self, iteration: usize) -> Result<Option<Unit>> {
        if self.stop.max_iterations.is_some_and(|max| iteration >= max) {
            return Ok(None);
        }
        let k = iteration + 1;
        self.engine.fill()?;
        self.pipeline.sweep(self.peers, k, &mut self.engine)?;
        self.swept = k;
        if !self.stop.checks_at(k) {
            return Ok(Some(Unit { end: k, record_at: None, host_holds: !E::QUEUED }));
        }
        // Both sides of the own planes hold this sweep's values: the later neighbour's first
        // planes are received early.
        self.pipeline.settle(self.peers, k, &mut self.engine)?;
        self.measured = Some(match self.stop.tolerance {
            Some(_) => self.residual()?,
            None => {
                let (own, part) = (self.planes.own.clone(), self.planes.part());
                Difference { max_abs: 0.0, sum_sq: 0.0, first_non_finite: self.engine.find_non_finite(own, part)? }
            }
        });
        Ok(Some(Unit { end: k, record_at: Some(k), host_holds: !E::QUEUED }))
    }

    fn measured(&mut self, unit: &Unit) -> Result<Option<(f64, f64)>> {
        let d = self.measured.take().unwrap_or_default();
        let residual = reduce_check(
            self.peers,
            &self.planes,
            self.global,
            d,
            |at| self.engine.value_at(at),
            unit.end,
            self.stop.check_every,
        )?;
        Ok(self.stop.tolerance.is_some().then_some(residual))
    }

    fn settle(&mut self) -> Result<()> {
        Ok(())
    }

    fn host(&mut self) -> Result<&mut Grid<T, N>> {
        // A checkpoint or an observer sees the current iterate's outer layer.
        self.engine.fill()?;
        self.engine.host()
    }

    fn wait(&mut self) -> Result<()> {
        // Every ghost plane holds the last sweep: the later neighbour's first planes (unless
        // a check brought them), then every ghost plane, `depth · radius` a side.
        self.pipeline.settle(self.peers, self.swept, &mut self.engine)?;
        exchange(&mut self.engine, self.peers, &self.planes, &mut self.halos)?;
        self.engine.wait()
    }

    fn finish(&mut self) -> Result<()> {
        // The outer layer of the last iterate.
        self.engine.fill()?;
        self.engine.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planes(own: Range<usize>, count: usize, below: Option<usize>, above: Option<usize>) -> Planes {
        Planes { count, radius: 2, ghost: 4, wraps: (false, false), depth: 2, own, below, above, origin: 0 }
    }

    #[test]
    fn an_ascending_sweep_starts_below_and_a_descending_one_above() {
        let middle = planes(4..11, 15, Some(0), Some(2));
        let up = Order::new(&middle, Direction::Ascending);
        assert_eq!((up.earlier, up.later), (Some(0), Some(2)));
        assert_eq!((up.earlier_side, up.later_side()), (0, 1));
        assert!(!up.first_reads_later());
        assert_eq!((up.first, up.middle, up.last), (4..6, 6..9, 9..11));
        assert_eq!((up.to_earlier, up.to_later), (4..6, 9..11));
        let down = Order::new(&middle, Direction::Descending);
        assert!(!down.first_reads_later());
        assert_eq!((down.earlier, down.later), (Some(2), Some(0)));
        assert_eq!((down.earlier_side, down.later_side()), (1, 0));
        assert_eq!((down.first, down.middle, down.last), (9..11, 6..9, 4..6));
        assert_eq!((down.to_earlier, down.to_later), (9..11, 4..6));
    }

    #[test]
    fn planes_no_neighbour_waits_for_are_swept_with_the_middle() {
        let bottom = planes(2..9, 11, None, Some(1));
        let up = Order::new(&bottom, Direction::Ascending);
        assert_eq!((up.first, up.last, up.to_later), (2..7, 7..9, 7..9));
        assert!(up.middle.is_empty());
        let down = Order::new(&bottom, Direction::Descending);
        assert_eq!((down.first, down.last, down.to_earlier), (7..9, 2..7, 7..9));
        assert!(down.middle.is_empty());
        let lone = Order::new(&planes(2..9, 11, None, None), Direction::Ascending);
        assert_eq!(lone.first, 2..9);
        assert!(lone.middle.is_empty() && lone.last.is_empty());
    }

    #[test]
    fn fewer_than_two_radii_of_own_planes_are_swept_at_once() {
        let narrow = planes(4..7, 11, Some(0), Some(2));
        let up = Order::new(&narrow, Direction::Ascending);
        assert!(up.middle.is_empty() && up.last.is_empty() && up.first_reads_later());
        assert_eq!((up.first, up.to_earlier, up.to_later), (4..7, 4..6, 5..7));
        let lone = planes(2..3, 5, None, None);
        for direction in [Direction::Ascending, Direction::Descending] {
            let order = Order::new(&lone, direction);
            assert_eq!(order.first, 2..3);
            assert!(order.middle.is_empty() && order.last.is_empty());
        }
    }

    /// Every sweep's ghost planes are sent by the neighbour: the earlier side's as this sweep
    /// leaves them, the later side's as the sweep before left them. Every message is read
    /// before the next one on that side is needed, and what one rank sends is what its
    /// neighbour receives, so messages pair up in order.
    #[test]
    fn every_plane_a_sweep_reads_is_sent_once_and_received_in_order() {
        use Direction::{Ascending as Up, Descending as Down};
        let middle = planes(4..11, 15, Some(0), Some(2));
        for directions in [vec![Up], vec![Down], vec![Up, Down], vec![Down, Up], vec![Up, Up, Down]] {
            let cycle = Cycle { orders: directions.iter().map(|&d| Order::new(&middle, d)).collect() };
            for k in 1..=12 {
                let order = cycle.of(k).1;
                assert!(cycle.receives(order.earlier_side, k), "{directions:?}, sweep {k}: earlier side");
                if k > 1 {
                    assert!(cycle.receives(order.later_side(), k - 1), "{directions:?}, sweep {k}: later side");
                }
                for side in 0..2 {
                    assert_eq!(cycle.sends(side, k), cycle.receives(1 - side, k), "{directions:?}, sweep {k}");
                }
            }
        }
        // Opposite directions in turn: a sweep's planes facing the neighbour it comes first to
        // are not sent (that neighbour reads them only after the next sweep).
        let turn = Cycle { orders: vec![Order::new(&middle, Up), Order::new(&middle, Down)] };
        assert!(turn.sends(1, 1) && !turn.sends(0, 1));
        assert!(turn.sends(0, 2) && !turn.sends(1, 2));
    }
}
