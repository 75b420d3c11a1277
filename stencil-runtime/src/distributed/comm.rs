//! The MPI side of a distributed run (rsmpi over the system's MPI library): start-up, the
//! agreement every rank reaches before the first iteration, the exchange of ghost planes,
//! the reduction of the residual, and gathering a result.

use std::ops::Deref;

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use super::Decomposition;
use crate::plan::planes::{Halo, Planes};
use crate::run::peers::Peers;
use crate::{Error, Grid, Real, Result, Stencil};

/// The MPI environment of this process: initialised by [`Mpi::init`], finalised on drop.
///
/// Create it once, first thing in `main`, and keep it alive while any distributed run
/// goes on.
pub struct Mpi {
    // The communicators are dropped before the universe, which finalises MPI.
    pub(super) world: SimpleCommunicator,
    node_rank: usize,
    node_size: usize,
    /// The NCCL communicator of the GPU runs so far, kept for the next one on that device.
    pub(super) nccl: std::cell::RefCell<Option<std::rc::Rc<crate::cuda::nccl::Nccl>>>,
    _universe: mpi::environment::Universe,
}

impl Mpi {
    /// Initialises MPI (`MPI_Init`): started by `mpirun -np K program`, this process is one
    /// of K ranks; started alone, it is the only rank.
    ///
    /// **Errors**: [`Error::Mpi`] when MPI was already initialised in this process.
    pub fn init() -> Result<Self> {
        let universe = mpi::initialize().ok_or_else(|| Error::Mpi {
            reason: "MPI is already initialised in this process: call `Mpi::init` once".into(),
        })?;
        let world = universe.world();
        let node = world.split_shared(world.rank());
        let (node_rank, node_size) = (node.rank() as usize, node.size() as usize);
        Ok(Self { world, node_rank, node_size, nccl: Default::default(), _universe: universe })
    }

