//! Heat in a closed box: explicit steps of ∂u/∂t = κΔu on a 3-D grid whose six walls are
//! insulated (Neumann: zero flux), so no heat leaves and the total stays what it was, to
//! rounding. A hot cube in one corner spreads until the box is uniform; the run prints the
//! total heat, its drift and the hottest point every `--every` steps (the solver's observer),
//! and writes a PNG of the middle plane at the end. On the GPU when one is usable.
//!
//! ```text
//! cargo run --release --example 10_heat_box
//! cargo run --release --example 10_heat_box -- --size 256 --steps 5000 --every 1000 --backend cuda
//! ```

mod common;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use stencil::prelude::*;

stencil! {
    /// One explicit step of the heat equation; `k` = κ·Δt/h², stable up to 1/6.
    fn heat(mut u: Field3, k: Real) -> Real {
        u[0, 0, 0] + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1]
            - 6.0 * u[0, 0, 0])
    }
}

#[derive(Parser)]
#[command(about = "Heat spreading in a closed box with insulated (Neumann) walls")]
struct Args {
    /// Interior points per axis (the grid has the two wall layers more).
    #[arg(long, default_value_t = 96, value_parser = common::int(2..=2048))]
    size: usize,
    /// Time steps.
    #[arg(long, default_value_t = 2000, value_parser = common::int(1..=100_000_000))]
    steps: usize,
    /// Steps between two reports.
    #[arg(long, default_value_t = 500, value_parser = common::int(1..=100_000_000))]
    every: usize,
    /// κ·Δt/h²: above 1/6 the explicit step is unstable.
    #[arg(long, default_value_t = 0.15, value_parser = common::real(0.0, 1.0 / 6.0 + 1e-12))]
    k: f64,
    /// Where to run.
    #[arg(long, value_enum, default_value_t = Where::Auto)]
    backend: Where,
    /// Where to write the PNG of the middle plane at the end.
    #[arg(long, default_value = "heat_box.png", value_parser = common::output("png"))]
    png: PathBuf,
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

/// The heat in the interior of `u` (the walls' layers mirror it and hold none).
fn total(u: &Grid<f64, 3>) -> f64 {
    let n = u.shape()[0];
    u.view().slice(ndarray::s![1..n - 1, 1..n - 1, 1..n - 1]).sum()
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let n = args.size + 2;
    // A hot cube, an eighth of the box on each axis, in the corner at the origin.
    let hot = args.size / 8 + 1;
    let mut u = Grid::<f64, 3>::from_fn([n; 3], |[i, j, k]| if i.max(j).max(k) <= hot { 1.0 } else { 0.0 })?;
    let start = total(&u);
    println!("{n}³ grid, insulated walls, κΔt/h² = {}, {} steps; total heat {start:.6}", args.k, args.steps);
    println!("| step | total heat | relative drift | hottest |");
    println!("|---:|---:|---:|---:|");
    let backend = match args.backend {
        Where::Auto => Backend::Auto,
        Where::Cpu => Backend::Cpu,
        Where::Cuda => Backend::Cuda { device: 0 },
    };
    let mut drift = 0.0f64;
    let report = Solver::new(Heat)
        .param("k", args.k)
        .boundaries(Boundary::Neumann)
        .backend(backend)
        .max_iterations(args.steps)
        .observe(args.every, |step, u: &Grid<f64, 3>| {
            let heat = total(u);
            drift = drift.max(((heat - start) / start).abs());
            let hottest = u.as_slice().iter().copied().fold(f64::MIN, f64::max);
            println!("| {step} | {heat:.12} | {:.1e} | {hottest:.4} |", (heat - start) / start);
        })
        .run(&mut u)?;
    let end = total(&u);
    drift = drift.max(((end - start) / start).abs());
    println!();
    println!("{report}");
    println!("largest relative drift of the total heat: {drift:.1e}");
    u.write_png(&args.png, Slice::Middle { axis: 0 }, ColorMap::Viridis)?;
    println!("wrote {} (the middle plane across axis 0)", args.png.display());
    Ok(())
}
