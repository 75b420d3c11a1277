//! Gray–Scott reaction–diffusion on a periodic square: two chemicals, u fed into the domain
//! and v feeding on it (u + 2v → 3v), diffuse at different rates and grow spots, stripes or
//! mazes from a small seed, depending on the feed and kill rates. Two unknowns updated
//! together by one stencil, on the GPU when one is usable; a PNG of v every `--every` steps
//! (the solver's observer) and of the last step, and a progress bar.
//!
//! `--compare` runs the same steps on the CPU and the GPU in exact mode instead and prints
//! how many points differ (0: bit for bit the same).
//!
//! ```text
//! cargo run --release --example 09_gray_scott
//! cargo run --release --example 09_gray_scott -- --size 1024 --steps 20000 --every 2000 --pattern coral
//! cargo run --release --example 09_gray_scott -- --size 256 --steps 500 --compare
//! ```

mod common;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use stencil::cuda::Mode;
use stencil::prelude::*;

stencil! {
    /// One explicit Euler step of ∂u/∂t = Du Δu − uv² + F(1 − u), ∂v/∂t = Dv Δv + uv² − (F + k)v.
    fn gray_scott(mut u: Field2, mut v: Field2, du: Real, dv: Real, feed: Real, kill: Real, dt: Real)
        -> (Real, Real) {
        let lu = u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4.0 * u[0, 0];
        let lv = v[-1, 0] + v[1, 0] + v[0, -1] + v[0, 1] - 4.0 * v[0, 0];
        let uvv = u[0, 0] * v[0, 0] * v[0, 0];
        (u[0, 0] + dt * (du * lu - uvv + feed * (1.0 - u[0, 0])),
         v[0, 0] + dt * (dv * lv + uvv - (feed + kill) * v[0, 0]))
    }
}

