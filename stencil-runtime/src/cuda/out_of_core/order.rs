//! How the copies of consecutive out-of-core passes are ordered on the device, so that one
//! pass's first slab does not wait for the whole of the pass before it.
//!
//! A slab's chunk reads host planes that the previous pass wrote back, but only those of the
//! slabs whose written planes it overlaps, which are among the first of that pass: its copy
//! up waits for their write-backs alone, not for the last one. The slots alternate over
//! the whole sequence of slabs, across passes, so that the first slab of a pass never takes
//! the slot the last slab of the pass before is still computing in. And where nothing on the
//! host changes the grid between two passes (no ghost planes received, no periodic planes
//! copied), the next pass's first slabs are copied up as soon as the pass before has
//! enqueued its last (`ahead.rs` computes the first one then too). A slot's read-only fields
//! are copied over once the compute stream has done with them, its unknowns once its last
//! write-back has ended.

use std::ops::Range;

use cudarc::driver::{CudaEvent, CudaStream};

use crate::Result;
use crate::cuda::device::driver_error;

/// The write-back of one slab: the host planes it writes, and the end of its copy.
struct WriteBack {
    planes: Range<usize>,
    done: CudaEvent,
}

/// The state that orders a pass's copies against the passes before it.
#[derive(Default)]
pub(super) struct PassOrder {
    /// Position of the next slab in the sequence of every slab run so far (its parity picks
    /// its slot).
    next: usize,
    /// Per slot, the end of the write-back of the last slab that used it: a slab that takes
    /// the slot next waits for it before writing there (the stream-ordered tracking of
    /// buffers keeps one read per buffer, which a later device copy may hide).
    slot_free: [Option<CudaEvent>; 2],
    /// Per slot, the point on the compute stream after which nothing reads the slot's
    /// read-only fields (the kernels of the slab that used it, and the carry of the slab
    /// after it): their copy up for the next slab waits only for this, not for the
    /// write-back.
    fields_free: [Option<CudaEvent>; 2],
    /// The write-backs of the last pass, and of the one running, in order.
    previous: Vec<WriteBack>,
    current: Vec<WriteBack>,
    /// The first slabs of the next pass already copied up: (for a pass of this many
    /// iterations, how many).
    prefetched: Option<(usize, usize)>,
}

impl PassOrder {
    /// Starts a pass of `count` slabs: the position of its first in the sequence.
    pub fn start(&mut self, count: usize) -> usize {
        self.previous = std::mem::take(&mut self.current);
        let first = self.next;
        self.next += count;
        first
    }

    /// The position the next pass's first slab will take.
    pub fn next_position(&self) -> usize {
        self.next
    }

    /// Makes `streams` wait until the slot of `position` (its parity) is free.
    pub fn wait_for_slot(&self, position: usize, streams: &[&CudaStream]) -> Result<()> {
        if let Some(event) = &self.slot_free[position % 2] {
            for stream in streams {
                stream.wait(event).map_err(driver_error("ordering the copies"))?;
            }
        }
        Ok(())
    }

    /// Makes `up` wait until the slot of `position` holds no field that the compute stream
    /// still reads (until the slot is free, where that was not recorded).
    pub fn wait_for_fields(&self, position: usize, up: &CudaStream) -> Result<()> {
        match &self.fields_free[position % 2] {
            Some(event) => up.wait(event).map_err(driver_error("ordering the copies")),
            None => self.wait_for_slot(position, &[up]),
        }
    }

    /// Records on `compute`, as the slab at `position` starts (after any copy it takes from
    /// the slot before), that the compute stream is done with that slot's fields.
    pub fn fields_read(&mut self, position: usize, compute: &CudaStream) -> Result<()> {
        if position > 0 {
            let event = compute.record_event(None).map_err(driver_error("recording an event"))?;
            self.fields_free[(position - 1) % 2] = Some(event);
        }
        Ok(())
    }

    /// Makes `up` wait until the host planes `reads` hold what the last pass wrote back
    /// (`ahead`: what the pass running now writes back, for a copy of the next pass's).
    pub fn wait_for_planes(&self, reads: &Range<usize>, ahead: bool, up: &CudaStream) -> Result<()> {
        let written = if ahead { &self.current } else { &self.previous };
        // The copies down run in order: the last overlapping write-back ends after the others.
        let last = written.iter().rev().find(|w| w.planes.start < reads.end && reads.start < w.planes.end);
        match last {
            Some(w) => up.wait(&w.done).map_err(driver_error("ordering the copies")),
            None => Ok(()),
        }
    }

    /// Records the write-back just enqueued on `down` of the slab at `position`, which
    /// writes the host planes `planes`.
    pub fn written_back(&mut self, position: usize, planes: Range<usize>, down: &CudaStream) -> Result<()> {
        let record = || down.record_event(None).map_err(driver_error("recording an event"));
        self.slot_free[position % 2] = Some(record()?);
        self.current.push(WriteBack { planes, done: record()? });
        Ok(())
    }

    /// Notes that the next pass's first `slabs` slabs are on the device for a pass of `len`.
    pub fn prefetched(&mut self, len: usize, slabs: usize) {
        self.prefetched = Some((len, slabs));
    }

    /// Whether the next pass's first slab is on the device for a pass of `len`.
    pub fn is_prefetched(&self, len: usize) -> bool {
        matches!(self.prefetched, Some((l, n)) if l == len && n > 0)
    }

    /// Forgets the copies ahead: the first slab's slot was overwritten.
    pub fn forget_prefetched(&mut self) {
        self.prefetched = None;
    }

    /// Whether the slab at `position` (of a pass of `len` starting at `first`) was copied
    /// up ahead; forgets the copies ahead once the pass has passed them, or at once if they
    /// were for a pass of another length.
    pub fn take_prefetched(&mut self, position: usize, first: usize, len: usize) -> bool {
        match self.prefetched {
            Some((l, n)) if l == len && (first..first + n).contains(&position) => {
                if position + 1 == first + n {
                    self.prefetched = None;
                }
                true
            }
            _ => {
                self.prefetched = None;
                false
            }
        }
    }
}
