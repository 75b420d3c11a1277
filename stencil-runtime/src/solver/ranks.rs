//! A `Solver` on MPI ranks (feature `mpi`): the checks every rank makes before a
//! distributed run, the agreement between ranks, and the run on this rank's part.

use super::{Solver, options_for};
use crate::checkpoint::Start;
use crate::plan::planes::Planes;
use crate::run::job::{Job, Observer};
use crate::run::peers::Place;
use crate::stop::StopRule;
use crate::{Backend, Boundaries, Error, Grid, Real, Report, Result, Schedule, Stencil};

impl<'a, S: Stencil<N>, T: Real, const N: usize> Solver<'a, S, T, N> {
    /// Runs on this rank's part of a grid decomposed among MPI ranks (feature `mpi`): `u`
    /// and every input are this rank's local grids (shape
    /// [`local_shape`](crate::distributed::Decomposition::local_shape)), and every rank runs
    /// the same solver. The iterates of the own planes are those of a single-process `Plain`
    /// run, bit for bit; the residual is reduced over all ranks, so every rank stops at the
    /// same iteration; on return every local plane holds the last iterate.
    ///
    /// Each rank runs `Plain` (also for `Auto`: the deep halos are the pyramid between
    /// ranks), `Tiled`, or an exact `Hierarchical` schedule (halo ≥ sub · radius). Its cycles
    /// end at every exchange and the iteration of a check is a plain one, so a cycle is at
    /// most `depth` iterations long: choose a depth of at least `sub`. With `OutOfCore` the
    /// rank's grid stays in host memory and each pass of `min(height, depth)` iterations at
    /// most runs over slabs of its own planes (checked once per pass by default); on a GPU
    /// the exchange of the last pass's planes overlaps the slabs that read no ghost plane,
    /// which the pass runs first. An inexact hierarchical schedule (halo < sub · radius) computes on
    /// each rank the whole grid's tiles that meet its planes, so its result equals one
    /// process's with the same schedule; it needs `depth · radius ≥ tile − 1 + halo` (ghost
    /// planes that reach across a tile and its halo). Skewed slabs (`Inner::Skewed`) run too:
    /// a pass's first and last slabs shrink over the ghost planes as a pyramid does, so that
    /// only the own planes are written back, each computed once per iteration.
    ///
    /// A `sweep(…)` stencil runs `Plain` (the sequential sweep) or `Wavefront` (also for
    /// `Auto`) on each rank, and its sweeps are passed from rank to rank in the sweep's
    /// direction along axis 0, `radius` planes at a time whatever the depth: a rank starts
    /// sweep k when the rank before it has finished it, while that rank starts sweep k + 1.
    /// The ranks work at once only between checks (every check waits for every rank), so
    /// choose a period of many times the number of ranks (the default, 100, is). Across a
    /// periodic axis 0 they sweep one after another (a sweep's first rank reads the planes
    /// the last rank sweeps last in the sweep before).
    /// `Backend::Auto` uses GPU `node_rank mod count` when GPUs are
    /// usable. Checkpoints are not written by distributed runs. Every problem the run could
    /// find in its input, on any rank, and any difference between the ranks' problems
    /// (stencil, shapes, parameters, stopping rule, schedule, backend) is an error on every
    /// rank before the first iteration: no rank waits for another that has stopped. A device
    /// error on one rank after the start is returned on that rank only, and the others wait
    /// for it: end the job from there (`docs/guide.md`, "Distributed runs").
    pub fn distributed(mut self, subdomain: &'a crate::distributed::Subdomain<'a, N>) -> Self {
        self.distributed = Some(subdomain);
        self
    }

