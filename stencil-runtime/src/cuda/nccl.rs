//! NCCL on GPU ranks: a communicator among them, and the ghost planes sent from one rank's
//! device buffers to its neighbours' without passing through host memory.
//!
//! The library is loaded at run time (cudarc's dynamic loading, which panics when it is
//! missing), so [`nccl_available`] is asked before anything else here.

// Only distributed runs (feature `mpi`) make communicators.
#![cfg_attr(not(feature = "mpi"), allow(dead_code))]

use std::ffi::CStr;
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use cudarc::nccl::{result, sys};

use super::Gpu;
use super::device::driver_error;
use crate::{Error, Real, Result};

/// Whether the NCCL library (`libnccl.so`) can be loaded by this process.
pub fn nccl_available() -> bool {
    // SAFETY: only opens the library (and closes it), calling nothing in it.
    unsafe { sys::is_culib_present() }
}

/// The 128 bytes that name a communicator: made by one rank, sent to the others.
pub(crate) type UniqueId = [u8; 128];

/// A new communicator's name, made on the rank that sends it to the others.
///
/// **Errors**: [`Error::Nccl`] when NCCL is missing or fails.
pub(crate) fn unique_id() -> Result<UniqueId> {
    if !nccl_available() {
        return Err(missing());
    }
    let id = result::get_uniqueid().map_err(nccl_error("making the communicator's id"))?;
    Ok(id.internal.map(|c| c as u8))
}

fn missing() -> Error {
    Error::Nccl { what: "loading the library".into(), reason: "libnccl.so was not found on the loader path".into() }
}

/// This rank's member of a communicator among the GPU ranks: the device it was made on,
/// destroyed on drop.
pub(crate) struct Nccl {
    comm: sys::ncclComm_t,
    /// The device ordinal the communicator belongs to.
    pub ordinal: usize,
    /// The device's context, kept while the communicator lives (its buffers are there).
    _ctx: Arc<cudarc::driver::CudaContext>,
}

impl Nccl {
    /// Joins communicator `id` as `rank` of `size`, on `gpu`. Collective: every rank joins
    /// with the same `id` and `size` (NCCL waits for all of them).
    ///
    /// **Errors**: [`Error::Nccl`] when NCCL is missing or fails (two ranks on one device,
    /// for example).
    pub fn join(gpu: &Gpu, id: UniqueId, rank: usize, size: usize) -> Result<Self> {
        if !nccl_available() {
            return Err(missing());
        }
        // NCCL takes the device of the calling thread's current context.
        gpu.ctx.bind_to_thread().map_err(driver_error("binding the context"))?;
        let id = sys::ncclUniqueId { internal: id.map(|b| b as std::ffi::c_char) };
        let mut comm = std::mem::MaybeUninit::uninit();
        let count = |n: usize, what: &str| {
            i32::try_from(n)
                .map_err(|_| Error::Nccl { what: "joining".into(), reason: format!("{what} {n} is too large") })
        };
        // SAFETY: the library is loaded, `comm` is written by the call before it is read, and
        // the id is the one every rank passes.
        unsafe { result::comm_init_rank(comm.as_mut_ptr(), count(size, "size")?, id, count(rank, "rank")?) }
            .map_err(nccl_error("joining the communicator"))?;
        // SAFETY: initialised by the successful call above.
        let comm = unsafe { comm.assume_init() };
        Ok(Self { comm, ordinal: gpu.ordinal, _ctx: Arc::clone(&gpu.ctx) })
    }
}

impl Drop for Nccl {
    fn drop(&mut self) {
        // SAFETY: the communicator was made by `join` and is destroyed once; a failure here
        // leaves nothing to repair.
        let _ = unsafe { result::comm_destroy(self.comm) };
    }
}

