//! The loop: one iteration loop ([`drive`](drive::drive)) that drives every schedule on
//! every backend, single-process or distributed, with the checks, checkpoints, progress and
//! convergence written once. A schedule advances a run a unit at a time on an engine
//! (`engine.rs`): Jacobi iterations and exact cycles (`jacobi.rs`), inexact cycles across
//! ranks (`tiles.rs`), out-of-core passes (`passes.rs`) and sweeps (`sweeps/`).

pub(crate) mod drive;
pub(crate) mod jacobi;
pub(crate) mod job;
pub(crate) mod monitor;
pub(crate) mod passes;
pub(crate) mod peers;
pub(crate) mod sweeps;
pub(crate) mod tiles;
