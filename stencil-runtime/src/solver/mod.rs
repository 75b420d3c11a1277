//! The solver: a stencil, its inputs and parameters, a backend, a schedule and stopping
//! rules, run on the unknown's grid.

#[cfg(feature = "mpi")]
mod ranks;

#[cfg(feature = "mpi")]
pub(crate) use ranks::{backend_kind, check_part, param_bits, rank_device};

use crate::checkpoint::{Start, begin};
use crate::cuda::CudaOptions;
use crate::distributed::Transport;
use crate::inputs::{resolve_inputs, resolve_params};
use crate::plan::planes::Planes;
use crate::run::job::{GridState, Held, Job, ObserveFn, Observer, ProgressFn, SlabFn};
use crate::run::peers::{Alone, Place};
use crate::stop::StopRule;
use crate::{
    Backend, Boundaries, Error, Grid, Progress, Real, Report, Residual, Result, Schedule, SlabProgress, Stencil,
    Tolerance,
};

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
    boundaries: Boundaries<N>,
    max_iterations: Option<usize>,
    tolerance: Option<Tolerance>,
    residual: Residual,
    check_every: Option<usize>,
    cuda: CudaOptions,
    dump_cuda: Option<std::path::PathBuf>,
    progress: Option<ProgressFn<'a>>,
    checkpoint: Option<crate::Checkpoint>,
    fail_after_slabs: Option<usize>,
    on_slab: Option<SlabFn<'a>>,
    observer: Option<(usize, ObserveFn<'a, T, N>)>,
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
            boundaries: Boundaries::default(),
            max_iterations: None,
            tolerance: None,
            residual: Residual::Step,
            check_every: None,
            cuda: CudaOptions::default(),
            dump_cuda: None,
            progress: None,
            checkpoint: None,
            fail_after_slabs: None,
            on_slab: None,
            observer: None,
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

    /// The grid's boundary conditions: Dirichlet on every side by default (the outer layer
    /// keeps the values it was given); a [`Boundary`](crate::Boundary) for every side, or
    /// [`Boundaries`] per axis and side. Periodic and Neumann layers are filled from the
    /// interior before every iteration (and every sweep) and after the last, and every
    /// schedule keeps them as one iteration at a time does — `Plain`, `Tiled`,
    /// `Hierarchical` (whose working regions wrap past a periodic edge and mirror a Neumann
    /// one after every subiteration), `OutOfCore` with plain, skewed or hierarchical slabs
    /// (with a periodic axis 0, passes of one iteration), and the sweeps' `Wavefront` — on
    /// every backend, and across ranks (a periodic cut axis wraps from the last rank to the
    /// first, exchanged at every iteration or sweep; sweeps across it run one rank after
    /// another). See `docs/guide.md`, "Boundary conditions".
    ///
    /// **Errors** (from [`run`](Self::run)): [`Error::InvalidBoundary`] for a periodic axis
    /// periodic on one side only, or an interior narrower than the radius it fills.
    pub fn boundaries(mut self, boundaries: impl Into<Boundaries<N>>) -> Self {
        self.boundaries = boundaries.into();
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

    /// What the residual is (what the tolerance is compared with): ‖S(u) − u‖ by default,
    /// or [`Residual::SinceLastCheck`], the change over the iterations since the previous
    /// check, as paper 000's Algorithm 1 measures it after each pyramid pass. The latter
    /// keeps one more copy of the unknowns (where the run keeps them: on the device in core,
    /// in host memory out of core) and is not measured by sweeps or inexact hierarchical
    /// cycles.
    pub fn residual(mut self, residual: Residual) -> Self {
        self.residual = residual;
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
    /// fuse multiply–adds, divide `f32` approximately and divide by a constant as a
    /// multiplication by its reciprocal. Ignored on the CPU.
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

    /// Shows the iterate to `callback(iteration, &u)` after every `every` iterations (of a
    /// system, the first unknown's: [`observe_all`](Self::observe_all) shows every one), for
    /// frames or statistics of a time-dependent run that goes on meanwhile (`docs/guide.md`,
    /// "Watching a run"). Those iterations are checked (a measuring pass, as for
    /// checkpoints), so that every schedule ends a cycle or pass there; on a GPU the iterate
    /// is copied to the host at those iterations only. `u` holds the whole iterate, its
    /// periodic and Neumann layers filled. In a distributed run each rank is shown its part.
    ///
    /// **Errors** (from [`run`](Self::run)): [`Error::InvalidObserver`] for `every` = 0.
    pub fn observe(self, every: usize, mut callback: impl FnMut(usize, &Grid<T, N>) + 'a) -> Self {
        self.observe_all(every, move |iteration, grids| callback(iteration, grids[0]))
    }

    /// As [`observe`](Self::observe), showing the iterate of every unknown: `grids[k]` is
    /// the `k`-th unknown's, in declaration order (one grid for a single unknown).
    ///
    /// **Errors** (from [`run`](Self::run)): [`Error::InvalidObserver`] for `every` = 0.
    pub fn observe_all(mut self, every: usize, callback: impl FnMut(usize, &[&Grid<T, N>]) + 'a) -> Self {
        self.observer = Some((every, Box::new(callback)));
        self
    }

    /// Writes the iterate to a file every m iterations, atomically, and with
    /// [`Checkpoint::resume`](crate::Checkpoint::resume) continues from that file when it
    /// exists (see [`Checkpoint`](crate::Checkpoint)).
    pub fn checkpoint(mut self, checkpoint: crate::Checkpoint) -> Self {
        self.checkpoint = Some(checkpoint);
        self
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
        if S::META.is_system() {
            return Err(self.wrong_unknowns(1));
        }
        #[cfg(feature = "mpi")]
        if let Some(subdomain) = self.distributed {
            return self.run_distributed(subdomain, u, Vec::new());
        }
        let state = GridState::default();
        let path = self.checkpoint.as_ref().map(|c| c.path().to_owned());
        self.run_watched(u, Vec::new(), &state).map_err(|e| state.explain(e, path.as_deref()))
    }

    /// As [`run`](Self::run), for a stencil of several unknowns (a system): `unknowns[k]`
    /// is the grid of the `k`-th field marked `mut`, in declaration order, and every one is
    /// updated from the previous iterate of all of them. The residual is taken over all of
    /// them: L∞ the largest change, L2 over every point of every unknown. A system runs
    /// `Plain`, `Tiled` and `Hierarchical` schedules (`Auto` picks `Plain`) on every backend
    /// and with every boundary condition, each unknown's outer layers filled alike, in one
    /// process or on MPI ranks (with `distributed`, feature `mpi`, `unknowns` being
    /// this rank's parts). `docs/guide.md`, "Systems of unknowns", has a tested example.
    ///
    /// **Errors**: as [`run`](Self::run), and [`Error::WrongUnknowns`] when `unknowns` is not
    /// one grid per unknown, [`Error::ShapeMismatch`] when their shapes differ, and
    /// [`Error::InvalidSchedule`] for out-of-core slabs and checkpoints, which hold one
    /// unknown.
    pub fn run_system(&mut self, unknowns: &mut [&mut Grid<T, N>]) -> Result<Report> {
        let names = S::META.unknown_names();
        if unknowns.len() != names.len() {
            return Err(self.wrong_unknowns(unknowns.len()));
        }
        let Some((first, more)) = unknowns.split_first_mut() else { unreachable!("a stencil has an unknown") };
        if more.is_empty() {
            return self.run(first);
        }
        let expected = first.shape().to_vec();
        if let Some((name, grid)) = names[1..].iter().zip(more.iter()).find(|(_, g)| g.shape()[..] != expected[..]) {
            return Err(Error::ShapeMismatch { field: (*name).to_owned(), expected, found: grid.shape().to_vec() });
        }
        let more: Vec<&mut Grid<T, N>> = more.iter_mut().map(|g| &mut **g).collect();
        #[cfg(feature = "mpi")]
        if let Some(subdomain) = self.distributed {
            return self.run_distributed(subdomain, first, more);
        }
        let state = GridState::default();
        self.run_watched(first, more, &state).map_err(|e| state.explain(e, None))
    }

    /// [`Error::WrongUnknowns`] for a run given `given` grids.
    fn wrong_unknowns(&self, given: usize) -> Error {
        let names = S::META.unknown_names();
        let listed = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
        let reason = match (names.len(), given) {
            (1, _) => format!("updates one unknown ({listed}): run it with `run(&mut {})`", names[0]),
            (k, _) => format!(
                "updates {k} unknowns ({listed}) and the run was given {given} grid{}: give one grid per unknown, in \
                 that order, to `run_system(&mut [&mut {}])`",
                if given == 1 { "" } else { "s" },
                names.join(", &mut ")
            ),
        };
        Error::WrongUnknowns { stencil: S::META.name, reason }
    }

    /// [`run`](Self::run) in one process, recording in `state` what `u` holds; `more` are a
    /// system's further unknowns.
    fn run_watched(&mut self, u: &mut Grid<T, N>, mut more: Vec<&mut Grid<T, N>>, state: &GridState) -> Result<Report> {
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
        let choice = self.choose(u, device)?;
        let schedule = choice.as_ref().map_or(self.schedule, |c| c.schedule).resolve(S::META)?;
        let boundaries = self.boundaries_for(u.shape())?;
        schedule.check_wrapped_halo(S::META, &u.shape(), |a| boundaries.is_periodic(a))?;
        let mut stop = self.stop_rule(schedule, choice.is_some(), u.shape()[0])?;
        stop.observe_every = self.observe_period()?;
        let inputs = self.resolve_inputs(u.shape())?;
        let params = self.resolve_params()?;
        let (start, checkpoint) = match &self.checkpoint {
            None => (Start::default(), None),
            Some(c) => {
                let recorded = crate::RunInputs::of::<S, T, N>(&params, &inputs);
                let (start, writer) = begin::<S, T, N>(c, u, &mut more, &mut stop, recorded)?;
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
            boundaries,
            stop,
            progress: self.progress.as_mut(),
            start,
            checkpoint,
            fail_after_slabs: self.fail_after_slabs,
            on_slab: self.on_slab.as_mut(),
            model_chooses: choice.as_ref().is_some_and(|c| matches!(c.schedule, Schedule::OutOfCore { .. })),
            check_every_given: self.check_every.is_some(),
            held: Some(state),
            observer: self.observer.as_mut().map(|(every, callback)| Observer { every: *every, callback }),
            more,
        };
        let planes = Planes::whole(u.shape()[0], S::META.radius[0]);
        let place = Place { peers: &Alone, planes, global: u.shape(), transport: Transport::Host };
        let mut report = crate::dispatch::run(job, u, place, device, options_for(self.cuda, device)?)?;
        report.schedule_choice = choice.map(|c| c.reason);
        Ok(report)
    }

    /// What `Schedule::Auto` stands for on `device` (`None`: the CPU), and the out-of-core
    /// schedule for a grid too large for the GPU that `Backend::Auto` chose; `None` when the
    /// schedule given runs as it is.
    fn choose(&self, u: &Grid<T, N>, device: Option<usize>) -> Result<Option<crate::plan::autotune::Choice>> {
        use crate::plan::autotune::{for_system, short_run, without_measuring, worth_measuring};
        let slabs_fit = !S::META.is_sweep();
        let out_of_core = |device| if slabs_fit { self.out_of_core(u, device) } else { Ok(None) };
        if S::META.is_system() {
            return Ok(match (self.schedule, device) {
                (Schedule::Auto, Some(device)) => Some(out_of_core(device)?.unwrap_or_else(for_system)),
                (Schedule::Auto, None) => Some(for_system()),
                (Schedule::Plain, Some(device)) if self.backend == Backend::Auto => out_of_core(device)?,
                _ => None,
            });
        }
        Ok(match (self.schedule, device) {
            (Schedule::Auto, Some(device)) if !S::META.is_sweep() => Some(match out_of_core(device)? {
                Some(choice) => choice,
                None if !worth_measuring(self.max_iterations) => short_run(self.max_iterations.unwrap_or_default()),
                None => self.measure_auto(u, device)?,
            }),
            // `Backend::Auto` chose the GPU; a grid too large for it runs there out of core
            // (the same iterates as `Plain`) rather than failing.
            (Schedule::Plain, Some(device)) if self.backend == Backend::Auto && slabs_fit => {
                self.out_of_core(u, device)?
            }
            (Schedule::Auto, _) => Some(without_measuring(S::META)),
            _ => None,
        })
    }

    /// The boundary conditions, checked against the grid of `shape`: periodic and Neumann
    /// layers are filled before every iteration on every schedule (a hierarchical cycle inside
    /// its tiles, whose working regions wrap and mirror; out-of-core slabs in every view, and
    /// with a periodic slab axis in passes of one iteration).
    fn boundaries_for(&self, shape: [usize; N]) -> Result<Boundaries<N>> {
        self.boundaries.check(S::META, shape)?;
        Ok(self.boundaries)
    }

    /// The observer's period, checked.
    fn observe_period(&self) -> Result<Option<usize>> {
        match &self.observer {
            Some((0, _)) => Err(Error::InvalidObserver),
            observer => Ok(observer.as_ref().map(|(every, _)| *every)),
        }
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
            (None, Schedule::Hierarchical { sub, .. } | Schedule::Streaming { sub, .. }) if !chosen => {
                Some(natural(sub))
            }
            // No pass is longer than the grid's planes (`Slabs::over`).
            (None, Schedule::OutOfCore { height, .. }) => Some(natural(height.min(planes))),
            (m, _) => m,
        };
        let stop = StopRule::new(self.max_iterations, self.tolerance, check_every)?.measuring(
            self.residual,
            S::META,
            schedule,
        )?;
        if let Schedule::Hierarchical { sub, .. } = schedule
            && !schedule.is_exact_blocking(S::META)
        {
            stop.check_gap(sub, "an inexact hierarchical cycle, which is never cut short, runs")?;
        }
        Ok(stop)
    }

    /// `Some` out-of-core choice when an in-core run of `u` (every unknown twice, or three
    /// times with the copy that [`Residual::SinceLastCheck`] keeps, and every read-only
    /// field) does not fit 90 % of GPU `device`'s free memory.
    fn out_of_core(&self, u: &Grid<T, N>, device: usize) -> Result<Option<crate::plan::autotune::Choice>> {
        let gpu = crate::cuda::Gpu::open(device)?;
        let (free, _) = gpu
            .free_memory()
            .map_err(|message| Error::Cuda { what: "reading the free device memory".into(), message })?;
        // Every unknown twice (three times with the last check's copy), every read-only field once.
        let copies = if self.residual == Residual::SinceLastCheck { 3 } else { 2 };
        let needed = (copies * S::META.unknowns.len() + self.inputs.len()) * u.as_slice().len() * T::BYTES;
        let usable = free / 10 * 9;
        Ok((needed > usable).then(|| crate::plan::autotune::out_of_core(needed, usable)))
    }

    /// `Schedule::Auto` on GPU `device`: every candidate of [`crate::plan::autotune`] timed over a
    /// few iterations on a copy of `u` (cached per stencil, shape, precision, mode, device).
    fn measure_auto(&self, u: &Grid<T, N>, device: usize) -> Result<crate::plan::autotune::Choice> {
        use crate::plan::autotune::{TRIAL_ITERATIONS, key, measured};
        let gpu_name = crate::cuda::Gpu::open(device)?.name.clone();
        let key = key(S::CUDA_SOURCE, self.boundaries, &u.shape(), T::NAME, self.cuda.mode.name(), device);
        measured(S::META, key, &gpu_name, |schedule| {
            // What the run was given, timed on the device over a few iterations; the rest
            // (callbacks, checkpoints, observers) as a new solver has it.
            let mut trial = Solver {
                inputs: self.inputs.clone(),
                params: self.params,
                params_twice: self.params_twice,
                named_params: self.named_params.clone(),
                backend: Backend::Cuda { device },
                schedule,
                boundaries: self.boundaries,
                max_iterations: Some(TRIAL_ITERATIONS),
                check_every: Some(TRIAL_ITERATIONS),
                cuda: self.cuda,
                ..Solver::new(self.stencil)
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

/// The CUDA options of a run on `device`, with the environment's overrides; a CPU run reads
/// no variable, so a malformed one cannot fail it.
fn options_for(cuda: CudaOptions, device: Option<usize>) -> Result<CudaOptions> {
    match device {
        Some(_) => cuda.with_environment(),
        None => Ok(cuda),
    }
}
