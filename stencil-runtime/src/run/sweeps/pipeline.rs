//! The pipeline of sweeps on one rank: the order of its planes in a sweep, which neighbour's
//! planes it waits for and when, what it sends, and the swap across a periodic cut (the
//! parent module's documentation describes the protocol).

use std::ops::Range;

use crate::engine::Engine;
use crate::plan::fill::{FillCopy, fill};
use crate::plan::planes::Planes;
use crate::run::peers::Peers;
use crate::{Direction, Real, Result};

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
pub(crate) struct Cycle {
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
    pub(crate) fn sends(&self, side: usize, k: usize) -> bool {
        side == self.of(k).1.later_side() || side == self.of(k + 1).1.earlier_side
    }

    /// Whether the neighbour on `side` sends its planes facing this rank as sweep `k` left
    /// them (its [`sends`](Self::sends), seen from this side).
    pub(crate) fn receives(&self, side: usize, k: usize) -> bool {
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

    /// Fills the other axes' periodic and Neumann layers of the planes sent to the earlier
    /// neighbour by `copies` (over planes of `shape`), as one process fills them before the
    /// sweep that reads them.
    pub(crate) fn fill_sent(&mut self, copies: Vec<FillCopy>, shape: Vec<usize>) {
        self.first_fill = (copies, shape);
    }

    /// The planes every sweep updates when this rank is alone and sweeps one stencil: then
    /// nothing passes between sweeps, and several can run as one unit.
    pub(crate) fn alone(&self) -> Option<Range<usize>> {
        let [order] = &self.cycle.orders[..] else { return None };
        let alone = order.earlier.is_none() && order.later.is_none() && self.wraps.is_empty();
        alone.then(|| order.own.clone())
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