    /// The run on this rank's part `u` of the first unknown and `more` of a system's others.
    pub(super) fn run_distributed(
        &mut self,
        subdomain: &'a crate::distributed::Subdomain<'a, N>,
        u: &mut Grid<T, N>,
        more: Vec<&mut Grid<T, N>>,
    ) -> Result<Report> {
        use crate::distributed::fingerprint;
        let prepared = self.prepare_distributed(subdomain, u, &more);
        let mut names: Vec<&str> = self.inputs.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        let params = prepared.as_ref().ok().map(|p| param_bits::<S, T, N>(&p.4));
        let tolerance = self.tolerance.map(|t| format!("{t:?}"));
        let items = [
            ("the stencil", fingerprint(&(S::META.name, S::CUDA_SOURCE))),
            ("the precision", T::BYTES as u64),
            ("the input fields", fingerprint(&names)),
            ("the scalar parameters", fingerprint(&params)),
            ("the stopping rule", fingerprint(&(self.max_iterations, tolerance, self.check_every))),
            ("the observer's period", fingerprint(&self.observer.as_ref().map(|(every, _)| *every))),
            ("the schedule", fingerprint(&self.schedule.to_string())),
            ("the boundary conditions", fingerprint(&self.boundaries)),
            // The kind of backend: each rank may use its own device.
            ("the backend", fingerprint(&(backend_kind(self.backend), self.cuda))),
            ("the transport of the ghost planes", fingerprint(&subdomain.transport())),
        ];
        let (schedule, stop, device, inputs, params) = subdomain.mpi().agree(prepared, &items)?;
        let job: Job<'_, '_, S, T, N> = Job {
            inputs,
            params,
            schedule,
            boundaries: self.boundaries,
            stop,
            progress: self.progress.as_mut(),
            start: Start::default(),
            checkpoint: None,
            fail_after_slabs: None,
            on_slab: None,
            model_chooses: false,
            check_every_given: self.check_every.is_some(),
            held: None,
            observer: self.observer.as_mut().map(|(every, callback)| Observer { every: *every, callback }),
            more,
        };
        let planes = subdomain.planes_for(&self.boundaries);
        let place = Place {
            peers: subdomain.mpi(),
            planes,
            global: subdomain.global_shape(),
            transport: subdomain.transport(),
        };
        crate::dispatch::run(job, u, place, device, options_for(self.cuda, device)?)
    }

    /// A hierarchical schedule `given` on each rank of `subdomain` (`wraps`: across a
    /// periodic cut of axis 0), as it runs there, or why it cannot.
    fn cycles_across_ranks(
        &self,
        given: Schedule,
        subdomain: &crate::distributed::Subdomain<'_, N>,
        wraps: bool,
    ) -> Result<Schedule> {
        let meta = S::META;
        let Schedule::Hierarchical { tile, halo, sub } = given else { return Ok(given) };
        let invalid = |reason: &str| Error::InvalidSchedule {
            schedule: self.schedule.to_string(),
            stencil: meta.name,
            reason: reason.to_owned(),
        };
        // A tile (and an inexact cycle's halo) beyond the grid computes what the grid's
        // own width would, as in one process, and keeps the tiles' arithmetic in range;
        // an exact cycle's halo stays as given, since it makes the cycle exact.
        let largest = subdomain.global_shape().into_iter().max().unwrap_or(1);
        let halo = if given.is_exact_blocking(meta) { halo } else { halo.min(largest) };
        let schedule = Schedule::Hierarchical { tile: tile.min(largest), halo, sub };
        // An inexact cycle's tiles across a cut are computed by both ranks, which read
        // a tile less one and a halo beyond the planes they update.
        let reach = crate::run::tiles::reach(meta.radius[0], tile, halo);
        let radius = meta.radius[0];
        if !schedule.is_exact_blocking(meta) && wraps && radius < reach {
            return Err(invalid(&format!(
                "an inexact hierarchical cycle computes the whole grid's tiles that meet a rank's planes, \
                 which reads tile − 1 + halo = {reach} planes beyond them, and across the periodic cut of \
                 axis 0 the first rank has the outer layer of {radius} planes below it: make another axis \
                 the periodic one, or use an exact schedule (halo ≥ sub · radius)"
            )));
        }
        if !schedule.is_exact_blocking(meta) && subdomain.ghost() < reach {
            return Err(invalid(&format!(
                "an inexact hierarchical cycle computes the whole grid's tiles that meet a rank's planes, \
                 which reads tile − 1 + halo = {reach} planes beyond them; the split has {} ghost planes \
                 (depth {} · radius {radius}): split with depth ≥ {}",
                subdomain.ghost(),
                subdomain.depth(),
                reach.div_ceil(radius)
            )));
        }
        Ok(schedule)
    }

