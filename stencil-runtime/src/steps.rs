//! Time stepping with two sweep stencils in turn: one step is a sweep of the first stencil
//! and then one of the second, on the same unknown with the same read-only fields (the two
//! half-steps of the alternate-triangular scheme). On the GPU the grid stays on the device
//! for all the steps.

use std::time::{Duration, Instant};

use crate::cpu::CpuEngine;
use crate::cuda::CudaOptions;
use crate::cuda::engine::{Build, GpuEngine};
use crate::distributed::Transport;
use crate::engine::Engine;
use crate::inputs::resolve_inputs;
use crate::plan::Layout;
use crate::plan::planes::{Exchange, Planes};
use crate::run::drive::{Advance, Unit, drive};
use crate::run::monitor::Monitor;
use crate::run::peers::{Alone, Peers, Place};
use crate::run::sweeps::Swept;
use crate::stop::StopRule;
use crate::{Backend, Direction, Error, Grid, Real, Result, Schedule, Stencil, StencilMeta};

/// The host fields of the two stencils, each in declaration order (`None` at the unknown).
struct FieldPair<'a, T> {
    first: &'a [Option<&'a [T]>],
    second: &'a [Option<&'a [T]>],
}

/// A callback told how many steps are done and the time since the first began.
pub type StepFn<'a> = dyn FnMut(usize, Duration) + 'a;

/// Two `sweep(…)` stencils applied in turn to one grid. `docs/schedules.md` has an
/// example (run as a test of the `stencil` crate), and `examples/07_convection_diffusion.rs`
/// a whole program.
pub struct Alternating<'a, A: Stencil<N>, B: Stencil<N>, T: Real, const N: usize> {
    first: (A, A::Params<T>),
    second: (B, B::Params<T>),
    inputs: Vec<(String, &'a Grid<T, N>)>,
    backend: Backend,
    schedule: Schedule,
    cuda: CudaOptions,
    on_step: Option<Box<StepFn<'a>>>,
    #[cfg(feature = "mpi")]
    distributed: Option<&'a crate::distributed::Subdomain<'a, N>>,
}

/// What [`Alternating::run`] did.
#[derive(Clone, Debug)]
pub struct StepsReport {
    /// Steps run (each a sweep of both stencils).
    pub steps: usize,
    /// Time of the steps alone (not the upload, the compile or the download).
    pub wall: Duration,
    /// Where they ran.
    pub backend: crate::report::RanOn,
    /// The schedule both sweeps ran with.
    pub schedule: Schedule,
    /// Time spent getting the kernels (compiling or loading them from the cache), on the GPU.
    pub jit: Option<Duration>,
}

impl StepsReport {
    /// Milliseconds per step.
    pub fn ms_per_step(&self) -> f64 {
        self.wall.as_secs_f64() * 1e3 / self.steps.max(1) as f64
    }
}

impl std::fmt::Display for StepsReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} steps in {:.3} s ({:.3} ms per step), {}, {}",
            self.steps,
            self.wall.as_secs_f64(),
            self.ms_per_step(),
            self.schedule,
            self.backend
        )?;
        if let Some(jit) = self.jit {
            write!(f, ", kernels ready in {:.1} ms", jit.as_secs_f64() * 1e3)?;
        }
        Ok(())
    }
}

impl<'a, A: Stencil<N>, B: Stencil<N>, T: Real, const N: usize> Alternating<'a, A, B, T, N> {
    /// `first` with its parameters, then `second` with its, every step; on the CPU and the
    /// default schedule (`Auto`: a wavefront with the default tile) until told otherwise.
    pub fn new(first: A, first_params: A::Params<T>, second: B, second_params: B::Params<T>) -> Self {
        Self {
            first: (first, first_params),
            second: (second, second_params),
            inputs: Vec::new(),
            backend: Backend::Cpu,
            schedule: Schedule::Auto,
            cuda: CudaOptions::default(),
            on_step: None,
            #[cfg(feature = "mpi")]
            distributed: None,
        }
    }

    /// A read-only field by name; a field of that name is given to every stencil that has one.
    pub fn input(mut self, name: &str, grid: &'a Grid<T, N>) -> Self {
        self.inputs.push((name.to_string(), grid));
        self
    }