/// Device buffers of one rank's exchanges over NCCL: the planes it sends to the rank below
/// and the rank above, and those it receives from them. Every unknown's planes lie one
/// after the other, in declaration order, as in the host buffers they replace.
pub(crate) struct Link<T> {
    nccl: std::rc::Rc<Nccl>,
    /// The planes sent: on the side of the rank below, and of the rank above.
    send: [CudaSlice<T>; 2],
    /// The planes received from them.
    recv: [CudaSlice<T>; 2],
    /// Values on each side (the buffers hold at least one).
    lens: [usize; 2],
}

impl<T: Real> Link<T> {
    /// Buffers of `lower` and `upper` values a side (sent and received alike) on `gpu`'s
    /// `stream`, for exchanges over `nccl`.
    pub fn new(
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        nccl: std::rc::Rc<Nccl>,
        (lower, upper): (usize, usize),
    ) -> Result<Self> {
        let buffer = |n: usize| gpu.alloc_zeros::<T>(stream, n.max(1), "the exchange's device buffers");
        let (send, recv) = ([buffer(lower)?, buffer(upper)?], [buffer(lower)?, buffer(upper)?]);
        stream.synchronize().map_err(driver_error("waiting for the device"))?;
        Ok(Self { nccl, send, recv, lens: [lower, upper] })
    }

    /// Copies the planes `lower` and `upper` (element ranges) of every buffer of `sources`
    /// into the buffers sent, on `stream`.
    pub fn stage(
        &mut self,
        stream: &Arc<CudaStream>,
        sources: &[&CudaSlice<T>],
        lower: &Range<usize>,
        upper: &Range<usize>,
    ) -> Result<()> {
        for (k, source) in sources.iter().enumerate() {
            for (side, part) in [lower, upper].into_iter().enumerate() {
                let into = &mut self.send[side].slice_mut(k * part.len()..(k + 1) * part.len());
                stream
                    .memcpy_dtod(&source.slice(part.clone()), into)
                    .map_err(driver_error("staging the planes sent"))?;
            }
        }
        Ok(())
    }

    /// Copies the planes received (or, `sent`, those sent: putting them back) into the
    /// element ranges `lower` and `upper` of every buffer of `targets`, on `stream`.
    pub fn unstage(
        &self,
        stream: &Arc<CudaStream>,
        targets: Vec<&mut CudaSlice<T>>,
        lower: &Range<usize>,
        upper: &Range<usize>,
        sent: bool,
    ) -> Result<()> {
        let from = if sent { &self.send } else { &self.recv };
        for (k, target) in targets.into_iter().enumerate() {
            for (side, part) in [lower, upper].into_iter().enumerate() {
                let source = from[side].slice(k * part.len()..(k + 1) * part.len());
                stream
                    .memcpy_dtod(&source, &mut target.slice_mut(part.clone()))
                    .map_err(driver_error("writing the planes received"))?;
            }
        }
        Ok(())
    }

    /// Sends the staged planes to the rank below and the rank above and receives theirs,
    /// queued on `stream` (one NCCL group, so that no rank waits for another's order).
    ///
    /// Between two ranks the messages are matched in the order they are posted, so every
    /// rank posts the message travelling up axis 0 before the one travelling down, both for
    /// what it sends and what it receives: across a periodic cut on two ranks, both
    /// neighbours are the same rank.
    pub fn post(&mut self, stream: &Arc<CudaStream>, (below, above): (Option<usize>, Option<usize>)) -> Result<()> {
        let [lower_bytes, upper_bytes] = self.lens.map(|n| n * T::BYTES);
        let raw = stream.cu_stream() as sys::cudaStream_t;
        let comm = self.nccl.comm;
        let [send_lower, send_upper] = &self.send;
        let [recv_lower, recv_upper] = &mut self.recv;
        let (send_lower, _s1) = send_lower.device_ptr(stream);
        let (send_upper, _s2) = send_upper.device_ptr(stream);
        let (recv_lower, _r1) = recv_lower.device_ptr_mut(stream);
        let (recv_upper, _r2) = recv_upper.device_ptr_mut(stream);
        let to_peer = |rank: usize| rank as std::ffi::c_int;
        result::group_start().map_err(nccl_error("starting the exchange"))?;
        // SAFETY: every pointer is a live device allocation of at least the count given (in
        // bytes), held by `self` until the stream has run the exchange (the engine waits for
        // the stream before the buffers are dropped); the peers are ranks of `comm`.
        let posted = unsafe {
            let u8 = sys::ncclDataType_t::ncclUint8;
            let mut posted = Ok(result::NcclStatus::Success);
            if let Some(below) = below {
                posted = posted.and_then(|_| result::recv(recv_lower as _, lower_bytes, u8, to_peer(below), comm, raw));
            }
            if let Some(above) = above {
                posted = posted.and_then(|_| result::recv(recv_upper as _, upper_bytes, u8, to_peer(above), comm, raw));
            }
            if let Some(above) = above {
                posted = posted.and_then(|_| result::send(send_upper as _, upper_bytes, u8, to_peer(above), comm, raw));
            }
            if let Some(below) = below {
                posted = posted.and_then(|_| result::send(send_lower as _, lower_bytes, u8, to_peer(below), comm, raw));
            }
            posted
        };
        let ended = result::group_end();
        posted.map_err(nccl_error("posting the exchange"))?;
        ended.map_err(nccl_error("posting the exchange"))?;
        Ok(())
    }
}

