//! The driver shared by `01_poisson3d` and `02_poisson2d`: the command line, the papers'
//! problem in N dimensions (8-octave Perlin right-hand side rescaled to [−1, 1], uniform
//! random start in [−1, 1], zero boundary, h = 1/(N−1)), a progress bar, and the report.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use noise::{Fbm, MultiFractal, NoiseFn, Perlin};
use stencil::prelude::*;

use crate::common;

/// Solve −Δu = f on the unit square or cube (zero Dirichlet boundary) with Jacobi.
#[derive(Parser)]
pub struct Args {
    /// Points per axis, boundary included (h = 1/(N−1)).
    #[arg(long, value_parser = common::at_least(3))]
    size: usize,
    /// Stop once ‖uᵏ⁺¹ − uᵏ‖∞ is below this (u and its steps are of order 1 at most).
    #[arg(long, default_value_t = 1e-5, value_parser = common::real(0.0, 1.0))]
    tolerance: f64,
    /// Element type.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    precision: Precision,
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// How to run.
    #[arg(long, value_enum, default_value_t = ScheduleArg::Auto)]
    schedule: ScheduleArg,
    /// What the tolerance is compared with.
    #[arg(long, value_enum, default_value_t = ResidualArg::Step)]
    residual: ResidualArg,
    /// Floating-point mode of the GPU kernels.
    #[arg(long, value_enum, default_value_t = ModeArg::Fast)]
    mode: ModeArg,
    /// Check the residual every this many iterations (a run stops only at a check).
    #[arg(long, default_value_t = 100, value_parser = common::int(1..=stencil::MAX_UNLIMITED_CHECK_EVERY))]
    check_every: usize,
    /// Stop after this many iterations at most.
    #[arg(long, value_parser = common::at_least(1))]
    max_iterations: Option<usize>,
    /// Seed of the noise in f and of the initial guess.
    #[arg(long, default_value_t = 1, value_parser = common::seed())]
    seed: u32,
    /// Write the solution (boundary included) to this `.npy` file.
    #[arg(long, value_parser = common::output("npy"))]
    npy: Option<std::path::PathBuf>,
    /// Draw the solution (2-D) or its middle plane along axis 0 (3-D) to this PNG file.
    #[arg(long, value_parser = common::output("png"))]
    png: Option<std::path::PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Precision {
    F32,
    F64,
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    /// The GPU when one is usable, else the CPU (with a notice).
    Auto,
    /// The rayon CPU twin.
    Cpu,
    /// CUDA device 0.
    Cuda,
}

#[derive(Clone, Copy, ValueEnum)]
enum ScheduleArg {
    /// The library's choice for this grid and device (the report says what ran).
    Auto,
    /// One Jacobi pass over memory per iteration.
    Plain,
    /// One Jacobi pass per iteration by the shared-memory tiled kernel (the plain pass on the CPU).
    Tiled,
}

/// `--residual`: what the tolerance is compared with.
#[derive(Clone, Copy, ValueEnum)]
pub enum ResidualArg {
    /// ‖uᵏ⁺¹ − uᵏ‖∞ at each check: what one more iteration changes.
    Step,
    /// ‖uᵏ − uʲ‖∞, j the previous check: the change over a check period, as paper 000's
    /// Algorithm 1 checks it after each pyramid pass (its counts agree with this reading).
    SinceLastCheck,
}

impl From<ResidualArg> for Residual {
    fn from(residual: ResidualArg) -> Self {
        match residual {
            ResidualArg::Step => Residual::Step,
            ResidualArg::SinceLastCheck => Residual::SinceLastCheck,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    /// Multiply–adds may be fused, divisions approximate.
    Fast,
    /// No fused multiply–adds: the GPU gives the CPU twin's bits.
    Exact,
}

/// Parses the command line and solves the papers' problem with `stencil` (a Jacobi update
/// for −Δu = f with the fields `u`, `f` and the parameter `h2`), `default_size` points per axis
/// unless `--size` says otherwise.
pub fn main<S: Stencil<N>, const N: usize>(stencil: S, default_size: usize) -> ExitCode
where
    Fbm<Perlin>: NoiseFn<f64, N>,
{
    let domain = if N == 2 { "square" } else { "cube" };
    let (args, _) = common::parse_with::<Args>(|command| {
        command
            .about(format!("Solve −Δu = f on the unit {domain} (zero Dirichlet boundary) with Jacobi."))
            // Leaked once, so that `--help` shows this example's default (clap keeps `&'static str`s).
            .mut_arg("size", |arg| arg.required(false).default_value(&*default_size.to_string().leak()))
    });
    common::exit(match args.precision {
        Precision::F32 => solve::<S, f32, N>(stencil, &args),
        Precision::F64 => solve::<S, f64, N>(stencil, &args),
    })
}

/// The smallest `--tolerance` that a run without an iteration limit is sure to meet in `T`:
/// |u| stays below 0.1, where one unit in the last place is 7·10⁻⁹ in f32 and 1·10⁻¹⁷ in
/// f64, and rounding may keep Jacobi's steps a few units from zero for ever.
pub fn tolerance_floor<T: Real>() -> f64 {
    if T::BYTES == 4 { 1e-7 } else { 1e-15 }
}

fn solve<S: Stencil<N>, T: Real, const N: usize>(stencil: S, args: &Args) -> Result<(), Box<dyn std::error::Error>>
where
    Fbm<Perlin>: NoiseFn<f64, N>,
{
    let n = args.size;
    if args.max_iterations.is_none() && args.tolerance < tolerance_floor::<T>() {
        return Err(format!(
            "--tolerance {:e} may never be met in {}: use at least {:e}, or bound the run with --max-iterations",
            args.tolerance,
            T::NAME,
            tolerance_floor::<T>()
        )
        .into());
    }
    let h = 1.0 / (n - 1) as f64;
    let f = perlin_rhs::<T, N>(n, args.seed)?;
    let mut u = Grid::<T, N>::random_uniform([n; N], T::from_f64(-1.0), T::from_f64(1.0), args.seed.into())?;
    u.set_boundary([1; N], |_| T::ZERO);

    let bar = ProgressBar::new_spinner().with_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}")?);
    bar.enable_steady_tick(Duration::from_millis(100));
    let mut solver = Solver::new(stencil)
        .input("f", &f)
        .param("h2", h * h)
        .backend(match args.backend {
            BackendArg::Auto => Backend::Auto,
            BackendArg::Cpu => Backend::Cpu,
            BackendArg::Cuda => Backend::Cuda { device: 0 },
        })
        .mode(match args.mode {
            ModeArg::Fast => stencil::cuda::Mode::Fast,
            ModeArg::Exact => stencil::cuda::Mode::Exact,
        })
        .schedule(match args.schedule {
            ScheduleArg::Auto => Schedule::Auto,
            ScheduleArg::Plain => Schedule::Plain,
            ScheduleArg::Tiled => Schedule::Tiled,
        })
        .residual(args.residual.into())
        .tolerance(Tolerance::Absolute { norm: Norm::Max, eps: args.tolerance })
        .check_every(args.check_every)
        .on_progress(|p| {
            let residual = p.residual.map_or("–".into(), |r| format!("{r:.3e}"));
            bar.set_message(format!("iteration {}  residual {residual}  {:.3} Gpoint/s", p.iteration, p.gpoints_per_s));
        });
    if let Some(max) = args.max_iterations {
        solver = solver.max_iterations(max);
    }
    let report = solver.run(&mut u);
    bar.finish_and_clear();
    println!("{}", report?);

    if let Some(path) = &args.npy {
        u.write_npy(path)?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.png {
        let slice = if N == 2 { Slice::Whole } else { Slice::Middle { axis: 0 } };
        u.write_png(path, slice, ColorMap::Viridis)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// f: `Fbm<Perlin>` with 8 octaves sampled at the grid points, rescaled to exactly [−1, 1].
pub fn perlin_rhs<T: Real, const N: usize>(n: usize, seed: u32) -> stencil::Result<Grid<T, N>>
where
    Fbm<Perlin>: NoiseFn<f64, N>,
{
    let noise = Fbm::<Perlin>::new(seed).set_octaves(8).set_frequency(4.0);
    let h = 1.0 / (n - 1) as f64;
    let raw = Grid::<f64, N>::from_fn([n; N], |index| noise.get(index.map(|i| i as f64 * h)))?;
    let (lo, hi) =
        raw.as_slice().iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    // (v − lo)/(hi − lo) is exactly 0 at lo and 1 at hi, so the ends are exactly ∓1.
    let span = if hi > lo { hi - lo } else { 1.0 };
    Grid::from_fn([n; N], |index| T::from_f64(2.0 * ((raw[index] - lo) / span) - 1.0))
}
