//! The solver: a stencil, its inputs and parameters, a backend, a schedule and stopping
//! rules, run on the unknown's grid.

use crate::checkpoint::{Start, begin};
use crate::cuda::CudaOptions;
use crate::inputs::{resolve_inputs, resolve_params};
use crate::plan::planes::Planes;
use crate::run::job::{GridState, Held, Job, ProgressFn, SlabFn};
use crate::run::peers::{Alone, Place};
use crate::stop::StopRule;
use crate::{Backend, Error, Grid, Progress, Real, Report, Result, Schedule, SlabProgress, Stencil, Tolerance};

/// Runs a stencil on a grid until a stopping rule holds.
///
/// Built with chained calls and run with [`run`](Self::run); the crate `stencil`'s
/// documentation has complete, tested examples (`Solver` is re-exported there).
pub struct Solver<'a, S: Stencil<N>, T: Real, const N: usize> {
    stencil: S,
    inputs: Vec<(String, &'a Grid<T, N>)>,
    params: Option<S::Params<T>>,
    /// `params` was called more than once.
    params_twice: bool,
    named_params: Vec<(String, f64)>,
    backend: Backend,
    schedule: Schedule,
    max_iterations: Option<usize>,
    tolerance: Option<Tolerance>,
    check_every: Option<usize>,
    cuda: CudaOptions,
    dump_cuda: Option<std::path::PathBuf>,
    progress: Option<ProgressFn<'a>>,
    checkpoint: Option<crate::Checkpoint>,
    fail_after_slabs: Option<usize>,
    on_slab: Option<SlabFn<'a>>,
    #[cfg(feature = "mpi")]
    distributed: Option<&'a crate::distributed::Subdomain<'a, N>>,
}

impl<'a, S: Stencil<N>, T: Real, const N: usize> Solver<'a, S, T, N> {
    /// A solver for `stencil` with the CPU backend, the automatic schedule and no stopping
    /// rule yet.
    pub fn new(stencil: S) -> Self {
        Self {
            stencil,
            inputs: Vec::new(),
            params: None,
            params_twice: false,
            named_params: Vec::new(),
            backend: Backend::default(),
            schedule: Schedule::default(),
            max_iterations: None,
            tolerance: None,
            check_every: None,
            cuda: CudaOptions::default(),
            dump_cuda: None,
            progress: None,
            checkpoint: None,
            fail_after_slabs: None,
            on_slab: None,
            #[cfg(feature = "mpi")]
            distributed: None,
        }
    }

    /// Gives the read-only field `name` (every field but the unknown): the dynamic form of
    /// [`inputs`](Self::inputs), for fields chosen at run time.
    pub fn input(mut self, name: &str, grid: &'a Grid<T, N>) -> Self {
        self.inputs.push((name.to_owned(), grid));
        self
    }

    /// Gives every read-only field at once, typed: the struct generated with the stencil
    /// (`Jacobi7Inputs { f: &f }`), so that a field left out or misspelt is a compile error.
    pub fn inputs(mut self, inputs: impl crate::InputFields<'a, S, T, N>) -> Self {
        self.inputs.extend(inputs.fields().into_iter().map(|(name, grid)| (name.to_owned(), grid)));
        self
    }

    /// Sets every scalar parameter at once, typed (the struct generated with the stencil).
    /// Each value is given once: this and [`param`](Self::param) together, or this twice,
    /// make [`run`](Self::run) return [`Error::Duplicate`].
    pub fn params(mut self, params: S::Params<T>) -> Self {
        self.params_twice |= self.params.is_some();
        self.params = Some(params);
        self
    }

    /// Sets scalar parameter `name` by name (for a parameter chosen at run time; the typed
    /// [`params`](Self::params) catches a misspelt name at compile time). A value given twice
    /// is [`Error::Duplicate`].
    pub fn param(mut self, name: &str, value: f64) -> Self {
        self.named_params.push((name.to_owned(), value));
        self
    }