    /// This process's rank, 0 to [`size`](Self::size) − 1.
    pub fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.world.size() as usize
    }

    /// This process's rank among those on the same machine: a distributed run on
    /// `Backend::Auto` uses GPU `node_rank mod (GPUs on the machine)`.
    pub fn node_rank(&self) -> usize {
        self.node_rank
    }

    /// The number of ranks on this machine.
    pub fn node_size(&self) -> usize {
        self.node_size
    }

    /// The largest of every rank's `value` (`MPI_Allreduce` with `MPI_MAX`). Collective.
    pub fn max(&self, value: f64) -> f64 {
        let mut result = 0.0;
        self.world.all_reduce_into(&value, &mut result, SystemOperation::max());
        result
    }

    /// The sum of every rank's `value` (`MPI_Allreduce` with `MPI_SUM`). Collective.
    pub fn sum(&self, value: f64) -> f64 {
        let mut result = 0.0;
        self.world.all_reduce_into(&value, &mut result, SystemOperation::sum());
        result
    }

    /// Cuts a grid of `global` shape for stencil `S` among all ranks, with ghost planes
    /// exchanged every `depth` iterations (see [`Decomposition`]). Collective: every rank
    /// calls it, and every rank gets the same error if the ranks gave different shapes or
    /// depths, or if the cut cannot be made.
    pub fn split<S: Stencil<N>, const N: usize>(
        &self,
        _stencil: &S,
        global: [usize; N],
        depth: usize,
    ) -> Result<Subdomain<'_, N>> {
        let mut items = vec![("the global shape", fingerprint(&global)), ("the halo depth", depth as u64)];
        items.push(("the stencil", fingerprint(&(S::META.name, S::CUDA_SOURCE))));
        let cut = Decomposition::for_stencil::<S>(global, depth, self.size(), self.rank());
        let cut = self.agree(cut, &items)?;
        Ok(Subdomain { mpi: self, cut, transport: super::Transport::Auto })
    }

    /// The collective check at the start of a distributed run: every rank brings its own
    /// outcome so far and a fingerprint of the problem as `(what, hash)` items. Every rank
    /// returns an error if any rank failed (its own error for the rank that failed,
    /// [`Error::RankFailed`] for the others) or if any item differs between ranks
    /// ([`Error::RanksDisagree`]); else its own value.
    pub(crate) fn agree<X>(&self, outcome: Result<X>, items: &[(&str, u64)]) -> Result<X> {
        const MESSAGE: usize = 480;
        let size = self.size();
        let mut mine = vec![0u8; MESSAGE];
        if let Err(error) = &outcome {
            // A failed rank sends its message (cut to fit, on a character boundary).
            let text = error.to_string();
            let mut end = text.len().min(MESSAGE - 1);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            mine[0] = 1;
            mine[1..=end].copy_from_slice(&text.as_bytes()[..end]);
        }
        let mut messages = vec![0u8; MESSAGE * size];
        self.world.all_gather_into(&mine[..], &mut messages[..]);
        if let Some(rank) = (0..size).find(|&k| messages[k * MESSAGE] == 1) {
            return match outcome {
                Err(error) => Err(error),
                Ok(_) => {
                    let text = &messages[rank * MESSAGE + 1..(rank + 1) * MESSAGE];
                    let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
                    Err(Error::RankFailed { rank, message: String::from_utf8_lossy(&text[..end]).into_owned() })
                }
            };
        }
        let values: Vec<u64> = items.iter().map(|&(_, v)| v).collect();
        let mut all = vec![0u64; values.len() * size];
        self.world.all_gather_into(&values[..], &mut all[..]);
        for (i, &(what, _)) in items.iter().enumerate() {
            let differ: Vec<usize> = (1..size).filter(|&k| all[k * values.len() + i] != all[i]).collect();
            if !differ.is_empty() {
                let list = differ.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(", ");
                return Err(Error::RanksDisagree {
                    what: what.to_owned(),
                    detail: format!("rank{} {list} differ{} from rank 0", plural(differ.len()), verb_s(differ.len())),
                });
            }
        }
        outcome
    }

    /// `Ok` on every rank when every rank's `outcome` is `Ok`; else the errors of
    /// [`agree`](Self::agree).
    pub(crate) fn all_ok<X>(&self, outcome: Result<X>) -> Result<X> {
        self.agree(outcome, &[])
    }

    /// Rank `root` receives `planes` of every rank's grid into `global`; the others send
    /// theirs.
    fn gather_planes<T: Real, const N: usize>(
        &self,
        cut: &Decomposition<N>,
        local: &Grid<T, N>,
        root: usize,
        global: Option<&mut Grid<T, N>>,
    ) {
        const TAG: i32 = 1 << 21;
        let plane = cut.plane_len();
        // Every rank's contribution: its own planes, with the boundary planes at the ends.
        let part = |rank: usize| {
            let own = cut.own_of(rank);
            let start = if rank == 0 { 0 } else { own.start };
            let end = if rank + 1 == cut.ranks() { cut.global_shape()[0] } else { own.end };
            start..end
        };
        let mine = part(cut.rank());
        let offset = cut.local().start;
        let data = &local.as_slice()[(mine.start - offset) * plane..(mine.end - offset) * plane];
        match global {
            Some(global) => {
                for rank in 0..cut.ranks() {
                    let planes = part(rank);
                    let target = &mut global.as_mut_slice()[planes.start * plane..planes.end * plane];
                    if rank == root {
                        target.copy_from_slice(data);
                        continue;
                    }
                    let source = self.world.process_at_rank(rank as i32);
                    for (piece, chunk) in pieces_mut(target).enumerate() {
                        source.receive_into_with_tag(chunk, TAG + piece as i32);
                    }
                }
            }
            None => {
                let target = self.world.process_at_rank(root as i32);
                for (piece, chunk) in pieces(data).enumerate() {
                    target.send_with_tag(chunk, TAG + piece as i32);
                }
            }
        }
    }
}

impl Peers for Mpi {
    /// The residual check reduced over all ranks: (max of `max`, sum of `sum`, smallest
    /// `first_bad`, and the value at that point: each rank passes its own non-finite value
    /// or 0).
    fn reduce(&self, max: f64, sum: f64, first_bad: u64, bad_value: f64) -> (f64, f64, u64, f64) {
        let (mut global_max, mut global_sum, mut global_bad) = (0.0f64, 0.0f64, 0u64);
        self.world.all_reduce_into(&max, &mut global_max, SystemOperation::max());
        self.world.all_reduce_into(&sum, &mut global_sum, SystemOperation::sum());
        self.world.all_reduce_into(&first_bad, &mut global_bad, SystemOperation::min());
        let mine = if first_bad == global_bad && first_bad != u64::MAX { bad_value } else { 0.0 };
        let mut value = 0.0f64;
        self.world.all_reduce_into(&mine, &mut value, SystemOperation::sum());
        (global_max, global_sum, global_bad, value)
    }

