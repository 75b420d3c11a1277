//! What a run did: iterations, residual history, time and throughput.

use std::fmt;
use std::time::Duration;

/// Where a run's GPU module came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Compiled by NVRTC in this run.
    Compiled,
    /// Read from the disk cache.
    Disk,
    /// Found in this process's memory.
    Memory,
}

/// One residual check.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResidualSample {
    /// The iteration after which it was measured.
    pub iteration: usize,
    /// ρ in the L∞ norm.
    pub max: f64,
    /// ρ in the L2 norm.
    pub l2: f64,
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The tolerance was met.
    Converged,
    /// The iteration limit was reached first.
    IterationLimit,
    /// A relative tolerance, met at the first check because the initial guess is already a
    /// fixed point (ρ(u⁰) = 0, so no iterate can reduce it).
    StartSatisfies,
}

/// Progress handed to the callback after every residual check.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Iterations done.
    pub iteration: usize,
    /// The iteration limit, if any.
    pub max_iterations: Option<usize>,
    /// The residual in the tolerance's norm (L∞ when no tolerance is set); `None` where the
    /// check only looked for non-finite values.
    pub residual: Option<f64>,
    /// Time since the run started.
    pub elapsed: Duration,
    /// Interior points updated per second so far, in 10⁹.
    pub gpoints_per_s: f64,
}

/// Progress of an out-of-core pass, handed to the callback of
/// [`Solver::on_slab`](crate::Solver::on_slab) after every slab is written back.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlabProgress {
    /// The iterate the pass started from.
    pub pass_start: usize,
    /// The iterate the pass computes.
    pub pass_end: usize,
    /// Slabs written back in this pass (1 to `slabs`).
    pub slab: usize,
    /// Slabs per pass.
    pub slabs: usize,
    /// Time since the run started.
    pub elapsed: Duration,
}

/// Where a run's iterations ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Device {
    /// The rayon CPU twin, on `threads` threads.
    Cpu {
        /// Threads of rayon's pool.
        threads: usize,
    },
    /// A CUDA device.
    Cuda {
        /// Its ordinal.
        device: usize,
        /// Its name, as the driver gives it.
        name: String,
    },
}

/// Where a run went: the device of this process and, for a distributed run, this rank
/// among the ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RanOn {
    /// This process's device.
    pub device: Device,
    /// `(rank, ranks)` of a distributed run; `None` in one process.
    pub rank: Option<(usize, usize)>,
    /// Whether this rank sent and received its ghost planes device to device over NCCL
    /// (else through host memory, when it exchanged any).
    pub nccl: bool,
}

impl fmt::Display for RanOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((rank, ranks)) = self.rank {
            let via = if self.nccl { " (ghost planes over NCCL)" } else { "" };
            write!(f, "mpi rank {rank} of {ranks}{via}, ")?;
        }
        match &self.device {
            Device::Cpu { threads } => write!(f, "cpu ({threads} threads)"),
            Device::Cuda { device, name } => write!(f, "cuda device {device} ({name})"),
        }
    }
}

/// The result of [`Solver::run`](crate::Solver::run).
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The stencil's name.
    pub stencil: &'static str,
    /// `"f32"` or `"f64"`.
    pub precision: &'static str,
    /// Where it ran.
    pub backend: RanOn,
    /// The schedule that ran (never `Auto`).
    pub schedule: crate::Schedule,
    /// With `Schedule::Auto`: why [`schedule`](Self::schedule) was chosen (on the GPU, the
    /// candidates' measured throughputs).
    pub schedule_choice: Option<String>,
    /// The grid's shape, boundary included.
    pub shape: Vec<usize>,
    /// Points updated per iteration.
    pub interior_points: usize,
    /// Iterations done.
    pub iterations: usize,
    /// Why the run ended.
    pub stop: StopReason,
    /// The tolerance in force, if any.
    pub tolerance: Option<crate::Tolerance>,
    /// What the checks measured.
    pub residual: crate::Residual,
    /// Every residual check, in order. For Jacobi stencils the sample at iteration k is
    /// ‖uᵏ − uᵏ⁻¹‖ = ρ(uᵏ⁻¹), or ‖uᵏ − uʲ‖ since the previous check j with
    /// [`Residual::SinceLastCheck`](crate::Residual); for sweep stencils it is ρ(uᵏ),
    /// measured by one plain application.
    pub residuals: Vec<ResidualSample>,
    /// Wall time of the iterations (set-up excluded).
    pub wall: Duration,
    /// Time spent getting the GPU module (compiling it, or reading a cache) and loading
    /// it, and where it came from; `None` on the CPU.
    pub jit: Option<(std::time::Duration, Origin)>,
    /// Bytes one plain pass moves per point (every field read once, the unknown written
    /// once).
    pub bytes_per_point: usize,
    /// The iteration a resumed run started from (its checkpoint's); `iterations` counts
    /// from 0, throughput only this run's iterations.
    pub resumed_at: Option<usize>,
    /// For an out-of-core run on the GPU: the run-time model's constants, its prediction
    /// for this run, and its best configuration under the same memory limit.
    pub model: Option<crate::plan::model::ModelReport>,
}

