//! Gauss–Seidel and SOR for −Δu = f, written as user `sweep(…)` stencils, against Jacobi on
//! the same problem: each is iterated until the residual falls by the same factor, and the
//! iteration counts and wall times are printed, with how many times fewer iterations and how
//! many times less time each sweep needs than Jacobi. On the GPU the sweeps run as wavefronts;
//! on either backend they compute the sequential sweep in declared order.
//!
//! ```text
//! cargo run --release --example 07_gauss_seidel -- --size 129
//! cargo run --release --example 07_gauss_seidel -- --size 1025 --backend cuda --methods jacobi,sor
//! ```

mod common;

use std::f64::consts::PI;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use stencil::builtin::Jacobi5;
use stencil::prelude::*;
use stencil::{Norm, Tolerance};

stencil! {
    /// Gauss–Seidel for the 5-point Laplacian: west and south are already new.
    sweep(+, +) fn gauss_seidel5(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
    }

    /// Successive over-relaxation: the Gauss–Seidel value extrapolated by `omega`.
    sweep(+, +) fn sor5(mut u: Field2, f: Field2, h2: Real, omega: Real) -> Real {
        let gs = (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0;
        u[0, 0] + omega * (gs - u[0, 0])
    }
}

#[derive(Parser)]
#[command(about = "Jacobi, Gauss–Seidel and SOR on one Poisson problem")]
struct Args {
    /// Points per axis, boundary included.
    #[arg(long, default_value_t = 129, value_parser = common::int(3..=1_000_000))]
    size: usize,
    /// Reduction of the residual ρ(u) = ‖S(u) − u‖∞ that stops each method.
    #[arg(long, default_value_t = 1e-6, value_parser = common::real(0.0, 1.0))]
    reduce_by: f64,
    /// Where to run: the GPU when one is usable (`auto`), or the one named.
    #[arg(long, value_enum, default_value_t = Where::Auto)]
    backend: Where,
    /// The methods to run, comma-separated (Gauss–Seidel needs the most time on large grids).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Method::Jacobi, Method::GaussSeidel, Method::Sor])]
    methods: Vec<Method>,
}

/// The iterations compared: Jacobi (the library's `jacobi5`) and the two sweeps above.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Method {
    Jacobi,
    GaussSeidel,
    Sor,
}

#[derive(Clone, Copy, ValueEnum)]
enum Where {
    Auto,
    Cpu,
    Cuda,
}

fn main() -> ExitCode {
    common::exit(run(common::parse()))
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let n = args.size;
    let h = 1.0 / (n - 1) as f64;
    // −Δu = f with u = sin(πx)·sin(πy): the discrete solution is within O(h²) of it.
    let f = Grid::<f64, 2>::from_fn([n, n], |[i, j]| {
        2.0 * PI * PI * (PI * i as f64 * h).sin() * (PI * j as f64 * h).sin()
    })?;
    let exact = |[i, j]: [usize; 2]| (PI * i as f64 * h).sin() * (PI * j as f64 * h).sin();
    let backend = match args.backend {
        Where::Auto => Backend::Auto,
        Where::Cpu => Backend::Cpu,
        Where::Cuda => Backend::Cuda { device: 0 },
    };
    let tolerance = Tolerance::Relative { norm: Norm::Max, factor: args.reduce_by };
    let omega = 2.0 / (1.0 + (PI * h).sin());
    println!("−Δu = f on {n} × {n} points, stopping when ρ(u) < {:e}·ρ(u⁰)", args.reduce_by);
    println!("{:<14} {:>11} {:>12} {:>14}", "method", "iterations", "time (s)", "max error");
    // Jacobi needs about n²/2 iterations per decade of reduction: room for about a hundred.
    let limit = 50 * n * n;
    let report = |name: &str, u: &Grid<f64, 2>, r: stencil::Report| {
        let error = u.as_slice().iter().enumerate().map(|(k, v)| (v - exact([k / n, k % n])).abs()).fold(0.0, f64::max);
        let stopped = if r.stop == StopReason::Converged { "" } else { " (iteration limit: not converged)" };
        let wall = r.wall.as_secs_f64();
        println!("{name:<14} {:>11} {wall:>12.3} {error:>14.3e}{stopped}   on {}", r.iterations, r.backend);
        (r.iterations as f64, wall)
    };
    let solve = Problem { f: &f, h2: h * h, backend, tolerance, limit };
    let runs = |method: Method| args.methods.contains(&method);
    let mut jacobi = None;
    let mut others = Vec::new();
    if runs(Method::Jacobi) {
        let (u, r) = solve.with(Jacobi5, &[])?;
        jacobi = Some(report("Jacobi", &u, r));
    }
    if runs(Method::GaussSeidel) {
        let (u, r) = solve.with(GaussSeidel5, &[])?;
        others.push(("Gauss–Seidel", report("Gauss–Seidel", &u, r)));
    }
    if runs(Method::Sor) {
        let (u, r) = solve.with(Sor5, &[("omega", omega)])?;
        others.push(("SOR", report(&format!("SOR ω={omega:.3}"), &u, r)));
    }
    if let Some(jacobi) = jacobi.filter(|_| !others.is_empty()) {
        let against = |(iterations, wall): (f64, f64)| {
            format!(
                "{} and {}",
                ratio(jacobi.0, iterations, "fewer", "iterations"),
                ratio(jacobi.1, wall, "less", "time")
            )
        };
        let each: Vec<String> = others.iter().map(|&(name, cost)| format!("{name} {}", against(cost))).collect();
        println!("against Jacobi: {}", each.join(", "));
    }
    Ok(())
}

/// A method's cost against Jacobi's: "2.0× fewer iterations", "3.8× less time", "26.3× more time".
fn ratio(jacobi: f64, method: f64, less: &str, what: &str) -> String {
    if method <= jacobi {
        format!("{:.1}× {less} {what}", jacobi / method)
    } else {
        format!("{:.1}× more {what}", method / jacobi)
    }
}

/// The one problem every method solves, from u = 0.
struct Problem<'a> {
    f: &'a Grid<f64, 2>,
    h2: f64,
    backend: Backend,
    tolerance: Tolerance,
    limit: usize,
}

impl Problem<'_> {
    /// Iterates `stencil` (with `h2` and `extra` parameters) until the tolerance or the limit.
    fn with<S: Stencil<2>>(
        &self,
        stencil: S,
        extra: &[(&str, f64)],
    ) -> stencil::Result<(Grid<f64, 2>, stencil::Report)> {
        let mut u = Grid::<f64, 2>::zeros(self.f.shape())?;
        let mut solver = Solver::new(stencil)
            .backend(self.backend)
            .input("f", self.f)
            .param("h2", self.h2)
            .tolerance(self.tolerance)
            .max_iterations(self.limit);
        for &(name, value) in extra {
            solver = solver.param(name, value);
        }
        let report = solver.run(&mut u)?;
        Ok((u, report))
    }
}