/// Turns a NCCL error code into [`Error::Nccl`] with the library's own text.
fn nccl_error(what: &str) -> impl FnOnce(result::NcclError) -> Error + '_ {
    move |result::NcclError(code)| {
        // SAFETY: the library is loaded (the call that failed came from it) and returns a
        // static C string for every code.
        let text = unsafe { CStr::from_ptr(sys::ncclGetErrorString(code)) };
        Error::Nccl { what: what.to_owned(), reason: text.to_string_lossy().into_owned() }
    }
}

/// What a rank tells the others before NCCL is set up: whether it can take part, and which
/// device it would use.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub(crate) enum Readiness {
    Ready = 0,
    OnCpu = 1,
    NoLibrary = 2,
    NoIdentity = 3,
}

/// Why ranks that said `(readiness, device)` (in rank order) cannot use NCCL, or `None`.
pub(crate) fn why_not(ranks: &[(u64, u64)]) -> Option<String> {
    for (rank, &(readiness, _)) in ranks.iter().enumerate() {
        let why = match readiness {
            r if r == Readiness::OnCpu as u64 => "runs on the CPU",
            r if r == Readiness::NoLibrary as u64 => "cannot load libnccl.so (it is not on the loader path)",
            r if r == Readiness::NoIdentity as u64 => "could not read its GPU's identity",
            _ => continue,
        };
        return Some(format!("rank {rank} {why}"));
    }
    for (first, &(_, device)) in ranks.iter().enumerate() {
        if let Some(second) = (first + 1..ranks.len()).find(|&k| ranks[k].1 == device) {
            return Some(format!(
                "ranks {first} and {second} share one GPU (NCCL needs a GPU of its own for every rank)"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const READY: u64 = Readiness::Ready as u64;

    #[test]
    fn every_rank_on_a_gpu_of_its_own_can_use_nccl() {
        assert_eq!(why_not(&[(READY, 11), (READY, 12), (READY, 13)]), None);
    }

    #[test]
    fn the_first_rank_that_cannot_is_named() {
        let cpu = Readiness::OnCpu as u64;
        let missing = Readiness::NoLibrary as u64;
        assert_eq!(
            why_not(&[(READY, 1), (missing, 0), (cpu, 0)]).unwrap(),
            "rank 1 cannot load libnccl.so (it is not on the loader path)"
        );
        assert_eq!(why_not(&[(READY, 1), (READY, 2), (cpu, 0)]).unwrap(), "rank 2 runs on the CPU");
    }

    #[test]
    fn ranks_sharing_a_gpu_cannot() {
        let reason = why_not(&[(READY, 7), (READY, 8), (READY, 7), (READY, 8)]).unwrap();
        assert!(reason.starts_with("ranks 0 and 2 share one GPU"), "{reason}");
    }
}