    /// Where the steps run.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// `Plain` (the sequential sweeps), `Wavefront { tile }` or `Auto`.
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = schedule;
        self
    }

    /// How the GPU runs the sweeps (mode and tuning); the environment's overrides
    /// ([`CudaOptions::with_environment`]) apply on top. Ignored on the CPU.
    pub fn cuda(mut self, options: CudaOptions) -> Self {
        self.cuda = options;
        self
    }

    /// The GPU's floating-point mode.
    pub fn mode(mut self, mode: crate::cuda::Mode) -> Self {
        self.cuda.mode = mode;
        self
    }

    /// Called after steps: every step on the CPU, at most a hundred times in a run on the GPU
    /// (which waits for the device each time).
    pub fn on_step(mut self, callback: impl FnMut(usize, Duration) + 'a) -> Self {
        self.on_step = Some(Box::new(callback));
        self
    }

    /// Runs the steps on this rank's part of a grid cut among MPI ranks: `u` and the
    /// read-only fields are the rank's local grids
    /// ([`local_shape`](crate::distributed::Decomposition::local_shape)), and every rank
    /// calls [`run`](Self::run) with the same steps. Split the grid with the stencil of the
    /// larger radius along axis 0. Each sweep is pipelined across the ranks as a sweep
    /// stencil's is under [`Solver::distributed`](crate::Solver::distributed), and every
    /// rank's planes end bit for bit as one process's `Plain` steps leave them (in exact
    /// mode on the GPU). Stencils sweeping the cut axis in opposite directions (the
    /// alternate-triangular scheme's) do not overlap across ranks: a step then takes as
    /// long as in one process, with the grid spread over the ranks' memory
    /// (`docs/scaling.md`). Any difference between the ranks' problems, and any input error
    /// on any rank, is an error on every rank before the first step. The report's time is
    /// the slowest rank's.
    ///
    /// `examples/08_distributed.rs` (`--schedule symmetric`) runs symmetric Gauss–Seidel
    /// steps this way.
    #[cfg(feature = "mpi")]
    pub fn distributed(mut self, subdomain: &'a crate::distributed::Subdomain<'a, N>) -> Self {
        self.distributed = Some(subdomain);
        self
    }

    /// Runs `steps` steps on `u` (its boundary layer holds the Dirichlet values).
    ///
    /// **Errors**: [`Error::InvalidSchedule`] when a stencil is not a sweep or the schedule
    /// is not one a sweep runs; the input errors of [`Solver::run`](crate::Solver::run);
    /// [`Error::NoGpu`] or [`Error::Launch`] from the GPU; in a distributed run, the errors
    /// of `Solver::distributed` (feature `mpi`). `u` is unchanged on every
    /// error found before the first step.
    pub fn run(&mut self, u: &mut Grid<T, N>, steps: usize) -> Result<StepsReport> {
        #[cfg(feature = "mpi")]
        if let Some(subdomain) = self.distributed {
            return self.run_distributed(subdomain, u, steps);
        }
        let schedule = self.schedule_for(A::META)?;
        self.schedule_for(B::META)?;
        let shape = u.shape();
        Layout::new(A::META, shape)?;
        Layout::new(B::META, shape)?;
        let fields = (resolve_inputs::<A, T, N>(&self.inputs, shape)?, resolve_inputs::<B, T, N>(&self.inputs, shape)?);
        let device = match self.backend {
            Backend::Cpu => None,
            Backend::Cuda { device } => Some(device),
            Backend::Auto => match crate::cuda::unusable_reason(0) {
                None => Some(0),
                Some(reason) => {
                    log::warn!("running `{}` and `{}` on the CPU: {reason}", A::META.name, B::META.name);
                    None
                }
            },
        };
        let radius = A::META.radius[0].max(B::META.radius[0]);
        let place =
            Place { peers: &Alone, planes: Planes::whole(shape[0], radius), global: shape, transport: Transport::Host };
        self.steps_on(u, place, FieldPair { first: &fields.0, second: &fields.1 }, device, schedule, steps)
    }

    /// The steps on `u` in `place`, on the CPU (`device` `None`) or on a GPU.
    fn steps_on<P: Peers>(
        &mut self,
        u: &mut Grid<T, N>,
        place: Place<'_, P, N>,
        fields: FieldPair<'_, T>,
        device: Option<usize>,
        schedule: Schedule,
        steps: usize,
    ) -> Result<StepsReport> {
        let peers = place.peers;
        let plane_len = place.plane_len();
        let halos = Exchange::for_planes(&place.planes, plane_len)?;
        let stencils = [on_cut(A::META), on_cut(B::META)];
        let stop = StopRule::fixed(2 * steps);
        let (params_a, params_b) = (self.first.1, self.second.1);
        let on_step = self.on_step.as_deref_mut();
        match device {
            None => {
                let engine = CpuEngine::<A, T, N>::new(u, fields.first.to_vec(), params_a, schedule, false)?
                    .with_sweeps::<B>(fields.second.to_vec(), params_b);
                let swept = Swept::new(engine, place, halos, stop, &stencils)?;
                let wall = stepping::<A, P, _, T, N>(
                    Stepping { swept, on_step, every: 1, steps, started: Instant::now() },
                    peers,
                )?;
                let backend = crate::dispatch::ran_on(peers, None);
                Ok(StepsReport { steps, wall, backend, schedule, jit: None })
            }
            Some(device) => {
                let gpu = peers.all_ok(crate::cuda::Gpu::open(device))?;
                let backend = crate::dispatch::ran_on(peers, Some(&gpu));
                let options = self.cuda.with_environment()?;
                let build = Build {
                    schedule,
                    options,
                    jacobi: false,
                    alone: !place.planes.has_neighbour(),
                    halos: Some(&halos),
                    fill: Vec::new(),
                    cycle_edges: [0; 3],
                };
                let engine = GpuEngine::<A, T, N>::new(u, fields.first, &params_a, gpu, build)
                    .and_then(|engine| engine.with_sweeps::<B>(fields.second, &params_b, schedule, &options));
                let engine = peers.all_ok(engine)?;
                let (jit, tile) = (engine.jit.time, engine.sweep_tile().unwrap_or(1));
                let swept = Swept::new(engine, place, halos, stop, &stencils)?;
                // The device is waited for before each callback: at most a hundred of them.
                let every = steps.div_ceil(100).max(1);
                let wall = stepping::<A, P, _, T, N>(
                    Stepping { swept, on_step, every, steps, started: Instant::now() },
                    peers,
                )?;
                let schedule = match schedule {
                    Schedule::Wavefront { .. } => schedule,
                    _ => Schedule::Wavefront { tile },
                };
                Ok(StepsReport { steps, wall, backend, schedule, jit: Some(jit) })
            }
        }
    }

    /// [`run`](Self::run) on this rank's part of the grid.
    #[cfg(feature = "mpi")]
    fn run_distributed(
        &mut self,
        subdomain: &'a crate::distributed::Subdomain<'a, N>,
        u: &mut Grid<T, N>,
        steps: usize,
    ) -> Result<StepsReport> {
        use crate::distributed::fingerprint;
        use crate::solver::{backend_kind, check_part, param_bits, rank_device};
        let prepared = (|| {
            let schedule = self.schedule_for(A::META)?;
            self.schedule_for(B::META)?;
            let radius = A::META.radius[0].max(B::META.radius[0]);
            if subdomain.radius() < radius {
                return Err(Error::Mpi {
                    reason: format!(
                        "the grid was split for radius {} along axis 0, and `{}` and `{}` reach {radius} planes: \
                         split with the stencil of the larger radius",
                        subdomain.radius(),
                        A::META.name,
                        B::META.name
                    ),
                });
            }
            check_part(u, subdomain)?;
            Layout::new(A::META, subdomain.global_shape())?;
            Layout::new(B::META, subdomain.global_shape())?;
            let shape = u.shape();
            let fields =
                (resolve_inputs::<A, T, N>(&self.inputs, shape)?, resolve_inputs::<B, T, N>(&self.inputs, shape)?);
            let device = rank_device(self.backend, subdomain, A::META.name);
            Ok((schedule, fields, device))
        })();
        let mut names: Vec<&str> = self.inputs.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        let params = (param_bits::<A, T, N>(&self.first.1), param_bits::<B, T, N>(&self.second.1));
        let items = [
            ("the stencils", fingerprint(&(A::META.name, A::CUDA_SOURCE, B::META.name, B::CUDA_SOURCE))),
            ("the precision", T::BYTES as u64),
            ("the input fields", fingerprint(&names)),
            ("the scalar parameters", fingerprint(&params)),
            ("the number of steps", steps as u64),
            ("the schedule", fingerprint(&self.schedule.to_string())),
            ("the backend", fingerprint(&(backend_kind(self.backend), self.cuda.mode.name()))),
        ];
        let (schedule, fields, device) = subdomain.mpi().agree(prepared, &items)?;
        let place = Place {
            peers: subdomain.mpi(),
            planes: subdomain.planes(),
            global: subdomain.global_shape(),
            transport: subdomain.transport(),
        };
        self.steps_on(u, place, FieldPair { first: &fields.0, second: &fields.1 }, device, schedule, steps)
    }

    /// The schedule a sweep of `meta` runs: `Auto` resolved, and an error for schedules that
    /// are not sweeps'.
    fn schedule_for(&self, meta: &'static crate::StencilMeta) -> Result<Schedule> {
        if !meta.is_sweep() {
            return Err(Error::InvalidSchedule {
                schedule: self.schedule.to_string(),
                stencil: meta.name,
                reason: "alternating steps are made of `sweep(…)` stencils".into(),
            });
        }
        self.schedule.resolve(meta)
    }
}

