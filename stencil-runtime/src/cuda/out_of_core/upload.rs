//! Copies up: a slab's planes from the host into its slot (a pyramid's chunk, a skewed
//! slab's fresh planes), once the host planes it reads hold what the pass before wrote
//! back ([`PassOrder`](super::order::PassOrder)), and the next pass's first slab ahead.

use std::ops::Range;

use super::pyramid::{Pyramid, pyramid_parts};
use crate::cuda::device::driver_error;
use crate::{Real, Result, Stencil};

impl<S: Stencil<N>, T: Real, const N: usize> Pyramid<'_, S, T, N> {
    /// Copies the next pass's first slab up ahead, for a pass of `len` like this one: into
    /// the slot the last slab of this pass does not use, once this pass has written back
    /// the planes it reads.
    pub(super) fn prefetch(&mut self, host: &[&mut [T]], inputs: &[Option<&[T]>], len: usize) -> Result<()> {
        let Some(s) = self.slabs.order().next() else { return Ok(()) };
        let position = self.order.next_position();
        self.upload(s, position, host, inputs, len, true)?;
        self.order.prefetched(len, 1);
        Ok(())
    }

    /// Copies slab `s`'s planes up into the slot of `position` (the slab's place in the
    /// sequence of slabs, whose parity picks its slot) for a pass of `len`, once the host
    /// planes it reads are written back (`ahead`: by the pass running now, for the next
    /// pass's first slab; else by the last pass).
    ///
    /// A skewed slab sends its fresh planes of every unknown and every field. A pyramid
    /// sends its chunk from its own first plane on, and every field's chunk: the lower ghost
    /// planes are written back already and come from the carry (slab 0's are boundary or
    /// ghost planes, never written, and the first slab of a rotated pass finds them not
    /// written yet: they come from the grid); before a rotated pass's first slab, the planes
    /// that it and the slabs after it write back come from the upper carry.
    ///
    /// The fields go first, as soon as the compute stream is done with the slot's fields;
    /// the unknowns once the slot's last write-back has ended (their copies up then overlap
    /// it, over both directions of the bus).
    pub(super) fn upload(
        &mut self,
        s: usize,
        position: usize,
        host: &[&mut [T]],
        inputs: &[Option<&[T]>],
        len: usize,
        ahead: bool,
    ) -> Result<()> {
        let slabs = &self.slabs;
        // The planes the slot's buffers start at and hold, the parts of every unknown sent,
        // and the planes of every field sent.
        let (window, unknowns, fields) = if slabs.skewed {
            let fresh = slabs.fresh(s, len);
            (slabs.window(s, len), vec![fresh.clone()], fresh)
        } else {
            let (lower, upper, chunk) = pyramid_parts(slabs, s, len);
            let parts = if s == 0 || s == slabs.first { vec![lower, upper] } else { vec![upper] };
            (chunk.clone(), parts, chunk)
        };
        let local = |planes: &Range<usize>| slabs.elements(&(planes.start - window.start..planes.end - window.start));
        let slot = &mut self.slots[position % 2];
        let up = &self.up;
        // The fields are read-only: the host never changes them between passes.
        self.order.wait_for_fields(position, up)?;
        for (field, buffer) in inputs.iter().zip(slot.fields.iter_mut()) {
            if let (Some(data), Some(buffer)) = (field, buffer) {
                up.memcpy_htod(&data[slabs.elements(&fields)], &mut buffer.slice_mut(local(&fields)))
                    .map_err(driver_error("copying a field to the device"))?;
            }
        }
        self.order.wait_for_slot(position, &[up])?;
        self.order.wait_for_planes(&window, ahead, up)?;
        for (host, [first, _]) in host.iter().zip(&mut slot.u) {
            for part in &unknowns {
                up.memcpy_htod(&host[slabs.elements(part)], &mut first.slice_mut(local(part)))
                    .map_err(driver_error("copying a slab to the device"))?;
            }
        }
        Ok(())
    }
}
