//! The other processes of a run, as the loop sees them: none in one process ([`Alone`]), the
//! MPI ranks in a distributed run (`distributed::Mpi`).

use std::rc::Rc;

use crate::cuda::Gpu;
use crate::cuda::nccl::Nccl;
use crate::distributed::Transport;
use crate::plan::planes::{Halo, Planes};
use crate::{Real, Result};

/// What the loop asks of the processes a run is spread over.
pub(crate) trait Peers {
    /// Sends `send.lower` to rank `below` and `send.upper` to rank `above`, receives their
    /// planes into `recv`, and runs `during` while the messages are in flight. Every message
    /// is complete when it returns, also when `during` fails.
    fn exchange<T: Real>(
        &self,
        neighbours: (Option<usize>, Option<usize>),
        send: &Halo<T>,
        recv: &mut Halo<T>,
        during: impl FnOnce() -> Result<()>,
    ) -> Result<()>;

    /// Receives into every `(rank, side, buffer)` of `receives`, sends every
    /// `(rank, side, buffer)` of `sends`, and runs `during` while they are in flight. `side` is
    /// the side of this rank's planes the neighbour is on (0: below on axis 0, 1: above; across
    /// a periodic cut the first rank's neighbour below is the last one). Messages between two
    /// ranks travelling one way along axis 0 arrive in the order they were sent.
    fn post<T: Real>(
        &self,
        sends: &[(usize, usize, &[T])],
        receives: &mut [(usize, usize, &mut [T])],
        during: impl FnOnce() -> Result<()>,
    ) -> Result<()>;

    /// A check reduced over every process: (max of `max`, sum of `sum`, smallest
    /// `first_bad`, the value at that point: each process passes its own non-finite value).
    fn reduce(&self, max: f64, sum: f64, first_bad: u64, bad_value: f64) -> (f64, f64, u64, f64);

    /// The largest `value` of any process (the slowest one's time).
    fn max(&self, value: f64) -> f64;

    /// `Ok` on every process when every process's `outcome` is `Ok`; else an error on every
    /// process (the failing ones' own), so that none waits for another that stopped.
    fn all_ok<X>(&self, outcome: Result<X>) -> Result<X>;

    /// How the report names this process ("mpi rank 2 of 4"), if it is one of several.
    fn rank_and_size(&self) -> Option<(usize, usize)>;

    /// The NCCL communicator over which this process's engine on `gpu` (`None`: on the CPU)
    /// sends its ghost planes device to device under `transport`, or `None` when they go
    /// through the host. Collective: the same outcome on every process.
    fn device_link(&self, gpu: Option<&Gpu>, transport: Transport) -> Result<Option<Rc<Nccl>>>;
}

/// One process: no message is ever sent, and a reduction is the value itself.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Alone;

impl Peers for Alone {
    fn exchange<T: Real>(
        &self,
        _neighbours: (Option<usize>, Option<usize>),
        _send: &Halo<T>,
        _recv: &mut Halo<T>,
        during: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        during()
    }

    fn post<T: Real>(
        &self,
        _sends: &[(usize, usize, &[T])],
        _receives: &mut [(usize, usize, &mut [T])],
        during: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        during()
    }

    fn reduce(&self, max: f64, sum: f64, first_bad: u64, bad_value: f64) -> (f64, f64, u64, f64) {
        (max, sum, first_bad, bad_value)
    }

    fn max(&self, value: f64) -> f64 {
        value
    }

    fn all_ok<X>(&self, outcome: Result<X>) -> Result<X> {
        outcome
    }

    fn rank_and_size(&self) -> Option<(usize, usize)> {
        None
    }

    fn device_link(&self, _gpu: Option<&Gpu>, _transport: Transport) -> Result<Option<Rc<Nccl>>> {
        Ok(None)
    }
}

/// Where a run's loop works: the processes it is spread over, this one's planes, the whole
/// grid's shape, and how GPU processes move their ghost planes.
pub(crate) struct Place<'p, P, const N: usize> {
    pub peers: &'p P,
    pub planes: Planes,
    pub global: [usize; N],
    pub transport: Transport,
}

impl<P, const N: usize> Place<'_, P, N> {
    /// Values in one plane of the grid.
    pub fn plane_len(&self) -> usize {
        self.global[1..].iter().product()
    }
}
