//! The rayon backend, the CPU twin of every schedule: the plain pass (`plain.rs`),
//! hierarchical cycles (`hierarchical.rs`), sweeps (`sweep.rs`) and out-of-core passes
//! (`out_of_core.rs`), run by an engine over the user's grid (`engine.rs`). The same point
//! function in the same order as every GPU kernel, so exact mode gives the same bits.

mod engine;
pub(crate) mod hierarchical;
pub(crate) mod out_of_core;
mod plain;
mod sweep;

pub(crate) use engine::CpuEngine;
pub(crate) use out_of_core::CpuPasses;

use crate::{Grid, Real, Result};

/// The iterate's second buffer (the Jacobi target, or where a sweep's residual is measured):
/// a copy of `u`, so that its boundary layer holds the Dirichlet values.
pub(crate) fn second_buffer<T: Real, const N: usize>(u: &Grid<T, N>) -> Result<Vec<T>> {
    crate::memory::copy_of(u.as_slice(), || format!("the solver's second buffer (shape {:?}, {})", u.shape(), T::NAME))
}
