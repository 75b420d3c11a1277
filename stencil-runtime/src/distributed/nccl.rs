//! NCCL set up over MPI: whether the GPU ranks of a run can send their ghost planes device to
//! device, and the communicator they send them over (kept from one run to the next).

use std::rc::Rc;

use mpi::traits::*;

use super::{Mpi, Transport};
use crate::cuda::Gpu;
use crate::cuda::nccl::{Nccl, Readiness, UniqueId, nccl_available, unique_id, why_not};
use crate::{Error, Result};

impl Mpi {
    /// The NCCL communicator of this rank's engine on `gpu` (`None`: on the CPU) under
    /// `transport`, or `None` when the ghost planes go through the host. Collective: every
    /// rank reaches the same outcome, and under [`Transport::Nccl`] the same error when some
    /// rank cannot use NCCL.
    pub(crate) fn nccl_link(&self, gpu: Option<&Gpu>, transport: Transport) -> Result<Option<Rc<Nccl>>> {
        if transport == Transport::Host || self.size() < 2 {
            return Ok(None);
        }
        let gpu = match (self.why_not_nccl(gpu), gpu) {
            (None, Some(gpu)) => gpu,
            (reason, _) => {
                let reason = reason.unwrap_or_else(|| "this rank has no GPU".into());
                if transport == Transport::Nccl {
                    return Err(Error::Nccl { what: "choosing how the ghost planes travel".into(), reason });
                }
                // Said once, and quietly where this rank has no GPU to send from.
                match (self.rank(), gpu) {
                    (0, Some(_)) => log::info!("ghost planes go through host memory, not over NCCL: {reason}"),
                    (0, None) => log::debug!("ghost planes go through MPI: {reason}"),
                    _ => {}
                }
                return Ok(None);
            }
        };
        // The communicator of the last run, when every rank's is on the device it uses now.
        let kept = self.nccl.borrow().clone().filter(|nccl| nccl.ordinal == gpu.ordinal);
        let mut all_kept = 0u64;
        self.world.all_reduce_into(&u64::from(kept.is_none()), &mut all_kept, mpi::collective::SystemOperation::sum());
        if all_kept == 0 {
            return Ok(kept);
        }
        drop(kept);
        self.nccl.replace(None);
        let id = if self.rank() == 0 { unique_id() } else { Ok([0; 128]) };
        let mut id: UniqueId = self.all_ok(id)?;
        self.world.process_at_rank(0).broadcast_into(&mut id[..]);
        let nccl = self.all_ok(Nccl::join(gpu, id, self.rank(), self.size()).map(Rc::new))?;
        if self.rank() == 0 {
            log::info!("ghost planes go device to device over NCCL ({} ranks)", self.size());
        }
        self.nccl.replace(Some(Rc::clone(&nccl)));
        Ok(Some(nccl))
    }

    /// Why the ranks cannot use NCCL (the same text on every rank), or `None` when every rank
    /// runs on a GPU of its own and can load the library. Collective.
    fn why_not_nccl(&self, gpu: Option<&Gpu>) -> Option<String> {
        let (readiness, device) = match gpu {
            None => (Readiness::OnCpu, 0),
            Some(_) if !nccl_available() => (Readiness::NoLibrary, 0),
            Some(gpu) => match gpu.ctx.uuid() {
                // Which GPU of which machine.
                Ok(uuid) => {
                    (Readiness::Ready, super::fingerprint(&(mpi::environment::processor_name().ok(), uuid.bytes)))
                }
                Err(_) => (Readiness::NoIdentity, 0),
            },
        };
        let mut all = vec![0u64; 2 * self.size()];
        self.world.all_gather_into(&[readiness as u64, device][..], &mut all[..]);
        why_not(&all.chunks(2).map(|pair| (pair[0], pair[1])).collect::<Vec<_>>())
    }
}
