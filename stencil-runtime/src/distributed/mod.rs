//! Distributed runs: one grid cut into subdomains along the slowest axis, one per MPI rank
//! (a process; one per GPU, or per CPU node), with deep halos.
//!
//! - [`Decomposition`] is the cut (pure arithmetic, always available).
//! - With the cargo feature `mpi` (these items exist only then, so they are named here
//!   without links): `Mpi` initialises MPI, `Mpi::split` gives this rank's `Subdomain`,
//!   `Solver::distributed` runs a solver on it, and `Subdomain::gather` collects a result.
//!
//! A run exchanges `depth · radius` ghost planes with each neighbour once every `depth`
//! iterations; in between, each rank updates a region that shrinks by `radius` planes per
//! iteration down to its own planes, so its own planes hold exactly the iterates of a
//! single-process `Plain` run (bit for bit in exact mode). The exchange is overlapped with
//! the update: in the last iteration before it, the planes to be sent are updated first,
//! then sent and received (non-blocking) while the rest is updated. The residual of every
//! check is reduced over all ranks, so every rank stops at the same iteration.
//!
//! An inexact hierarchical schedule computes the whole grid's tiles that meet a rank's
//! planes, so that every rank's planes hold the single-process iterate of that schedule
//! (`run/tiles.rs`).
//!
//! A `sweep(…)` stencil cannot use deep halos (one sweep carries influence through the
//! whole grid): its sweeps are pipelined across the ranks instead, `radius` planes passed
//! to each neighbour per sweep, and every rank's planes hold the single-process sweep's
//! values (`run/sweeps.rs` explains the order). [`Alternating`](crate::Alternating) steps run
//! the same pipeline with the two stencils in turn.
//! `docs/scaling.md` explains how to choose the depth.

#[cfg(feature = "mpi")]
mod comm;
mod decomposition;

pub use decomposition::Decomposition;

#[cfg(feature = "mpi")]
pub(crate) use comm::fingerprint;
#[cfg(feature = "mpi")]
pub use comm::{Mpi, Subdomain};