    /// Sends `send.lower` to rank `below` and `send.upper` to rank `above`, receives their
    /// planes into `recv`, and runs `during` while the messages are in flight (non-blocking
    /// sends and receives). Every request is completed before it returns, also when
    /// `during` fails. A message is tagged with its direction along axis 0, not with the
    /// ranks' order: across a periodic cut the first rank's neighbour below is the last one,
    /// and on two ranks both neighbours are the same rank.
    fn exchange<T: Real>(
        &self,
        neighbours: (Option<usize>, Option<usize>),
        send: &Halo<T>,
        recv: &mut Halo<T>,
        during: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let (below, above) = neighbours;
        let (mut sends, mut receives) = (Vec::new(), Vec::new());
        if let Some(below) = below {
            receives.push((below, UP, &mut recv.lower[..]));
            sends.push((below, DOWN, &send.lower[..]));
        }
        if let Some(above) = above {
            receives.push((above, DOWN, &mut recv.upper[..]));
            sends.push((above, UP, &send.upper[..]));
        }
        self.post_tagged(&sends, &mut receives, during)
    }

    /// Receives into every `(rank, side, buffer)` of `receives`, sends every
    /// `(rank, side, buffer)` of `sends`, and runs `during` while the messages are in flight
    /// (non-blocking sends and receives, posted in that order). Every request is completed
    /// before it returns, also when `during` fails. Messages between two ranks travelling one
    /// way along axis 0 are received in the order they were sent.
    fn post<T: Real>(
        &self,
        sends: &[(usize, usize, &[T])],
        receives: &mut [(usize, usize, &mut [T])],
        during: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        // Tagged with the direction of travel along axis 0: a message to the neighbour above
        // goes up, one from the neighbour below comes up (across a periodic cut on two ranks,
        // both neighbours are the same rank).
        let sends: Vec<_> = sends.iter().map(|&(to, side, b)| (to, if side == 1 { UP } else { DOWN }, b)).collect();
        let mut receives: Vec<_> =
            receives.iter_mut().map(|(from, side, b)| (*from, if *side == 0 { UP } else { DOWN }, &mut **b)).collect();
        self.post_tagged(&sends, &mut receives, during)
    }

    fn max(&self, value: f64) -> f64 {
        Mpi::max(self, value)
    }

    fn all_ok<X>(&self, outcome: Result<X>) -> Result<X> {
        Mpi::all_ok(self, outcome)
    }

    fn rank_and_size(&self) -> Option<(usize, usize)> {
        Some((self.rank(), self.size()))
    }

    fn device_link(
        &self,
        gpu: Option<&crate::cuda::Gpu>,
        transport: super::Transport,
    ) -> Result<Option<std::rc::Rc<crate::cuda::nccl::Nccl>>> {
        self.nccl_link(gpu, transport)
    }
}

/// Tags of the messages travelling up axis 0 (to a rank above) and down it; the piece of a
/// message cut to fit MPI's `int` counts is added to them.
const UP: i32 = 0;
const DOWN: i32 = 1 << 20;

impl Mpi {
    /// Receives into every `(rank, tag, buffer)` of `receives`, sends every
    /// `(rank, tag, buffer)` of `sends`, and runs `during` while they are in flight; every
    /// request is completed before it returns, also when `during` fails.
    fn post_tagged<T: Real>(
        &self,
        sends: &[(usize, i32, &[T])],
        receives: &mut [(usize, i32, &mut [T])],
        during: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let world = &self.world;
        mpi::request::scope(|scope| {
            let mut requests = Vec::new();
            for (from, tag, buffer) in receives.iter_mut() {
                let rank = world.process_at_rank(*from as i32);
                for (piece, part) in pieces_mut(buffer).enumerate() {
                    requests.push(rank.immediate_receive_into_with_tag(scope, part, *tag + piece as i32));
                }
            }
            for &(to, tag, buffer) in sends {
                let rank = world.process_at_rank(to as i32);
                for (piece, part) in pieces(buffer).enumerate() {
                    requests.push(rank.immediate_send_with_tag(scope, part, tag + piece as i32));
                }
            }
            let outcome = during();
            for request in requests {
                request.wait();
            }
            outcome
        })
    }
}

/// One rank's part of a grid decomposed among the ranks of an [`Mpi`] environment: its
/// [`Decomposition`] (through `Deref`) and the communicator its runs exchange planes
/// over. Give it to [`Solver::distributed`](crate::Solver::distributed).
pub struct Subdomain<'m, const N: usize> {
    mpi: &'m Mpi,
    cut: Decomposition<N>,
    transport: super::Transport,
}

impl<'m, const N: usize> Subdomain<'m, N> {
    /// This subdomain with its ghost planes moved by `transport` on GPU ranks (the default
    /// is [`Transport::Auto`](super::Transport::Auto): NCCL where it can be used). Every rank
    /// must choose the same.
    pub fn with_transport(mut self, transport: super::Transport) -> Self {
        self.transport = transport;
        self
    }

