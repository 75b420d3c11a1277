//! The buffers of a GPU engine: the grid's two iterates, the read-only fields and the
//! check's per-block arrays, allocated untracked so that the engine's two streams overlap.

use cudarc::driver::CudaSlice;

use super::MEASURED_LAUNCHES;
use crate::cuda::device::{Gpu, driver_error};
use crate::{Grid, Real, Result};

/// The buffers a checked inexact cycle writes across ranks: its block entries and its first
/// non-finite value.
pub(super) struct CycleChecks {
    pub(super) block_max: CudaSlice<f64>,
    pub(super) block_sum: CudaSlice<f64>,
    pub(super) first_bad: CudaSlice<u64>,
}

/// The sizes of an engine's buffers besides the grids.
pub(super) struct BufferSizes {
    /// Whether a second buffer of the unknown is needed (a run that measures nothing has
    /// none).
    pub(super) second: bool,
    /// Entries of the check's block arrays.
    pub(super) blocks: usize,
    /// Entries of an inexact cycle's checks across ranks, when it has them.
    pub(super) cycle_blocks: Option<usize>,
}

/// The buffers of an engine.
pub(super) struct Buffers<T> {
    pub(super) inputs: Vec<Option<CudaSlice<T>>>,
    pub(super) current: CudaSlice<T>,
    pub(super) next: CudaSlice<T>,
    pub(super) block_max: CudaSlice<f64>,
    pub(super) block_sum: CudaSlice<f64>,
    pub(super) first_bad: CudaSlice<u64>,
    pub(super) cycle_checks: Option<CycleChecks>,
}

/// Uploads the grid and the fields and allocates the check buffers of `sizes`.
pub(super) fn allocate<T: Real, const N: usize>(
    gpu: &Gpu,
    u: &Grid<T, N>,
    inputs: &[Option<&[T]>],
    sizes: BufferSizes,
) -> Result<Buffers<T>> {
    let BufferSizes { second, blocks, cycle_blocks } = sizes;
    let stream = &gpu.stream;
    let upload = |data: &[T]| gpu.upload(stream, data, "a grid");
    let allocate = |n: usize| gpu.alloc_zeros::<f64>(stream, n.max(1), "the residual's per-block results");
    untracked(gpu, || {
        let current = upload(u.as_slice())?;
        // A run that measures nothing needs no second buffer.
        let next = if second { upload(u.as_slice())? } else { gpu.alloc_zeros::<T>(stream, 1, "a placeholder")? };
        let cycle_checks = cycle_blocks
            .map(|blocks| {
                Ok(CycleChecks {
                    block_max: allocate(blocks)?,
                    block_sum: allocate(blocks)?,
                    first_bad: gpu.upload(stream, &[u64::MAX], "the non-finite flag")?,
                })
            })
            .transpose()?;
        let buffers = Buffers {
            inputs: inputs.iter().map(|f| f.map(upload).transpose()).collect::<Result<Vec<_>>>()?,
            current,
            next,
            block_max: allocate(blocks)?,
            block_sum: allocate(blocks)?,
            first_bad: gpu.upload(stream, &[u64::MAX; MEASURED_LAUNCHES], "the non-finite flags")?,
            cycle_checks,
        };
        stream.synchronize().map_err(driver_error("waiting for the device"))?;
        Ok(buffers)
    })
}

/// Runs `allocate` with cudarc's event tracking off, so that the buffers it makes are
/// untracked.
///
/// With tracking, every use of a buffer on one stream waits for its last use on the other,
/// so the copies of the planes sent would wait for the update of the middle planes (the
/// same buffer) and nothing would overlap. The engine orders its two streams itself (events
/// in `stage` and `unstage`), waits for the allocations before using the buffers on another
/// stream, and waits for both streams before they are freed (`Drop`).
pub(crate) fn untracked<X>(gpu: &Gpu, allocate: impl FnOnce() -> Result<X>) -> Result<X> {
    let tracking = gpu.ctx.is_event_tracking();
    // SAFETY: see above; tracking is restored at once, so only these buffers are untracked.
    unsafe { gpu.ctx.disable_event_tracking() };
    let allocated = allocate();
    if tracking {
        // SAFETY: turns tracking back on for buffers allocated from now on.
        unsafe { gpu.ctx.enable_event_tracking() };
    }
    allocated
}