    /// This rank's checks before a distributed run: the stopping rule, the device, the
    /// inputs and the parameters, or the first problem found.
    #[allow(clippy::type_complexity)]
    fn prepare_distributed(
        &self,
        subdomain: &crate::distributed::Subdomain<'_, N>,
        u: &Grid<T, N>,
        more: &[&mut Grid<T, N>],
    ) -> Result<(Schedule, StopRule, Option<usize>, Vec<Option<&'a [T]>>, S::Params<T>)> {
        let meta = S::META;
        let invalid = |reason: &str| Error::InvalidSchedule {
            schedule: self.schedule.to_string(),
            stencil: meta.name,
            reason: reason.to_owned(),
        };
        // Across a periodic cut of axis 0 every rank exchanges at every iteration.
        let planes = subdomain.planes_for(&self.boundaries);
        let wraps = planes.wraps.0 || planes.wraps.1;
        if wraps && meta.is_sweep() && subdomain.rank() == 0 {
            log::warn!(
                "`{}`: axis 0 is periodic and cut among the ranks: each sweep's first rank reads the planes the \
                 last rank sweeps last in the sweep before, so the ranks sweep one after another (the grid is \
                 spread over them, the work is not)",
                meta.name
            );
        } else if wraps && subdomain.depth() > 1 && subdomain.rank() == 0 {
            log::warn!(
                "`{}`: axis 0 is periodic and cut among the ranks, so the ranks exchange planes at every iteration \
                 (as at depth 1, not {}): the last rank's planes reach the first through the outer layer, one \
                 radius wide",
                meta.name,
                subdomain.depth()
            );
        }
        // `Auto` runs `Plain` (the deep halos are the pyramid between ranks), or for a sweep
        // stencil a wavefront with the default tile on each rank.
        let schedule = match self.schedule.resolve(meta)? {
            schedule @ (Schedule::Plain | Schedule::Tiled | Schedule::Wavefront { .. }) => schedule,
            given @ Schedule::Hierarchical { .. } => self.cycles_across_ranks(given, subdomain, wraps)?,
            Schedule::Streaming { tile, sub } => {
                let largest = subdomain.global_shape().into_iter().max().unwrap_or(1);
                Schedule::Streaming { tile: tile.min(largest), sub }
            }
            schedule @ Schedule::OutOfCore { .. } => schedule,
            _ => {
                return Err(invalid(
                    "distributed runs take `Plain`, `Tiled`, `Hierarchical`, `Streaming` or `OutOfCore` on each rank, and `Plain` or \
                     `Wavefront` for a sweep stencil",
                ));
            }
        };
        if self.checkpoint.is_some() {
            return Err(Error::Mpi {
                reason: "distributed runs do not write checkpoints; gather the result and save it instead".into(),
            });
        }
        check_part(u, subdomain)?;
        for (name, grid) in meta.unknown_names()[1..].iter().zip(more) {
            check_part_of(name, grid, subdomain)?;
        }
        crate::plan::Layout::new(meta, subdomain.global_shape())?;
        let boundaries = self.boundaries_for(subdomain.global_shape())?;
        schedule.check_wrapped_halo(meta, &subdomain.global_shape(), |a| boundaries.is_periodic(a))?;
        check_cut_boundaries(&self.boundaries, meta, &planes)?;
        // As in one process: a hierarchical schedule checks once per cycle by default.
        let check_every = match (self.check_every, schedule) {
            (None, Schedule::Hierarchical { sub, .. } | Schedule::Streaming { sub, .. }) => Some(sub),
            // Once per pass, and a pass ends at every exchange.
            (None, Schedule::OutOfCore { height, .. }) => Some(height.min(planes.depth)),
            (m, _) => m,
        };
        let mut stop = StopRule::new(self.max_iterations, self.tolerance, check_every)?.measuring(
            self.residual,
            meta,
            schedule,
        )?;
        stop.observe_every = self.observe_period()?;
        let inputs = self.resolve_inputs(u.shape())?;
        let params = self.resolve_params()?;
        let device = rank_device(self.backend, subdomain, meta.name);
        Ok((schedule, stop, device, inputs, params))
    }
}

