//! Out-of-core passes: the grid stays in host memory and each pass of at most `height`
//! iterations streams it through a backend in slabs (`plan::slabs`), in place. A pass ends
//! at the first check it reaches and measures in its last iteration, so checks, residuals,
//! the stopping iteration and the iterate are `Plain`'s.
//!
//! Under an MPI rank the slabs cover the own planes, and each pass (of at most `depth`
//! iterations) starts from the iterate its ghost planes hold. The ghost planes a pass writes
//! are sent when it ends and received during the next pass (the first pass receives those of
//! the iterate the run starts from, so that across a periodic cut the first rank's come from
//! the last rank, not from the grid's outer layer): its slabs are rotated
//! (`Slabs::first`) so that it starts with those that read no ghost plane, and the exchange
//! runs while a GPU computes them. After the last pass the ghost planes are brought up to
//! date.

use std::time::Instant;

use super::drive::{Advance, Unit, reduce_check};
use super::peers::{Peers, Place};
use crate::engine::{Difference, PassPlan, Passes};
use crate::plan::Layout;
use crate::plan::fill::{FillCopy, fill};
use crate::plan::planes::{Exchange, Planes};
use crate::plan::slabs::Slabs;
use crate::stop::{Residual, StopRule};
use crate::{Grid, Real, Result, SlabProgress};

/// Out-of-core passes of a backend over the user's grids.
pub(crate) struct Slabbed<'p, 'g, 'c, P: Peers, X, T: Real, const N: usize> {
    pub passes: X,
    peers: &'p P,
    planes: Planes,
    stop: StopRule,
    global: [usize; N],
    slabs: Slabs,
    /// Every unknown's grid, in declaration order.
    grids: Vec<&'g mut Grid<T, N>>,
    /// The exchange's buffers: every unknown's planes, one after the other.
    halos: Exchange<T>,
    /// `send` holds planes of the last pass that the neighbours have not received.
    unsent: bool,
    on_slab: Option<&'c mut dyn FnMut(&SlabProgress)>,
    started: Instant,
    measured: Option<Difference>,
    /// The length of every pass run, for the run-time model.
    pub lens: Vec<usize>,
    /// The boundary fill of the whole grid: the passes fill each slab's views, and the grid's
    /// own outer layers are filled here, for a checkpoint, an observer and the end.
    fill: Vec<FillCopy>,
    /// The periodic outer planes of axis 0 in one process, filled before every pass (of one
    /// iteration): the first slab's ghost planes below are the last slab's, and the last
    /// slab's above the first slab's.
    wrap: Vec<FillCopy>,
    /// When a check measures the change since the last one: the local grid's layout (which
    /// points are interior) and every unknown's grid at the last check, compared on the host
    /// over the own planes, slab by slab as a checked pass writes them back.
    reference: Option<(Layout<N>, Vec<Vec<T>>)>,
}

impl<'p, 'g, 'c, P: Peers, X: Passes<T>, T: Real, const N: usize> Slabbed<'p, 'g, 'c, P, X, T, N> {
    /// Passes of `passes` over `slabs` of `grids` (every unknown's, declaration order;
    /// `planes` of a grid whose whole shape is `global`) under `stop`; `on_slab` told of
    /// every slab written back.
    pub fn new(
        passes: X,
        slabs: Slabs,
        grids: Vec<&'g mut Grid<T, N>>,
        Place { peers, planes, global, .. }: Place<'p, P, N>,
        halos: Exchange<T>,
        stop: StopRule,
        on_slab: Option<&'c mut dyn FnMut(&SlabProgress)>,
    ) -> Result<Self> {
        let mut slabbed = Self {
            passes,
            peers,
            planes,
            stop,
            global,
            slabs,
            grids,
            halos,
            unsent: false,
            on_slab,
            started: Instant::now(),
            measured: None,
            lens: Vec::new(),
            fill: Vec::new(),
            wrap: Vec::new(),
            reference: None,
        };
        // The first pass reads ghost planes exchanged like every other's: across a periodic
        // cut the first rank's lower ones are the last rank's planes, not the outer layer the
        // local grid holds.
        if slabbed.planes.has_neighbour() {
            slabbed.stage_sent();
        }
        Ok(slabbed)
    }