/// The direction in which a sweep stencil sweeps the cut axis, and its radius there.
fn on_cut(meta: &'static StencilMeta) -> (Direction, usize) {
    (meta.sweep.as_ref().map_or(Direction::Ascending, |s| s.directions[0]), meta.radius[0])
}

/// Alternating steps: the sweeps of the two stencils in turn, `on_step` called every `every`
/// steps and after the last (after waiting for the device).
struct Stepping<'p, 'c, 'd, P: Peers, E, T: Real, const N: usize> {
    swept: Swept<'p, P, E, T, N>,
    on_step: Option<&'c mut StepFn<'d>>,
    every: usize,
    steps: usize,
    started: Instant,
}

impl<P: Peers, E: Engine<T, N>, T: Real, const N: usize> Advance<T, N> for Stepping<'_, '_, '_, P, E, T, N> {
    fn advance(&mut self, iteration: usize) -> Result<Option<Unit>> {
        let unit = self.swept.advance(iteration)?;
        // A step is two sweeps: one of each stencil.
        if let Some(done) = unit.filter(|u| u.end % 2 == 0).map(|u| u.end / 2)
            && let Some(callback) = self.on_step.as_deref_mut()
            && (done % self.every == 0 || done == self.steps)
        {
            self.swept.engine.wait()?;
            callback(done, self.started.elapsed());
        }
        Ok(unit)
    }

    fn measured(&mut self, unit: &Unit) -> Result<Option<(f64, f64)>> {
        self.swept.measured(unit)
    }

    fn settle(&mut self) -> Result<()> {
        self.swept.settle()
    }

    fn host(&mut self) -> Result<&mut Grid<T, N>> {
        self.swept.host()
    }

    fn wait(&mut self) -> Result<()> {
        self.swept.wait()
    }

    fn finish(&mut self) -> Result<()> {
        self.swept.finish()
    }
}

/// Runs the steps of `stepping` (stencil `A` first) by the loop; returns their time, the
/// slowest rank's.
fn stepping<A: Stencil<N>, P: Peers, E: Engine<T, N>, T: Real, const N: usize>(
    mut stepping: Stepping<'_, '_, '_, P, E, T, N>,
    peers: &P,
) -> Result<Duration> {
    let mut monitor = Monitor::start(StopRule::fixed(2 * stepping.steps), 0, None);
    stepping.started = Instant::now();
    let ran = drive::<A, T, N>(&mut monitor, &mut stepping, None)?;
    Ok(Duration::from_secs_f64(peers.max(ran.wall.as_secs_f64())))
}
