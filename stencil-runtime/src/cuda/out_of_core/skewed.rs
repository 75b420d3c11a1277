//! Skewed slabs on the device (`Inner::Skewed`, `docs/schedules.md`): iteration t of slab
//! [a, b) updates [a − t·r, b − t·r), reading below it what the previous slab left on the
//! device, so that every plane is computed once per iteration and crosses the bus once per
//! pass each way.

use std::ops::Range;

use super::pyramid::{Kernels, Pyramid, view_dims};
use crate::cuda::device::driver_error;
use crate::cuda::launch::Kernel;
use crate::engine::PassPlan;
use crate::plan::launch::{CYCLE_INTS, plain};
use crate::plan::stream::StreamBuild;
use crate::schedule::CycleSizes;
use crate::{Real, Result, Stencil};

impl<S: Stencil<N>, T: Real, const N: usize> Pyramid<'_, S, T, N> {
    /// Skewed slab `s` at `position` (its place in the sequence of slabs, whose parity picks
    /// its slot), its fresh planes on the device: the planes below them from the previous
    /// slot's window, its levels; returns the buffer that holds its last level (for
    /// [`skewed_down`](Self::skewed_down)).
    pub(super) fn skewed_compute(&mut self, s: usize, position: usize, pass: PassPlan) -> Result<usize> {
        let len = pass.len;
        let slabs = &self.slabs;
        let window = slabs.window(s, len);
        let fresh = slabs.fresh(s, len);
        let local = |planes: &Range<usize>| slabs.elements(&(planes.start - window.start..planes.end - window.start));
        let (even, odd) = self.slots.split_at_mut(1);
        let (slot, previous) =
            if position.is_multiple_of(2) { (&mut even[0], &odd[0]) } else { (&mut odd[0], &even[0]) };
        // Compute: the planes below the fresh ones from the previous window (both iterates
        // and the fields), the fresh planes into the odd buffer too (their boundary values).
        let compute = &self.compute;
        if s > 0 {
            let before = slabs.window(s - 1, len);
            let kept = slabs.elements(&(window.start - before.start..fresh.start - before.start));
            let into = 0..kept.len();
            let buffers = previous.u.iter().flatten().zip(slot.u.iter_mut().flatten());
            let fields =
                previous.fields.iter().zip(slot.fields.iter_mut()).filter_map(|(a, b)| a.as_ref().zip(b.as_mut()));
            for (from, to) in buffers.chain(fields) {
                compute
                    .memcpy_dtod(&from.slice(kept.clone()), &mut to.slice_mut(into.clone()))
                    .map_err(driver_error("copying the carry"))?;
            }
        }
        // The slot before is read no more: its fields may be copied over from now on.
        self.order.fields_read(position, compute)?;
        for [first, second] in &mut slot.u {
            compute
                .memcpy_dtod(&first.slice(local(&fresh)), &mut second.slice_mut(local(&fresh)))
                .map_err(driver_error("copying a slab"))?;
        }
        match self.kernels {
            Kernels::Cycles { .. } => self.cycles(s, position, window, pass),
            Kernels::Plain { .. } => {
                self.levels(s, position, window, pass)?;
                Ok(len % 2)
            }
        }
    }

    /// Writes skewed slab `s`'s last level (at `position`, in buffer `last`, after a pass of
    /// `len`) back into `host` in place; returns the planes written back.
    pub(super) fn skewed_down(
        &mut self,
        s: usize,
        position: usize,
        host: &mut [&mut [T]],
        len: usize,
        last: usize,
    ) -> Result<Range<usize>> {
        let slabs = &self.slabs;
        let window = slabs.window(s, len);
        let level = slabs.level(s, len, len);
        let from = slabs.elements(&(level.start - window.start..level.end - window.start));
        for (host, buffers) in host.iter_mut().zip(&self.slots[position % 2].u) {
            self.down
                .memcpy_dtoh(&buffers[last].slice(from.clone()), &mut host[slabs.elements(&level)])
                .map_err(driver_error("copying a slab to the host"))?;
        }
        Ok(level)
    }

    /// The iterations of `pass` on skewed slab `s` (at `position`): level t
    /// from buffer (t − 1) mod 2 into the other.
    fn levels(&mut self, s: usize, position: usize, window: Range<usize>, pass: PassPlan) -> Result<()> {
        let Kernels::Plain { pass: plain_pass, measure } = &self.kernels else {
            unreachable!("skewed slabs of plain iterations")
        };
        let (plain_pass, measure) = (plain_pass.clone(), measure.clone());
        for t in 1..=pass.len {
            let kernel = if pass.measure && t == pass.len { &measure } else { &plain_pass };
            self.plain_level(s, position, &window, (pass.len, t), (t - 1) % 2, kernel)?;
        }
        Ok(())
    }

    /// Level `t` of a pass of `len` (`(len, t)`) on skewed slab `s` (at
    /// `position`) by the plain `kernel` (measuring or not), from buffer `from` into the other.
    fn plain_level(
        &mut self,
        s: usize,
        position: usize,
        window: &Range<usize>,
        (len, t): (usize, usize),
        from: usize,
        kernel: &Kernel,
    ) -> Result<()> {
        let level = self.slabs.level(s, len, t);
        if level.is_empty() {
            return Ok(());
        }
        let view = level.start - self.slabs.radius..level.end + self.slabs.radius;
        let dims = view_dims::<S, N>(self.shape, view.len());
        let shape = plain(S::KERNELS, dims, self.block, kernel.vector(), self.gpu.limits())?;
        self.launch_view((s, position), window, view, from, kernel, (shape, [0; CYCLE_INTS]))
    }

    /// Streaming cycles on skewed slab `s` (at `position`), `sub` levels at a
    /// time; returns the buffer that holds the last level. A cycle from level t₀ to T
    /// updates the view from `L_T.start − (T − t₀)·r` (its lower skirt, whose level t₀ the
    /// previous slab set aside) to `L_t₀.end + r` (a frozen edge above, which spoils only
    /// planes above `L_T`), and the cycle's kernel leaves level T correct on `L_T`. Below the
    /// next slab the top `2·sub·r` planes of every level a cycle ends on are set aside.
    /// A checked pass ends with one plain measuring level.
    fn cycles(&mut self, s: usize, position: usize, window: Range<usize>, pass: PassPlan) -> Result<usize> {
        let PassPlan { len, measure: check, .. } = pass;
        let Kernels::Cycles { cycle, measure, sizes, stream: Some(stream) } = &self.kernels else {
            unreachable!("skewed slabs of streaming cycles")
        };
        let (cycle, measure, sizes, stream) = (cycle.clone(), measure.clone(), *sizes, *stream);
        let sets_aside = s + 1 < self.slabs.own.len();
        let (mut current, mut t0, mut k) = (0, 0, 0);
        while t0 < len {
            // The skirt from below in, then this slab's own out, through the same store.
            if s > 0 {
                self.skirt(s - 1, position, &window, (len, t0, k), current, false)?;
            }
            if sets_aside {
                self.skirt(s, position, &window, (len, t0, k), current, true)?;
            }
            if check && t0 + 1 == len {
                self.plain_level(s, position, &window, (len, len), current, &measure)?;
                return Ok(current ^ 1);
            }
            let steps = sizes.sub.min(len - t0 - usize::from(check));
            let t = t0 + steps;
            // Levels emptied at the interior's first plane (a pass taller than the slabs
            // below) are the slabs above's to compute; their skirts are boundary planes, the
            // same in both buffers.
            if !self.slabs.level(s, len, t).is_empty() {
                self.cycle(s, position, &window, (len, t0, t), current, (&cycle, &stream, sizes))?;
                current ^= 1;
            }
            (t0, k) = (t, k + 1);
        }
        Ok(current)
    }

    /// The streaming cycle from level t₀ to T of a pass of `len` (`(len, t0, t)`) on skewed
    /// slab `s` (at `position`), from buffer `from` into the other.
    fn cycle(
        &mut self,
        s: usize,
        position: usize,
        window: &Range<usize>,
        (len, t0, t): (usize, usize, usize),
        from: usize,
        (cycle, stream, sizes): (&Kernel, &StreamBuild, CycleSizes),
    ) -> Result<()> {
        let (r, steps) = (self.slabs.radius, t - t0);
        let lo = match s {
            0 => window.start.max(self.slabs.span(len, t0).start.saturating_sub(r)),
            _ => window.start.max(self.slabs.level(s, len, t).start.saturating_sub(steps * r)),
        };
        let hi = match t0 {
            0 => window.end,
            _ => (self.slabs.level(s, len, t0).end + r).min(window.end),
        };
        let view = lo..hi;
        let dims = view_dims::<S, N>(self.shape, view.len());
        // As in the CPU twin: the view's own ends along axis 0 are no edges.
        let edges = self.fill.as_ref().map_or([0; 3], |(_, f)| f.cycle_edges(&view).flags(S::KERNELS.axes));
        let cycle_sizes = CycleSizes { sub: steps, ..sizes };
        let geometry = stream.cycle(S::KERNELS, dims, cycle_sizes, T::BYTES, self.gpu.limits(), edges)?;
        let launch_shape = (geometry.shape, geometry.ints(steps, 0)?);
        self.launch_view((s, position), window, view, from, cycle, launch_shape)
    }

    /// The skirt of level t (`(len, t, k)`, its `k`-th boundary in a pass of `len`) between
    /// slab `below` and the one above it: the planes `[b − t·r − 2·sub·r, b − t·r)` (within
    /// the upper slab's window), `b` the lower slab's end. With `set_aside`, copied from
    /// buffer `buffer` of slab `below`'s window (in the slot of `position`, `window`) into
    /// the skirts' store; else restored from the store into buffer `buffer` of the upper
    /// slab's window (the slot of `position`, `window`). One store serves both slots: at
    /// each boundary a slab restores the skirt the slab below it set aside before it sets
    /// its own aside in the same place (all on the compute stream).
    fn skirt(
        &mut self,
        below: usize,
        position: usize,
        window: &Range<usize>,
        (len, t, k): (usize, usize, usize),
        buffer: usize,
        set_aside: bool,
    ) -> Result<()> {
        let Kernels::Cycles { sizes, .. } = &self.kernels else { unreachable!("skirts of streaming cycles") };
        let slabs = &self.slabs;
        let skirt = 2 * sizes.sub * slabs.radius;
        let top = slabs.own[below].end.saturating_sub(t * slabs.radius);
        let planes = slabs.window(below + 1, len).start.max(top.saturating_sub(skirt))..top;
        if planes.is_empty() {
            return Ok(());
        }
        let local = slabs.elements(&(planes.start - window.start..planes.end - window.start));
        let stored = slabs.elements(&(k * skirt..k * skirt + planes.len()));
        let slot = &mut self.slots[position % 2];
        for (buffers, store) in slot.u.iter_mut().zip(&mut self.skirts) {
            let copied = match set_aside {
                true => self
                    .compute
                    .memcpy_dtod(&buffers[buffer].slice(local.clone()), &mut store.slice_mut(stored.clone())),
                false => self
                    .compute
                    .memcpy_dtod(&store.slice(stored.clone()), &mut buffers[buffer].slice_mut(local.clone())),
            };
            copied.map_err(driver_error("copying a skirt"))?;
        }
        Ok(())
    }
}