    /// Copies the own planes the neighbours read into the send buffers; the next pass
    /// exchanges them.
    fn stage_sent(&mut self) {
        let (sent_lower, sent_upper) = self.planes.sent();
        let (lower, upper) = (self.slabs.elements(&sent_lower), self.slabs.elements(&sent_upper));
        let send = &mut self.halos.send;
        for (k, u) in self.grids.iter().enumerate() {
            send.lower[part(k, &lower)].copy_from_slice(&u.as_slice()[lower.clone()]);
            send.upper[part(k, &upper)].copy_from_slice(&u.as_slice()[upper.clone()]);
        }
        self.unsent = true;
    }

    /// Fills every grid's outer layers by `copies`.
    fn fill_all(grids: &mut [&mut Grid<T, N>], copies: &[FillCopy]) {
        for u in grids {
            let shape = u.shape();
            fill(u.as_mut_slice(), shape, copies);
        }
    }

    /// These passes with the whole grid's outer layers filled by `copies` where the run
    /// leaves or shows the grid, and the periodic planes of axis 0 by `wrap` before every
    /// pass.
    pub fn with_fill(mut self, copies: Vec<FillCopy>, wrap: Vec<FillCopy>) -> Self {
        self.fill = copies;
        self.wrap = wrap;
        self
    }

    /// These passes on a local grid of `layout`: when the stopping rule measures the change
    /// since the last check, a copy of every unknown's grid is kept for it.
    pub fn with_layout(mut self, layout: Layout<N>) -> Self {
        if self.stop.residual == Residual::SinceLastCheck {
            self.reference = Some((layout, self.grids.iter().map(|g| g.as_slice().to_vec()).collect()));
        }
        self
    }

    /// Receives the ghost planes into `grids` (what the neighbours sent after the last pass).
    fn receive(
        peers: &P,
        planes: &Planes,
        slabs: &Slabs,
        grids: &mut [&mut [T]],
        halos: &mut Exchange<T>,
    ) -> Result<()> {
        let (ghost_lower, ghost_upper) = planes.received();
        let (lower, upper) = (slabs.elements(&ghost_lower), slabs.elements(&ghost_upper));
        let Exchange { send, recv } = halos;
        peers.exchange(planes.neighbours(), send, recv, || Ok(()))?;
        for (k, u) in grids.iter_mut().enumerate() {
            u[lower.clone()].copy_from_slice(&recv.lower[part(k, &lower)]);
            u[upper.clone()].copy_from_slice(&recv.upper[part(k, &upper)]);
        }
        Ok(())
    }
}

/// Where unknown `k`'s copy of the grid's `elements` lies in an exchange buffer that holds
/// every unknown's, one after the other.
fn part(k: usize, elements: &std::ops::Range<usize>) -> std::ops::Range<usize> {
    k * elements.len()..(k + 1) * elements.len()
}