#[derive(Parser)]
#[command(about = "Gray–Scott reaction–diffusion on a periodic square, PNG frames of v")]
struct Args {
    /// Interior points per side (the grid has the two periodic layers more).
    #[arg(long, default_value_t = 512, value_parser = common::int(8..=16384))]
    size: usize,
    /// Time steps.
    #[arg(long, default_value_t = 10_000, value_parser = common::int(1..=100_000_000))]
    steps: usize,
    /// Steps between two frames.
    #[arg(long, default_value_t = 1000, value_parser = common::int(1..=100_000_000))]
    every: usize,
    /// The feed and kill rates.
    #[arg(long, value_enum, default_value_t = Pattern::Mitosis)]
    pattern: Pattern,
    /// Where to run.
    #[arg(long, value_enum, default_value_t = Where::Auto)]
    backend: Where,
    /// The folder for the frames, `frame_<step>.png`.
    #[arg(long, default_value = "gray_scott_frames")]
    frames: PathBuf,
    /// The PNG of the last step.
    #[arg(long, default_value = "gray_scott.png", value_parser = common::output("png"))]
    png: PathBuf,
    /// Run on the CPU and the GPU in exact mode and count the points that differ.
    #[arg(long)]
    compare: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum Pattern {
    /// Spots that divide (F = 0.0367, k = 0.0649).
    Mitosis,
    /// Branching stripes (F = 0.0545, k = 0.062).
    Coral,
    /// A labyrinth (F = 0.029, k = 0.057).
    Maze,
}

#[derive(Clone, Copy, ValueEnum)]
enum Where {
    Auto,
    Cpu,
    Cuda,
}

fn main() -> ExitCode {
    common::exit(run(&common::parse()))
}

/// The parameters of `pattern`: Du = 0.2097, Dv = 0.105, Δt = 1 (grid spacing 1).
fn params(pattern: Pattern) -> GrayScottParams<f32> {
    let (feed, kill) = match pattern {
        Pattern::Mitosis => (0.0367, 0.0649),
        Pattern::Coral => (0.0545, 0.062),
        Pattern::Maze => (0.029, 0.057),
    };
    GrayScottParams { du: 0.2097, dv: 0.105, feed, kill, dt: 1.0 }
}

/// u = 1 and v = 0, but for a square of u = 1/2, v = 1/4 in the middle, roughened by a
/// fixed pattern so that the symmetry breaks.
fn seed(n: usize) -> Result<[Grid<f32, 2>; 2], stencil::Error> {
    let inside = |i: usize, j: usize| i.abs_diff(n / 2) < n / 10 + 1 && j.abs_diff(n / 2) < n / 10 + 1;
    let rough = |i: usize, j: usize| 0.02 * (((i * 37 + j * 91) % 17) as f32 / 17.0);
    let u = Grid::from_fn([n, n], |[i, j]| if inside(i, j) { 0.5 + rough(i, j) } else { 1.0 })?;
    let v = Grid::from_fn([n, n], |[i, j]| if inside(i, j) { 0.25 - rough(j, i) } else { 0.0 })?;
    Ok([u, v])
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let n = args.size + 2;
    if args.compare {
        return compare(args, n);
    }
    let [mut u, mut v] = seed(n)?;
    let backend = match args.backend {
        Where::Auto => Backend::Auto,
        Where::Cpu => Backend::Cpu,
        Where::Cuda => Backend::Cuda { device: 0 },
    };
    std::fs::create_dir_all(&args.frames)?;
    let bar = ProgressBar::new(args.steps as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} steps, {elapsed_precise} [{eta} left]")?);
    let mut written = Ok(0);
    let report = Solver::new(GrayScott)
        .params(params(args.pattern))
        .boundaries(Boundary::Periodic)
        .backend(backend)
        .max_iterations(args.steps)
        .check_every(args.every.min(100))
        .on_progress(|p| bar.set_position(p.iteration as u64))
        .observe_all(args.every, |step, grids| {
            let path = args.frames.join(format!("frame_{step:08}.png"));
            if let Ok(count) = &mut written {
                match grids[1].write_png(&path, Slice::Whole, ColorMap::Viridis) {
                    Ok(()) => *count += 1,
                    Err(e) => written = Err(e),
                }
            }
        })
        .run_system(&mut [&mut u, &mut v])?;
    bar.finish_and_clear();
    let frames = written?;
    println!("{report}");
    write_last(&v, &args.png)?;
    println!("wrote {frames} frames of v to {}/ and the last step to {}", args.frames.display(), args.png.display());
    println!("v: mean {:.5}, largest {:.5}", mean(&v), v.as_slice().iter().copied().fold(f32::MIN, f32::max));
    Ok(())
}

fn write_last(v: &Grid<f32, 2>, path: &Path) -> Result<(), stencil::Error> {
    v.write_png(path, Slice::Whole, ColorMap::Viridis)
}

/// The mean of v's interior.
fn mean(v: &Grid<f32, 2>) -> f64 {
    let n = v.shape()[0];
    let interior = v.view().slice(ndarray::s![1..n - 1, 1..n - 1]).mapv(f64::from);
    interior.sum() / interior.len() as f64
}

/// The same steps on the CPU and the GPU in exact mode; fails when any point differs.
fn compare(args: &Args, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let on = |backend| -> Result<[Grid<f32, 2>; 2], Box<dyn std::error::Error>> {
        let [mut u, mut v] = seed(n)?;
        let report = Solver::new(GrayScott)
            .params(params(args.pattern))
            .boundaries(Boundary::Periodic)
            .backend(backend)
            .mode(Mode::Exact)
            .max_iterations(args.steps)
            .run_system(&mut [&mut u, &mut v])?;
        println!("{report}");
        Ok([u, v])
    };
    let (cpu, gpu) = (on(Backend::Cpu)?, on(Backend::Cuda { device: 0 })?);
    let differ: usize = cpu
        .iter()
        .zip(&gpu)
        .map(|(c, g)| c.as_slice().iter().zip(g.as_slice()).filter(|(a, b)| a.to_bits() != b.to_bits()).count())
        .sum();
    println!("{differ} of {} values differ between the CPU and the GPU after {} steps", 2 * n * n, args.steps);
    if differ > 0 {
        return Err(format!("the CPU and the GPU differ at {differ} values in exact mode").into());
    }
    Ok(())
}