/// The GPU this rank runs `name` on under `backend` (`None`: the CPU): `Backend::Auto`
/// takes GPU `node_rank mod count` when GPUs are usable.
pub(crate) fn rank_device<const N: usize>(
    backend: Backend,
    subdomain: &crate::distributed::Subdomain<'_, N>,
    name: &str,
) -> Option<usize> {
    match backend {
        Backend::Cpu => None,
        Backend::Cuda { device } => Some(device),
        Backend::Auto => match crate::cuda::unusable_reason(0) {
            Some(reason) => {
                log::warn!("rank {} runs `{name}` on the CPU: {reason}", subdomain.rank());
                None
            }
            None => Some(subdomain.mpi().node_rank() % crate::cuda::device_count().max(1)),
        },
    }
}

/// That boundary conditions hold across ranks cut along axis 0 as `planes` are: a periodic
/// axis 0 wraps from the last rank to the first through an exchange of one radius of planes
/// at every iteration or sweep, and a rank that fills an
/// outer layer of axis 0 from its interior owns the planes it copies.
fn check_cut_boundaries<const N: usize>(
    boundaries: &Boundaries<N>,
    meta: &crate::StencilMeta,
    planes: &Planes,
) -> Result<()> {
    let fail = |reason: String| Err(Error::InvalidBoundary { stencil: meta.name, axis: 0, reason });
    let radius = meta.radius[0];
    let fills = (planes.below.is_none() && boundaries.low[0] != crate::Boundary::Dirichlet)
        || (planes.above.is_none() && boundaries.high[0] != crate::Boundary::Dirichlet);
    if fills && planes.own.len() < radius {
        return fail(format!(
            "a rank at the end of axis 0 fills its outer layer from {radius} planes of its own, and it owns {}: use \
                 fewer ranks",
            planes.own.len()
        ));
    }
    Ok(())
}

/// That `u` has the shape of this rank's part of the grid.
pub(crate) fn check_part<T: Real, const N: usize>(
    u: &Grid<T, N>,
    subdomain: &crate::distributed::Subdomain<'_, N>,
) -> Result<()> {
    check_part_of("the unknown", u, subdomain)
}

/// That `grid`, the part of unknown `name`, has the shape of this rank's part of the grid.
fn check_part_of<T: Real, const N: usize>(
    name: &str,
    grid: &Grid<T, N>,
    subdomain: &crate::distributed::Subdomain<'_, N>,
) -> Result<()> {
    let u = grid;
    if u.shape() != subdomain.local_shape() {
        return Err(Error::ShapeMismatch {
            field: format!("{name} (rank {}'s part)", subdomain.rank()),
            expected: subdomain.local_shape().to_vec(),
            found: u.shape().to_vec(),
        });
    }
    Ok(())
}

/// A stencil's scalar parameters as bits, for checking that ranks agree on them.
pub(crate) fn param_bits<S: Stencil<N>, T: Real, const N: usize>(params: &S::Params<T>) -> Vec<u64> {
    S::param_values(params)
        .iter()
        .map(|v| match v {
            crate::ScalarValue::Real(x) => x.to_f64().to_bits(),
            crate::ScalarValue::I32(x) => *x as u64,
        })
        .collect()
}

/// The kind of a backend, without a device ordinal.
pub(crate) fn backend_kind(backend: Backend) -> &'static str {
    match backend {
        Backend::Cpu => "cpu",
        Backend::Cuda { .. } => "cuda",
        _ => "auto",
    }
}
