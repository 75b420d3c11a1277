//! What a pass leaves for the next at the seam between them (`ahead.rs`): its check in
//! page-locked host memory, and the next pass's first slab computed ahead.

use std::sync::Arc;

use cudarc::driver::{CudaContext, DeviceRepr, PinnedHostSlice};

use crate::Result;
use crate::cuda::device::driver_error;

/// The next pass's first slab, computed ahead for a pass of `len` iterations (measured or
/// not): its last level is in buffer `last` of its slot, and only its write-back is left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ahead {
    pub len: usize,
    pub measure: bool,
    pub last: usize,
}

/// A measured pass's check in page-locked host memory: the non-finite flags and the
/// per-block maxima and sums.
pub(super) struct CheckHost {
    pub first_bad: PinnedHostSlice<u64>,
    pub block_max: PinnedHostSlice<f64>,
    pub block_sum: PinnedHostSlice<f64>,
}

impl CheckHost {
    /// Page-locked host memory for `n` values, without write combining (the host reads it).
    pub fn pinned<V: DeviceRepr>(ctx: &Arc<CudaContext>, n: usize) -> Result<PinnedHostSlice<V>> {
        // SAFETY: the memory is written only by copies from the device, each read after its
        // event (`PinnedHostSlice::as_slice` waits for it).
        unsafe { ctx.alloc_pinned_with_flags(n, 0) }.map_err(driver_error("allocating page-locked memory"))
    }
}
