//! Skewed slabs on the device (`Inner::Skewed`, `docs/schedules.md`): iteration t of slab
//! [a, b) updates [a − t·r, b − t·r), reading below it what the previous slab left on the
//! device, so that every plane is computed once per iteration and crosses the bus once per
//! pass each way.

use std::ops::Range;

use super::pyramid::{Kernels, Pyramid, view_dims};
use crate::cuda::device::driver_error;
use crate::cuda::launch::{Args, fill, launch};
use crate::engine::PassPlan;
use crate::plan::launch::plain;
use crate::{Real, Result, Stencil};

impl<S: Stencil<N>, T: Real, const N: usize> Pyramid<'_, S, T, N> {
    /// Skewed slab `s` (the `position`-th of the pass): its fresh planes up, the planes
    /// below them from the previous slot's window, its levels, its last level down.
    pub(super) fn skewed_slab(
        &mut self,
        s: usize,
        position: usize,
        host: &mut [&mut [T]],
        inputs: &[Option<&[T]>],
        pass: PassPlan,
    ) -> Result<()> {
        let len = pass.len;
        let slabs = &self.slabs;
        let window = slabs.window(s, len);
        let local = |planes: &Range<usize>| slabs.elements(&(planes.start - window.start..planes.end - window.start));
        let fresh = slabs.fresh(s, len);
        let (even, odd) = self.slots.split_at_mut(1);
        let (slot, previous) = if s.is_multiple_of(2) { (&mut even[0], &odd[0]) } else { (&mut odd[0], &even[0]) };
        debug_assert_eq!(position % 2, s % 2, "skewed slabs are not rotated");
        // Up: the fresh planes of every unknown and of every field.
        let up = &self.up;
        for (host, [first, _]) in host.iter().zip(&mut slot.u) {
            up.memcpy_htod(&host[slabs.elements(&fresh)], &mut first.slice_mut(local(&fresh)))
                .map_err(driver_error("copying a slab to the device"))?;
        }
        for (field, buffer) in inputs.iter().zip(slot.fields.iter_mut()) {
            if let (Some(data), Some(buffer)) = (field, buffer) {
                up.memcpy_htod(&data[slabs.elements(&fresh)], &mut buffer.slice_mut(local(&fresh)))
                    .map_err(driver_error("copying a field to the device"))?;
            }
        }
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
        for [first, second] in &mut slot.u {
            compute
                .memcpy_dtod(&first.slice(local(&fresh)), &mut second.slice_mut(local(&fresh)))
                .map_err(driver_error("copying a slab"))?;
        }
        self.levels(s, position, window.clone(), pass)?;
        // Down: the last level, in place.
        let slabs = &self.slabs;
        let last = slabs.level(s, len, len);
        let from = slabs.elements(&(last.start - window.start..last.end - window.start));
        for (host, buffers) in host.iter_mut().zip(&self.slots[position % 2].u) {
            self.down
                .memcpy_dtoh(&buffers[len % 2].slice(from.clone()), &mut host[slabs.elements(&last)])
                .map_err(driver_error("copying a slab to the host"))?;
        }
        Ok(())
    }

    /// The iterations of `pass` on skewed slab `s` (the `position`-th of the pass): level t
    /// from buffer (t − 1) mod 2 into the other.
    fn levels(&mut self, s: usize, position: usize, window: Range<usize>, pass: PassPlan) -> Result<()> {
        let PassPlan { len, measure: check } = pass;
        let Kernels::Plain { pass, measure } = &self.kernels else { unreachable!("skewed slabs run plain") };
        for t in 1..=len {
            let level = self.slabs.level(s, len, t);
            if level.is_empty() {
                continue;
            }
            let view = level.start - self.slabs.radius..level.end + self.slabs.radius;
            let range = self.slabs.elements(&(view.start - window.start..view.end - window.start));
            let measured = check && t == len;
            let dims = view_dims::<S, N>(self.shape, view.len());
            let kernel = if measured { measure } else { pass };
            let shape = plain(S::KERNELS, dims, self.block, kernel.vector(), self.gpu.limits())?;
            let entries = self.block_offsets[s]..self.block_offsets[s] + self.measure_shapes[s].blocks().max(1);
            if let Some((boundary, views)) = &self.fill {
                // The view of iterate t − 1, its outer layers filled.
                for buffers in &mut self.slots[position % 2].u {
                    let grid = buffers[(t - 1) % 2].slice_mut(range.clone());
                    fill(&self.compute, boundary, S::KERNELS, grid, dims, &views.view(&view))?;
                }
            }
            let (fields, targets) = self.slots[position % 2].views::<N, S>(range, (t - 1) % 2);
            let mut args = Args::new(dims.map(|n| n as i64), fields, &self.scalars);
            args.set_outputs(targets);
            args.checks = Some((
                self.block_max.slice_mut(entries.clone()),
                self.block_sum.slice_mut(entries),
                self.first_bad.slice_mut(s..s + 1),
            ));
            launch(&self.compute, kernel, args, shape)?;
        }
        Ok(())
    }
}