impl<P: Peers, X: Passes<T>, T: Real, const N: usize> Advance<T, N> for Slabbed<'_, '_, '_, P, X, T, N> {
    fn advance(&mut self, iteration: usize) -> Result<Option<Unit>> {
        let Some(plan) = self.stop.next_cycle(iteration, self.slabs.height, true) else { return Ok(None) };
        let (start, end) = (iteration, iteration + plan.len);
        self.lens.push(plan.len);
        let measure = plan.measure_step.is_some();
        // Against the reference, the change is measured on the host, slab by slab as each is
        // written back, while the device runs the next.
        let (measure_pass, against_reference) =
            (measure && self.reference.is_none(), measure && self.reference.is_some());
        let another = self.stop.max_iterations.is_none_or(|max| end < max);
        let Self { passes, peers, planes, slabs, grids, halos, on_slab, started, wrap, reference, .. } = self;
        // Another pass may follow, and nothing on the host touches the grid before it: its
        // first slabs may go up, and be computed, while this pass ends.
        let prefetch_next = another && wrap.is_empty() && !planes.has_neighbour();
        if !wrap.is_empty() {
            // The planes copied were written back by the last pass.
            passes.synchronize()?;
            Self::fill_all(grids, wrap);
        }
        let exchanging = std::mem::take(&mut self.unsent);
        let mut ghosts = |grids: &mut [&mut [T]]| match exchanging {
            true => Self::receive(*peers, planes, slabs, grids, halos),
            false => Ok(()),
        };
        let count = slabs.own.len();
        let tell = on_slab.is_some();
        let order: Vec<usize> = slabs.order().collect();
        let mut compared = (0, against_reference.then(Difference::default));
        let mut told = |slab: usize, host: &[&mut [T]]| {
            if let (Some((layout, kept)), (from, Some(total))) = (reference.as_mut(), &mut compared) {
                for &s in &order[*from..slab] {
                    let written = slabs.written_back(s, plan.len);
                    let own = written.start.max(planes.own.start)..written.end.min(planes.own.end);
                    for (u, kept) in host.iter().zip(kept.iter_mut()) {
                        *total = total.merge(Difference::since(layout, own.clone(), u, kept));
                    }
                }
                *from = slab;
            }
            if let Some(callback) = on_slab.as_mut() {
                let elapsed = started.elapsed();
                callback(&SlabProgress { pass_start: start, pass_end: end, slab, slabs: count, elapsed });
            }
        };
        let written = (tell || against_reference).then_some(&mut told as &mut dyn FnMut(usize, &[&mut [T]]));
        let ghosts = planes.has_neighbour().then_some(&mut ghosts as &mut dyn FnMut(&mut [&mut [T]]) -> Result<()>);
        let mut slices: Vec<&mut [T]> = grids.iter_mut().map(|g| g.as_mut_slice()).collect();
        let measured = passes
            .pass(&mut slices, PassPlan { len: plan.len, measure: measure_pass, prefetch_next }, ghosts, written)
            .map_err(|(written, error)| slabs.interrupted(start..end, written, None, error))?;
        if planes.has_neighbour() {
            // The planes sent are read from host memory as soon as the pass has ended.
            passes.synchronize().map_err(|error| slabs.interrupted(start..end, count, None, error))?;
            self.stage_sent();
        }
        self.measured = measured;
        if against_reference {
            let synchronized = self.passes.synchronize();
            synchronized.map_err(|error| self.slabs.interrupted(start..end, count, None, error))?;
            debug_assert_eq!(compared.0, count, "every slab compared as it was written back");
            self.measured = compared.1;
        }
        Ok(Some(Unit { end, record_at: measure.then_some(plan.record_at), host_holds: true }))
    }

    fn measured(&mut self, unit: &Unit) -> Result<Option<(f64, f64)>> {
        let d = self.measured.take().unwrap_or_default();
        let grids = &self.grids;
        // Of a system, the first unknown whose value there is not finite.
        let value_at = |at: usize| {
            let values: Vec<f64> = grids.iter().map(|g| g.as_slice()[at].to_f64()).collect();
            Ok(values.iter().copied().find(|v| !v.is_finite()).unwrap_or(values[0]))
        };
        reduce_check(self.peers, &self.planes, self.global, d, value_at, unit.end, self.stop.check_every).map(Some)
    }

    fn settle(&mut self) -> Result<()> {
        // Every pass ends whole; the ghost planes are brought up to date after the last.
        Ok(())
    }

    fn host(&mut self) -> Result<&mut Grid<T, N>> {
        // A checkpoint needs nothing copied: the write-backs of a checked pass are done.
        Self::fill_all(&mut self.grids, &self.fill);
        Ok(&mut *self.grids[0])
    }

    fn hosts(&mut self) -> Result<Vec<&Grid<T, N>>> {
        Self::fill_all(&mut self.grids, &self.fill);
        Ok(self.grids.iter().map(|g| &**g).collect())
    }

    fn wait(&mut self) -> Result<()> {
        if std::mem::take(&mut self.unsent) {
            let Self { peers, planes, slabs, grids, halos, .. } = self;
            let mut slices: Vec<&mut [T]> = grids.iter_mut().map(|g| g.as_mut_slice()).collect();
            Self::receive(*peers, planes, slabs, &mut slices, halos)?;
        }
        self.passes.synchronize()
    }

    fn finish(&mut self) -> Result<()> {
        // The outer layer of the last iterate.
        Self::fill_all(&mut self.grids, &self.fill);
        Ok(())
    }
}
