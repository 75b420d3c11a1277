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
//! values (`run/sweeps/` explains the order). [`Alternating`](crate::Alternating) steps run
//! the same pipeline with the two stencils in turn.
//! `docs/scaling.md` explains how to choose the depth.
//!
//! On GPU ranks the ghost planes go from one rank's device memory to its neighbour's over
//! NCCL (point to point, the communicator set up over MPI) when every rank has a GPU of its
//! own and `libnccl.so` loads; otherwise through page-locked host memory and MPI
//! ([`Transport`]).

#[cfg(feature = "mpi")]
mod comm;
mod decomposition;
#[cfg(feature = "mpi")]
mod nccl;

pub use decomposition::Decomposition;

/// How the ranks of a distributed run on GPUs move their ghost planes (CPU ranks always
/// use MPI). Set it with `Subdomain::transport` (feature `mpi`).
///
/// Either way the planes are sent while the middle of the rank's part is updated, and the
/// results are the same, bit for bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Transport {
    /// NCCL when every rank runs on a GPU of its own and every rank can load `libnccl.so`;
    /// else through the host, with a log message (`info`) that says why.
    #[default]
    Auto,
    /// Through the host: each rank copies the planes it sends to page-locked host buffers,
    /// MPI carries them, and the receiving rank copies them to its device.
    Host,
    /// Device to device over NCCL (`ncclSend`/`ncclRecv`, over NVLink or PCIe within a
    /// machine, the network between machines). An error ([`Error::Nccl`](crate::Error::Nccl))
    /// on every rank when NCCL cannot be used: a rank on the CPU, two ranks sharing a GPU, or
    /// the library missing on some rank.
    Nccl,
}

#[cfg(feature = "mpi")]
pub(crate) use comm::fingerprint;
#[cfg(feature = "mpi")]
pub use comm::{Mpi, Subdomain};