impl Report {
    /// The last residual sample, if any check measured one.
    pub fn final_residual(&self) -> Option<&ResidualSample> {
        self.residuals.last()
    }

    /// Interior points updated per second, in 10⁹.
    pub fn gpoints_per_s(&self) -> f64 {
        let secs = self.wall.as_secs_f64();
        let iterations = self.iterations - self.resumed_at.unwrap_or(0);
        if secs > 0.0 { (self.interior_points * iterations) as f64 / secs / 1e9 } else { 0.0 }
    }

    /// Effective bandwidth: [`bytes_per_point`](Self::bytes_per_point) × points per second,
    /// in GB/s (10⁹ bytes).
    pub fn effective_gb_per_s(&self) -> f64 {
        self.gpoints_per_s() * self.bytes_per_point as f64
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shape: Vec<String> = self.shape.iter().map(ToString::to_string).collect();
        let stop = match (self.stop, self.tolerance) {
            (StopReason::Converged, Some(t)) if self.residual == crate::Residual::SinceLastCheck => {
                format!("converged: {t}, ρ the change since the last check")
            }
            (StopReason::Converged, Some(t)) => format!("converged: {t}"),
            (StopReason::Converged, None) => "converged".into(),
            (StopReason::IterationLimit, _) => "iteration limit reached".into(),
            (StopReason::StartSatisfies, _) => "the initial guess is already a fixed point: ρ₀ = 0".into(),
        };
        writeln!(f, "stencil      {} ({}) on {}", self.stencil, self.precision, shape.join("×"))?;
        writeln!(f, "backend      {}, schedule {}", self.backend, self.schedule)?;
        if let Some(reason) = &self.schedule_choice {
            writeln!(f, "auto         {reason}")?;
        }
        match self.resumed_at {
            Some(at) => writeln!(f, "iterations   {} ({stop}; resumed at {at})", self.iterations)?,
            None => writeln!(f, "iterations   {} ({stop})", self.iterations)?,
        }
        match self.final_residual() {
            Some(r) => {
                let since =
                    if self.residual == crate::Residual::SinceLastCheck { ", since the last check" } else { "" };
                writeln!(f, "residual     L∞ {:.4e}, L2 {:.4e} (at iteration {}{since})", r.max, r.l2, r.iteration)?
            }
            None => writeln!(f, "residual     not measured")?,
        }
        writeln!(f, "wall time    {:.3} s", self.wall.as_secs_f64())?;
        if let Some((time, origin)) = self.jit {
            let origin = match origin {
                Origin::Compiled => "compiled by NVRTC",
                Origin::Disk => "from the disk cache",
                Origin::Memory => "from the memory cache",
            };
            writeln!(f, "JIT          {:.1} ms ({origin}; not in the wall time)", time.as_secs_f64() * 1e3)?;
        }
        if let Some(model) = &self.model {
            let p = model.predicted;
            writeln!(
                f,
                "model        predicted {:.3} s overlapped, {:.3} s sequential, {:.3} s by paper 000's form; measured {:.3} s",
                p.overlapped.as_secs_f64(),
                p.sequential.as_secs_f64(),
                p.paper.as_secs_f64(),
                self.wall.as_secs_f64()
            )?;
            let c = model.costs;
            let (height, slab, time) = model.best;
            writeln!(
                f,
                "             probes: up {:.1} GB/s, down {:.1} GB/s, device copy {:.0} GB/s, τa {:.3} ns/point; \
                 the model's best here: height {height}, slab {slab} ({:.3} s)",
                1e-9 / c.up,
                1e-9 / c.down,
                1e-9 / c.device_copy,
                c.update * 1e9,
                time.as_secs_f64()
            )?;
            if let Some((inner, update)) = model.streaming {
                writeln!(f, "             {inner} timed too: {:.4} ns/point and iteration", update * 1e9)?;
            }
        }
        write!(
            f,
            "throughput   {:.3} Gpoint/s, {:.1} GB/s effective ({} B/point)",
            self.gpoints_per_s(),
            self.effective_gb_per_s(),
            self.bytes_per_point
        )
    }
}
