//! The driver shared by `01_poisson3d` and `02_poisson2d`: the command line, the papers'
//! problem in N dimensions (8-octave Perlin right-hand side rescaled to [−1, 1], uniform
//! random start in [−1, 1], zero boundary, h = 1/(N−1)), a progress bar, and the report.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use noise::{Fbm, MultiFractal, NoiseFn, Perlin};
use stencil::prelude::*;

/// Solve −Δu = f on the unit square or cube (zero Dirichlet boundary) with Jacobi.
#[derive(Parser)]
pub struct Args {
    /// Points per axis, boundary included (h = 1/(N−1)); the example sets the default.
    #[arg(long)]
    size: Option<usize>,
    /// Stop once ‖uᵏ⁺¹ − uᵏ‖∞ is below this.
    #[arg(long, default_value_t = 1e-5)]
    tolerance: f64,
    /// Element type.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    precision: Precision,
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// How to run.
    #[arg(long, value_enum, default_value_t = ScheduleArg::Plain)]
    schedule: ScheduleArg,
    /// Floating-point mode of the GPU kernels.
    #[arg(long, value_enum, default_value_t = ModeArg::Fast)]
    mode: ModeArg,
    /// Check the residual every this many iterations.
    #[arg(long, default_value_t = 100)]
    check_every: usize,
    /// Stop after this many iterations at most.
    #[arg(long)]
    max_iterations: Option<usize>,
    /// Seed of the noise in f and of the initial guess.
    #[arg(long, default_value_t = 1)]
    seed: u32,
    /// Write the solution (boundary included) to this `.npy` file.
    #[arg(long)]
    npy: Option<std::path::PathBuf>,
    /// Draw the solution (2-D) or its middle plane along axis 0 (3-D) to this PNG file.
    #[arg(long)]
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
    /// One Jacobi pass over memory per iteration.
    Plain,
    /// One Jacobi pass per iteration by the shared-memory tiled kernel (the plain pass on the CPU).
    Tiled,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    /// NVRTC's defaults: multiply–adds may be fused.
    Fast,
    /// No fused multiply–adds: the GPU gives the CPU twin's bits.
    Exact,
}

/// Parses the command line and solves the papers' problem with `stencil` (a Jacobi update
/// for −Δu = f with the fields `u`, `f` and the parameter `h2`).
pub fn main<S: Stencil<N>, const N: usize>(stencil: S, default_size: usize) -> ExitCode
where
    Fbm<Perlin>: NoiseFn<f64, N>,
{
    let args = Args::parse();
    let result = match args.precision {
        Precision::F32 => solve::<S, f32, N>(stencil, &args, default_size),
        Precision::F64 => solve::<S, f64, N>(stencil, &args, default_size),
    };
    // `main -> Result` would print the error's `Debug`; its `Display` is the readable one.
    result.map_or_else(
        |e| {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        },
        |()| ExitCode::SUCCESS,
    )
}

fn solve<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    args: &Args,
    default_size: usize,
) -> Result<(), Box<dyn std::error::Error>>
where
    Fbm<Perlin>: NoiseFn<f64, N>,
{
    let n = args.size.unwrap_or(default_size);
    if n < 3 {
        return Err(format!("--size must be at least 3 (one interior point per axis), not {n}").into());
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
            ScheduleArg::Plain => Schedule::Plain,
            ScheduleArg::Tiled => Schedule::Tiled,
        })
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
