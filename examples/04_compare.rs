//! One problem through several variants — backend × schedule × precision × mode — and how
//! each differs from the first (the CPU twin in f64): max absolute and relative difference,
//! bitwise equality, and the time of each. GPU variants are listed as not run when no GPU
//! is usable.
//!
//! ```text
//! cargo run --release --example 04_compare
//! cargo run --release --example 04_compare -- --size 96 --iterations 500
//! ```

mod common;

use std::process::ExitCode;

use clap::Parser;
use stencil::builtin::Jacobi7;
use stencil::compare::{Precision, Problem, Variant, compare};
use stencil::cuda::Mode;
use stencil::prelude::*;

/// Compare CPU and GPU variants of 7-point Jacobi on a random problem.
#[derive(Parser)]
struct Args {
    /// Points per axis, boundary included.
    #[arg(long, default_value_t = 64, value_parser = common::at_least(3))]
    size: usize,
    /// Iterations every variant runs.
    #[arg(long, default_value_t = 200, value_parser = common::at_least(1))]
    iterations: usize,
}

fn main() -> ExitCode {
    common::exit(run(common::parse()))
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let n = args.size;
    let h = 1.0 / (n - 1) as f64;
    let mut initial = Grid::<f64, 3>::random_uniform([n; 3], -1.0, 1.0, 1)?;
    initial.set_boundary([1; 3], |_| 0.0);
    let problem = Problem {
        initial,
        inputs: vec![("f".into(), Grid::<f64, 3>::random_uniform([n; 3], -1.0, 1.0, 2)?)],
        params: vec![("h2".into(), h * h)],
        iterations: args.iterations,
    };
    let variant = |backend, schedule, precision, mode| Variant { backend, schedule, precision, mode };
    let gpu = Backend::Cuda { device: 0 };
    let variants = [
        variant(Backend::Cpu, Schedule::Plain, Precision::F64, Mode::Exact),
        variant(Backend::Cpu, Schedule::Plain, Precision::F32, Mode::Exact),
        variant(gpu, Schedule::Plain, Precision::F64, Mode::Exact),
        variant(gpu, Schedule::Tiled, Precision::F64, Mode::Exact),
        variant(gpu, Schedule::Plain, Precision::F64, Mode::Fast),
        variant(gpu, Schedule::Plain, Precision::F32, Mode::Exact),
        variant(gpu, Schedule::Plain, Precision::F32, Mode::Fast),
    ];
    println!("jacobi7 on {n}³, {} iterations\n", args.iterations);
    print!("{}", compare(Jacobi7, &problem, &variants)?);
    Ok(())
}
