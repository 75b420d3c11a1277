//! The loop: one iteration loop that drives every schedule on every backend, single-process
//! or distributed, with the checks, checkpoints, progress and convergence written once.

pub(crate) mod monitor;