    /// Where to run.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// How to run.
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = schedule;
        self
    }

    /// Stop after `n` iterations at most.
    pub fn max_iterations(mut self, n: usize) -> Self {
        self.max_iterations = Some(n);
        self
    }

    /// Stop once the residual meets `tolerance`.
    pub fn tolerance(mut self, tolerance: Tolerance) -> Self {
        self.tolerance = Some(tolerance);
        self
    }

    /// Check the residual (and look for non-finite values) every `m` iterations; default
    /// [`DEFAULT_CHECK_EVERY`](crate::DEFAULT_CHECK_EVERY), one cycle (`sub` iterations)
    /// for [`Schedule::Hierarchical`] and one pass (`height` iterations) for
    /// [`Schedule::OutOfCore`]. The last iteration is always checked. An exact
    /// hierarchical schedule ends a cycle at every checked iteration; an inexact one checks
    /// the cycles that contain one (see `docs/schedules.md`).
    pub fn check_every(mut self, m: usize) -> Self {
        self.check_every = Some(m);
        self
    }

    /// How the GPU compiles floating-point operations: [`Mode::Exact`](crate::cuda::Mode)
    /// gives the CPU twin's bits, [`Mode::Fast`](crate::cuda::Mode) (the default) lets NVRTC
    /// fuse multiply–adds. Ignored on the CPU.
    pub fn mode(mut self, mode: crate::cuda::Mode) -> Self {
        self.cuda.mode = mode;
        self
    }

    /// How the GPU runs the stencil: the floating-point mode and the tuning knobs (launch
    /// shapes, the hierarchical kernel, the wavefront's chunk); the environment variables of
    /// [`CudaOptions::with_environment`] override them. Ignored on the CPU.
    pub fn cuda(mut self, options: CudaOptions) -> Self {
        self.cuda = options;
        self
    }

    /// Writes the CUDA translation unit that the GPU backend compiles to `folder/<stencil>.cu`,
    /// to read what runs (the environment variable `STENCIL_DUMP_CUDA` does the same for every
    /// run). Ignored on the CPU.
    pub fn dump_cuda(mut self, folder: impl Into<std::path::PathBuf>) -> Self {
        self.dump_cuda = Some(folder.into());
        self
    }

    /// Calls `callback` after every residual check.
    pub fn on_progress(mut self, callback: impl FnMut(&Progress) + 'a) -> Self {
        self.progress = Some(Box::new(callback));
        self
    }

    /// Calls `callback` after every slab of an out-of-core pass is written back (on the
    /// GPU, when its copy to the host has finished). Other schedules, and distributed runs,
    /// never call it.
    pub fn on_slab(mut self, callback: impl FnMut(&SlabProgress) + 'a) -> Self {
        self.on_slab = Some(Box::new(callback));
        self
    }

    /// Writes the iterate to a file every m iterations, atomically, and with
    /// [`Checkpoint::resume`](crate::Checkpoint::resume) continues from that file when it
    /// exists (see [`Checkpoint`](crate::Checkpoint)).
    pub fn checkpoint(mut self, checkpoint: crate::Checkpoint) -> Self {
        self.checkpoint = Some(checkpoint);
        self
    }

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
    /// choose a period of many times the number of ranks (the default, 100, is).
    /// `Backend::Auto` uses GPU `node_rank mod count` when GPUs are
    /// usable. Checkpoints are not written by distributed runs. Every problem the run could
    /// find in its input, on any rank, and any difference between the ranks' problems
    /// (stencil, shapes, parameters, stopping rule, schedule, backend) is an error on every
    /// rank before the first iteration: no rank waits for another that has stopped. A device
    /// error on one rank after the start is returned on that rank only, and the others wait
    /// for it: end the job from there (`docs/guide.md`, "Distributed runs").
    #[cfg(feature = "mpi")]
    pub fn distributed(mut self, subdomain: &'a crate::distributed::Subdomain<'a, N>) -> Self {
        self.distributed = Some(subdomain);
        self
    }

    #[cfg(feature = "mpi")]
    fn run_distributed(
        &mut self,
        subdomain: &'a crate::distributed::Subdomain<'a, N>,
        u: &mut Grid<T, N>,
    ) -> Result<Report> {
        use crate::distributed::fingerprint;
        let prepared = self.prepare_distributed(subdomain, u);
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
            ("the schedule", fingerprint(&self.schedule.to_string())),
            // The kind of backend: each rank may use its own device.
            ("the backend", fingerprint(&(backend_kind(self.backend), self.cuda))),
        ];
        let (schedule, stop, device, inputs, params) = subdomain.mpi().agree(prepared, &items)?;
        let job: Job<'_, '_, S, T, N> = Job {
            inputs,
            params,
            schedule,
            stop,
            progress: self.progress.as_mut(),
            start: Start::default(),
            checkpoint: None,
            fail_after_slabs: None,
            on_slab: None,
            model_chooses: false,
            check_every_given: self.check_every.is_some(),
            held: None,
        };
        let place = Place { peers: subdomain.mpi(), planes: subdomain.planes(), global: subdomain.global_shape() };
        crate::dispatch::run(job, u, place, device, options_for(self.cuda, device)?)
    }

    /// This rank's checks before a distributed run: the stopping rule, the device, the
    /// inputs and the parameters, or the first problem found.
    #[cfg(feature = "mpi")]
    #[allow(clippy::type_complexity)]
    fn prepare_distributed(
        &self,
        subdomain: &crate::distributed::Subdomain<'_, N>,
        u: &Grid<T, N>,
    ) -> Result<(Schedule, StopRule, Option<usize>, Vec<Option<&'a [T]>>, S::Params<T>)> {
        let meta = S::META;
        let invalid = |reason: &str| Error::InvalidSchedule {
            schedule: self.schedule.to_string(),
            stencil: meta.name,
            reason: reason.to_owned(),
        };
        // `Auto` runs `Plain` (the deep halos are the pyramid between ranks), or for a sweep
        // stencil a wavefront with the default tile on each rank.
        let schedule = match self.schedule.resolve(meta)? {
            schedule @ (Schedule::Plain | Schedule::Tiled | Schedule::Wavefront { .. }) => schedule,
            given @ Schedule::Hierarchical { tile, halo, sub } => {
                // A tile (and an inexact cycle's halo) beyond the grid computes what the grid's
                // own width would, as in one process, and keeps the tiles' arithmetic in range;
                // an exact cycle's halo stays as given, since it makes the cycle exact.
                let largest = subdomain.global_shape().into_iter().max().unwrap_or(1);
                let halo = if given.is_exact_blocking(meta) { halo } else { halo.min(largest) };
                let schedule = Schedule::Hierarchical { tile: tile.min(largest), halo, sub };
                // An inexact cycle's tiles across a cut are computed by both ranks, which read
                // a tile less one and a halo beyond the planes they update.
                let reach = crate::run::tiles::reach(meta.radius[0], tile, halo);
                if !schedule.is_exact_blocking(meta) && subdomain.ghost() < reach {
                    let radius = meta.radius[0];
                    return Err(invalid(&format!(
                        "an inexact hierarchical cycle computes the whole grid's tiles that meet a rank's planes, \
                         which reads tile − 1 + halo = {reach} planes beyond them; the split has {} ghost planes \
                         (depth {} · radius {radius}): split with depth ≥ {}",
                        subdomain.ghost(),
                        subdomain.depth(),
                        reach.div_ceil(radius)
                    )));
                }
                schedule
            }
            schedule @ Schedule::OutOfCore { .. } => schedule,
            _ => {
                return Err(invalid(
                    "distributed runs take `Plain`, `Tiled`, `Hierarchical` or `OutOfCore` on each rank, and `Plain` or \
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
        crate::plan::Layout::new(meta, subdomain.global_shape())?;
        // As in one process: a hierarchical schedule checks once per cycle by default.
        let check_every = match (self.check_every, schedule) {
            (None, Schedule::Hierarchical { sub, .. }) => Some(sub),
            // Once per pass, and a pass ends at every exchange.
            (None, Schedule::OutOfCore { height, .. }) => Some(height.min(subdomain.depth())),
            (m, _) => m,
        };
        let stop = StopRule::new(self.max_iterations, self.tolerance, check_every)?;
        let inputs = self.resolve_inputs(u.shape())?;
        let params = self.resolve_params()?;
        let device = rank_device(self.backend, subdomain, meta.name);
        Ok((schedule, stop, device, inputs, params))
    }

    #[doc(hidden)]
    /// Makes an out-of-core run fail, as a device error would, after writing back `slabs`
    /// slabs; for testing what the error says.
    pub fn fail_after_slabs(mut self, slabs: usize) -> Self {
        self.fail_after_slabs = Some(slabs);
        self
    }

    /// Iterates on `u` (its boundary layer holds the Dirichlet values) until a stopping
    /// rule holds, and reports what ran.
    ///
    /// **Errors**: every input error ([`Error::ShapeMismatch`], [`Error::GridTooSmall`],
    /// [`Error::MissingField`], [`Error::MissingParameter`], [`Error::NeverStops`], …) is
    /// found before the first iteration, and then `u` is unchanged. [`Error::NonFinite`] is
    /// raised at the first check that sees NaN or ±∞; `u` then holds that whole iterate.
    pub fn run(&mut self, u: &mut Grid<T, N>) -> Result<Report> {
        #[cfg(feature = "mpi")]
        if let Some(subdomain) = self.distributed {
            return self.run_distributed(subdomain, u);
        }
        let state = GridState::default();
        let path = self.checkpoint.as_ref().map(|c| c.path().to_owned());
        self.run_watched(u, &state).map_err(|e| state.explain(e, path.as_deref()))
    }

    /// [`run`](Self::run) in one process, recording in `state` what `u` holds.
    fn run_watched(&mut self, u: &mut Grid<T, N>, state: &GridState) -> Result<Report> {
        // The device the run goes to, `None` for the CPU (with `Backend::Auto`'s notice).
        let device = match self.backend {
            Backend::Cpu => None,
            Backend::Cuda { device } => Some(device),
            Backend::Auto => {
                let reason = crate::cuda::unusable_reason(0);
                if let Some(reason) = &reason {
                    log::warn!("running `{}` on the CPU: {reason}", S::META.name);
                }
                reason.is_none().then_some(0)
            }
        };
        if let (Some(folder), Some(_)) = (&self.dump_cuda, device) {
            // Written before the device is opened, so that it is there even when that fails.
            let path = folder.join(format!("{}.cu", S::META.name));
            std::fs::create_dir_all(folder)
                .and_then(|()| std::fs::write(&path, S::CUDA_SOURCE))
                .map_err(|source| Error::Io { path, source })?;
        }
        let choice = match (self.schedule, device) {
            (Schedule::Auto, Some(device)) if !S::META.is_sweep() => Some(match self.out_of_core(u, device)? {
                Some(choice) => choice,
                None if !crate::plan::autotune::worth_measuring(self.max_iterations) => {
                    crate::plan::autotune::short_run(self.max_iterations.unwrap_or_default())
                }
                None => self.measure_auto(u, device)?,
            }),
            // `Backend::Auto` chose the GPU; a grid too large for it runs there out of core
            // (the same iterates as `Plain`) rather than failing.
            (Schedule::Plain, Some(device)) if self.backend == Backend::Auto && !S::META.is_sweep() => {
                self.out_of_core(u, device)?
            }
            (Schedule::Auto, _) => Some(crate::plan::autotune::without_measuring(S::META)),
            _ => None,
        };
        let schedule = choice.as_ref().map_or(self.schedule, |c| c.schedule).resolve(S::META)?;
        let mut stop = self.stop_rule(schedule, choice.is_some(), u.shape()[0])?;
        let inputs = self.resolve_inputs(u.shape())?;
        let params = self.resolve_params()?;
        let (start, checkpoint) = match &self.checkpoint {
            None => (Start::default(), None),
            Some(c) => {
                let recorded = crate::RunInputs::of::<S, T, N>(&params, &inputs);
                let (start, writer) = begin::<S, T, N>(c, u, &mut stop, recorded)?;
                if start.iteration > 0 {
                    state.held.set(Held::Iterate(start.iteration));
                    state.checkpoint.set(Some(start.iteration));
                }
                (start, Some(writer))
            }
        };
        let job: Job<'_, '_, S, T, N> = Job {
            inputs,
            params,
            schedule,
            stop,
            progress: self.progress.as_mut(),
            start,
            checkpoint,
            fail_after_slabs: self.fail_after_slabs,
            on_slab: self.on_slab.as_mut(),
            model_chooses: choice.as_ref().is_some_and(|c| matches!(c.schedule, Schedule::OutOfCore { .. })),
            check_every_given: self.check_every.is_some(),
            held: Some(state),
        };
        let planes = Planes::whole(u.shape()[0], S::META.radius[0]);
        let place = Place { peers: &Alone, planes, global: u.shape() };
        let mut report = crate::dispatch::run(job, u, place, device, options_for(self.cuda, device)?)?;
        report.schedule_choice = choice.map(|c| c.reason);
        Ok(report)
    }

    /// The stopping rule of a single-process run of `schedule` (`chosen` by `Auto`) on a
    /// grid of `planes` planes along axis 0. A hierarchical schedule's natural period is one
    /// cycle (when asked for; chosen by `Auto`, it checks as `Plain` would), and paper 000's
    /// Algorithm 1 checks once per pass; a run without a limit looks at least every
    /// `MAX_UNLIMITED_CHECK_EVERY` iterations.
    fn stop_rule(&self, schedule: Schedule, chosen: bool, planes: usize) -> Result<StopRule> {
        let natural = |period: usize| match self.max_iterations {
            None => period.min(crate::stop::MAX_UNLIMITED_CHECK_EVERY),
            Some(_) => period,
        };
        let check_every = match (self.check_every, schedule) {
            (None, Schedule::Hierarchical { sub, .. }) if !chosen => Some(natural(sub)),
            // No pass is longer than the grid's planes (`Slabs::over`).
            (None, Schedule::OutOfCore { height, .. }) => Some(natural(height.min(planes))),
            (m, _) => m,
        };
        let stop = StopRule::new(self.max_iterations, self.tolerance, check_every)?;
        if let Schedule::Hierarchical { sub, .. } = schedule
            && !schedule.is_exact_blocking(S::META)
        {
            stop.check_gap(sub, "an inexact hierarchical cycle, which is never cut short, runs")?;
        }
        Ok(stop)
    }

    /// `Some` out-of-core choice when an in-core run of `u` (the unknown twice and every
    /// read-only field) does not fit 90 % of GPU `device`'s free memory.
    fn out_of_core(&self, u: &Grid<T, N>, device: usize) -> Result<Option<crate::plan::autotune::Choice>> {
        let gpu = crate::cuda::Gpu::open(device)?;
        let (free, _) = gpu
            .free_memory()
            .map_err(|message| Error::Cuda { what: "reading the free device memory".into(), message })?;
        let needed = (2 + self.inputs.len()) * u.as_slice().len() * T::BYTES;
        let usable = free / 10 * 9;
        Ok((needed > usable).then(|| crate::plan::autotune::out_of_core(needed, usable)))
    }

    /// `Schedule::Auto` on GPU `device`: every candidate of [`crate::plan::autotune`] timed over a
    /// few iterations on a copy of `u` (cached per stencil, shape, precision, mode, device).
    fn measure_auto(&self, u: &Grid<T, N>, device: usize) -> Result<crate::plan::autotune::Choice> {
        use crate::plan::autotune::{TRIAL_ITERATIONS, key, measured};
        let gpu_name = crate::cuda::Gpu::open(device)?.name.clone();
        let key = key(S::CUDA_SOURCE, &u.shape(), T::NAME, self.cuda.mode.name(), device);
        measured(S::META, key, &gpu_name, |schedule| {
            let mut trial = Solver {
                stencil: self.stencil,
                inputs: self.inputs.clone(),
                params: self.params,
                params_twice: self.params_twice,
                named_params: self.named_params.clone(),
                backend: Backend::Cuda { device },
                schedule,
                max_iterations: Some(TRIAL_ITERATIONS),
                tolerance: None,
                check_every: Some(TRIAL_ITERATIONS),
                cuda: self.cuda,
                dump_cuda: None,
                progress: None,
                checkpoint: None,
                fail_after_slabs: None,
                on_slab: None,
                #[cfg(feature = "mpi")]
                distributed: None,
            };
            trial.run(&mut u.clone())
        })
    }

    /// The typed parameters, or those given by name, checked: each value given once.
    fn resolve_params(&self) -> Result<S::Params<T>> {
        resolve_params::<S, T, N>(self.params, self.params_twice, &self.named_params)
    }

    fn resolve_inputs(&self, shape: [usize; N]) -> Result<Vec<Option<&'a [T]>>> {
        resolve_inputs::<S, T, N>(&self.inputs, shape)
    }
}

/// The GPU this rank runs `name` on under `backend` (`None`: the CPU): `Backend::Auto`
/// takes GPU `node_rank mod count` when GPUs are usable.
#[cfg(feature = "mpi")]
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

/// That `u` has the shape of this rank's part of the grid.
#[cfg(feature = "mpi")]
pub(crate) fn check_part<T: Real, const N: usize>(
    u: &Grid<T, N>,
    subdomain: &crate::distributed::Subdomain<'_, N>,
) -> Result<()> {
    if u.shape() != subdomain.local_shape() {
        return Err(Error::ShapeMismatch {
            field: format!("the unknown (rank {}'s part)", subdomain.rank()),
            expected: subdomain.local_shape().to_vec(),
            found: u.shape().to_vec(),
        });
    }
    Ok(())
}

/// A stencil's scalar parameters as bits, for checking that ranks agree on them.
#[cfg(feature = "mpi")]
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
#[cfg(feature = "mpi")]
pub(crate) fn backend_kind(backend: Backend) -> &'static str {
    match backend {
        Backend::Cpu => "cpu",
        Backend::Cuda { .. } => "cuda",
        _ => "auto",
    }
}

/// The CUDA options of a run on `device`, with the environment's overrides; a CPU run reads
/// no variable, so a malformed one cannot fail it.
fn options_for(cuda: CudaOptions, device: Option<usize>) -> Result<CudaOptions> {
    match device {
        Some(_) => cuda.with_environment(),
        None => Ok(cuda),
    }
}