    /// How GPU ranks move their ghost planes.
    pub fn transport(&self) -> super::Transport {
        self.transport
    }

    /// This rank's planes: its own, its ghost planes and its neighbours.
    pub(crate) fn planes(&self) -> Planes {
        Planes {
            count: self.local().len(),
            radius: self.radius(),
            ghost: self.ghost(),
            wraps: (false, false),
            depth: self.depth(),
            own: self.own_local(),
            below: self.below(),
            above: self.above(),
            origin: self.local().start,
        }
    }

    /// This rank's planes for a run with `boundaries`: with a periodic axis 0 on several
    /// ranks, the first rank's neighbour below is the last one and the last rank's neighbour
    /// above the first, so that the exchange fills the outer layers of axis 0. Those layers
    /// are one radius wide, so that every rank then exchanges at every iteration (depth 1),
    /// whatever the split's depth; the other cuts still carry all their ghost planes, so that
    /// every local plane holds the iterate.
    pub(crate) fn planes_for(&self, boundaries: &crate::Boundaries<N>) -> Planes {
        let mut planes = self.planes();
        let last = self.ranks() - 1;
        if boundaries.is_periodic(0) && last > 0 {
            if self.rank() == 0 {
                planes.below = Some(last);
                planes.wraps.0 = true;
            }
            if self.rank() == last {
                planes.above = Some(0);
                planes.wraps.1 = true;
            }
            planes.depth = 1;
        }
        planes
    }

    /// The MPI environment.
    pub fn mpi(&self) -> &'m Mpi {
        self.mpi
    }

    /// The cut.
    pub fn decomposition(&self) -> &Decomposition<N> {
        &self.cut
    }

    /// Collects every rank's own planes (and the boundary planes) of `local` into the
    /// global grid on rank `root`, which gets `Some`; the other ranks get `None`.
    /// Collective: every rank calls it.
    ///
    /// **Errors**: [`Error::ShapeMismatch`] (on every rank, collectively) when a rank's grid
    /// does not have its local shape; [`Error::InvalidDecomposition`] for a `root` that is
    /// not a rank.
    pub fn gather<T: Real>(&self, local: &Grid<T, N>, root: usize) -> Result<Option<Grid<T, N>>> {
        if root >= self.cut.ranks() {
            return Err(Error::InvalidDecomposition {
                reason: format!("rank {root} cannot gather: there are {} ranks", self.cut.ranks()),
            });
        }
        let checked = if local.shape() == self.cut.local_shape() {
            Ok(())
        } else {
            Err(Error::ShapeMismatch {
                field: format!("rank {}'s grid", self.cut.rank()),
                expected: self.cut.local_shape().to_vec(),
                found: local.shape().to_vec(),
            })
        };
        let (mut global, checked) = match (self.cut.rank() == root).then(|| Grid::zeros(self.cut.global_shape())) {
            Some(Err(error)) => (None, Err(error)),
            Some(Ok(grid)) => (Some(grid), checked),
            None => (None, checked),
        };
        self.mpi.all_ok(checked)?;
        self.mpi.gather_planes(&self.cut, local, root, global.as_mut());
        Ok(global)
    }
}

impl<const N: usize> Deref for Subdomain<'_, N> {
    type Target = Decomposition<N>;

    fn deref(&self) -> &Decomposition<N> {
        &self.cut
    }
}

/// A stable 64-bit fingerprint of a value, the same in every process of one build.
pub(crate) fn fingerprint(value: &impl std::hash::Hash) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(value)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn verb_s(n: usize) -> &'static str {
    if n == 1 { "s" } else { "" }
}

/// Messages are cut into pieces of at most 2³⁰ bytes: MPI counts are `int`s.
const PIECE_BYTES: usize = 1 << 30;

fn pieces<T: Real>(data: &[T]) -> impl Iterator<Item = &[u8]> {
    // SAFETY: `T` is `f32` or `f64` (the trait is sealed): plain bytes, no padding, and a
    // byte view of the same memory has no alignment requirement.
    let bytes = unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) };
    bytes.chunks(PIECE_BYTES)
}

fn pieces_mut<T: Real>(data: &mut [T]) -> impl Iterator<Item = &mut [u8]> {
    // SAFETY: as in `pieces`; every byte pattern is a valid `f32` or `f64`, so writing bytes
    // into the slice cannot make an invalid value.
    let bytes = unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(data)) };
    bytes.chunks_mut(PIECE_BYTES)
}
