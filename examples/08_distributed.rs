//! Poisson's equation −Δu = f on the unit cube, distributed over MPI ranks: the grid is
//! cut along its slowest axis, each rank builds and iterates only its part (on its own GPU,
//! or on the CPU), and ghost planes are exchanged every `--depth` iterations.
//!
//! ```text
//! cargo build --release --features mpi --example 08_distributed
//! mpirun -np 2 target/release/examples/08_distributed --size 129 --depth 2
//! ```
//!
//! With the manufactured solution u = sin πx · sin πy · sin πz it prints the error against
//! it, reduced over the ranks. `--bench K` instead times K and 2K iterations and prints the
//! steady time per iteration and the throughput, for scaling studies (`--weak`: each rank
//! gets `--size` interior planes, so the grid grows with the ranks). `--schedule` chooses
//! what each rank runs: `plain` (the default), `tiled`, `hierarchical` cycles (`--tile`,
//! `--sub`, exact unless `--halo` is less than `--sub`), or `out-of-core` slabs of `--slab`
//! planes (its part stays in host memory and streams through the GPU, one pass of
//! `--depth` iterations between exchanges; pyramids, or with `--skewed` skewed slabs).
//! `--schedule gauss-seidel` solves the same problem by Gauss–Seidel sweeps (a `sweep(+, +, +)`
//! stencil, a wavefront on each rank): the ranks pass each sweep along, and overlap
//! successive sweeps. `--schedule symmetric` runs `--steps` symmetric Gauss–Seidel steps
//! (`Alternating`: a sweep up the cut axis, then one back down): the ranks pass each sweep
//! along and back, and the grid is spread over them, but their sweeps do not overlap.
//!
//! GPU ranks send their ghost planes device to device over NCCL when every rank has a GPU
//! of its own and `libnccl.so` loads, else through host memory (`--transport` chooses;
//! `RUST_LOG=info` says which and why): one rank per GPU, for example on four GPUs
//!
//! ```text
//! mpirun -np 4 --bind-to none target/release/examples/08_distributed --backend cuda \
//!     --precision f32 --size 1024 --depth 4 --transport nccl --bench 60
//! ```

mod common;

use std::f64::consts::PI;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use stencil::Alternating;
use stencil::builtin::Jacobi7;
use stencil::cuda::Mode;
use stencil::distributed::{Mpi, Subdomain, Transport};
use stencil::prelude::*;

stencil! {
    /// Gauss–Seidel for the 7-point Laplacian: the points before this one in the sweep are
    /// already new.
    sweep(+, +, +) fn gauss_seidel7(mut u: Field3, f: Field3, h2: Real) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1] + h2 * f[0, 0, 0]) / 6.0
    }

    /// The same sweep in the opposite order: with the one above, a symmetric Gauss–Seidel
    /// step.
    sweep(-, -, -) fn gauss_seidel7_back(mut u: Field3, f: Field3, h2: Real) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1] + h2 * f[0, 0, 0]) / 6.0
    }
}

/// −Δu = f on the unit cube over MPI ranks.
#[derive(Parser)]
struct Args {
    /// Points per axis, boundary included (with `--weak`, interior planes per rank along
    /// axis 0).
    #[arg(long, default_value_t = 65, value_parser = common::int(3..=1_000_000))]
    size: usize,
    /// Iterations between two exchanges of ghost planes (depth · radius planes a side).
    #[arg(long, default_value_t = 1, value_parser = common::int(1..=1_000_000))]
    depth: usize,
    /// Where each rank runs: `auto` uses GPU (node rank mod GPUs) when one is usable.
    #[arg(long, value_enum, default_value_t = Where::Auto)]
    backend: Where,
    /// Element type.
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    precision: Precision,
    /// Stop when ‖u⁺ − u‖∞ falls below this (u is of order 1).
    #[arg(long, default_value_t = 1e-7, value_parser = common::real(0.0, 1.0), conflicts_with = "bench")]
    tolerance: f64,
    /// Stop after this many iterations at most.
    #[arg(long, default_value_t = 100_000, value_parser = common::at_least(1), conflicts_with = "bench")]
    max_iterations: usize,
    /// Time K and 2K iterations (no tolerance) and print the steady rate.
    #[arg(long, value_name = "K", value_parser = common::int(1..=1_000_000))]
    bench: Option<usize>,
    /// Weak scaling (with `--bench`): the grid has `--size` interior planes per rank along
    /// axis 0.
    #[arg(long, requires = "bench")]
    weak: bool,
    /// The schedule each rank runs its part with (`gauss-seidel`: Gauss–Seidel sweeps
    /// instead of Jacobi iterations).
    #[arg(long, value_enum, default_value_t = Kind::Plain)]
    schedule: Kind,
    /// `--schedule hierarchical`: core tile edge in points.
    #[arg(long, default_value_t = 8, value_parser = common::int(1..=1_000_000))]
    tile: usize,
    /// `--schedule hierarchical`: subiterations per cycle.
    #[arg(long, default_value_t = 2, value_parser = common::int(1..=1_000_000))]
    sub: usize,
    /// `--schedule hierarchical`: halo points around each tile (default: `--sub`, which makes
    /// the cycles exact, and then use `--depth` ≥ `--sub`; fewer make them paper 003's
    /// inexact cycles, and then `--depth` ≥ tile − 1 + halo).
    #[arg(long, value_parser = common::int(1..=1_000_000))]
    halo: Option<usize>,
    /// `--schedule out-of-core`: planes per slab (default: the widest that fits the GPU).
    #[arg(long, value_parser = common::at_least(1))]
    slab: Option<usize>,
    /// `--schedule out-of-core`: skewed slabs (each plane computed once per iteration)
    /// instead of pyramids.
    #[arg(long)]
    skewed: bool,
    /// How GPU ranks move their ghost planes: `auto` sends them device to device over NCCL
    /// when every rank has a GPU of its own and `libnccl.so` loads, else through host memory
    /// (`host`); `nccl` is an error where NCCL cannot be used.
    #[arg(long, value_enum, default_value_t = Via::Auto)]
    transport: Via,
    /// `--schedule symmetric`: steps to run (each a sweep up and a sweep down).
    #[arg(long, default_value_t = 100, value_parser = common::int(1..=100_000_000), conflicts_with = "bench")]
    steps: usize,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Kind {
    Plain,
    Tiled,
    Hierarchical,
    OutOfCore,
    GaussSeidel,
    Symmetric,
}

#[derive(Clone, Copy, ValueEnum)]
enum Via {
    Auto,
    Host,
    Nccl,
}

#[derive(Clone, Copy, ValueEnum)]
enum Where {
    Auto,
    Cpu,
    Cuda,
}

#[derive(Clone, Copy, ValueEnum)]
enum Precision {
    F32,
    F64,
}

fn main() -> ExitCode {
    let (args, matches) = common::parse_with::<Args>(|command| command);
    let (hierarchical, out_of_core) = (args.schedule == Kind::Hierarchical, args.schedule == Kind::OutOfCore);
    let symmetric = args.schedule == Kind::Symmetric;
    let ignored = common::refuse_ignored(
        &matches,
        &[
            ("tile", hierarchical, "to --schedule hierarchical"),
            ("sub", hierarchical, "to --schedule hierarchical"),
            ("halo", hierarchical, "to --schedule hierarchical"),
            ("slab", out_of_core, "to --schedule out-of-core"),
            ("skewed", out_of_core, "to --schedule out-of-core"),
            ("steps", symmetric, "to --schedule symmetric"),
            ("tolerance", !symmetric, "to every schedule but symmetric, which runs --steps"),
            ("max_iterations", !symmetric, "to every schedule but symmetric, which runs --steps"),
        ],
    );
    if let Err(e) = ignored {
        return common::exit(Err(e));
    }
    let mpi = match Mpi::init() {
        Ok(mpi) => mpi,
        Err(e) => return common::exit(Err(e)),
    };
    let outcome = match args.precision {
        Precision::F32 => run::<f32>(&args, &mpi),
        Precision::F64 => run::<f64>(&args, &mpi),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rank {}: error: {}", mpi.rank(), common::message(&e));
            ExitCode::FAILURE
        }
    }
}

fn run<T: Real>(args: &Args, mpi: &Mpi) -> stencil::Result<()> {
    match args.schedule {
        Kind::GaussSeidel => solve::<_, T>(GaussSeidel7, args, mpi),
        Kind::Symmetric => symmetric::<T>(args, mpi),
        _ => solve::<_, T>(Jacobi7, args, mpi),
    }
}

/// The grid of the problem (`--size`, `--weak`), cut for `stencil`.
fn split<'m, S: Stencil<3>>(stencil: &S, args: &Args, mpi: &'m Mpi) -> stencil::Result<Subdomain<'m, 3>> {
    let n = args.size;
    let planes = if args.weak { args.size * mpi.size() + 2 } else { n };
    let transport = match args.transport {
        Via::Auto => Transport::Auto,
        Via::Host => Transport::Host,
        Via::Nccl => Transport::Nccl,
    };
    Ok(mpi.split(stencil, [planes, n, n], args.depth)?.with_transport(transport))
}

/// The grid spacings of `sub`'s global grid.
fn spacings(sub: &Subdomain<'_, 3>) -> [f64; 3] {
    sub.global_shape().map(|n| 1.0 / (n - 1) as f64)
}

/// The manufactured solution sin πx · sin πy · sin πz at a global index.
fn exact(h: [f64; 3], [i, j, k]: [usize; 3]) -> f64 {
    (PI * i as f64 * h[0]).sin() * (PI * j as f64 * h[1]).sin() * (PI * k as f64 * h[2]).sin()
}

/// The right-hand side f = −Δu_exact on this rank's part.
fn rhs<T: Real>(sub: &Subdomain<'_, 3>) -> stencil::Result<Grid<T, 3>> {
    let h = spacings(sub);
    sub.local_grid(|index| T::from_f64(3.0 * PI * PI * exact(h, index)))
}

/// Where this rank runs.
fn backend(args: &Args, mpi: &Mpi) -> Backend {
    match args.backend {
        Where::Auto => Backend::Auto,
        Where::Cpu => Backend::Cpu,
        Where::Cuda => Backend::Cuda { device: mpi.node_rank() % stencil::cuda::device_count().max(1) },
    }
}

/// Prints, on rank 0, the largest error of `u`'s own planes against the manufactured
/// solution, over every rank.
fn report_error<T: Real>(sub: &Subdomain<'_, 3>, u: &Grid<T, 3>) {
    let h = spacings(sub);
    let n = sub.global_shape()[1];
    let own = sub.own_local();
    let local_error = (own.start..own.end)
        .flat_map(|i| (0..n).flat_map(move |j| (0..n).map(move |k| [i, j, k])))
        .map(|index| (u[index].to_f64() - exact(h, sub.global_index(index))).abs())
        .fold(0.0, f64::max);
    let error = sub.mpi().max(local_error);
    if sub.rank() == 0 {
        println!(
            "max |u − u_exact| = {error:.3e} (second order: about h²·π²/12 = {:.1e})",
            h[1] * h[1] * PI * PI / 12.0
        );
    }
}

/// Prints, on rank 0, the cut and what each rank runs.
fn describe<T: Real>(sub: &Subdomain<'_, 3>, exchange: &str, what: &str) {
    if sub.rank() == 0 {
        let [a, b, c] = sub.global_shape();
        println!(
            "{} ranks, grid {a}×{b}×{c}, {} (rank 0 owns planes {:?}, holds {:?}); {exchange}; {what} on each rank",
            sub.ranks(),
            T::NAME,
            sub.own(),
            sub.local(),
        );
    }
}

/// Symmetric Gauss–Seidel steps: `Alternating` steps of a sweep up and a sweep down.
fn symmetric<T: Real>(args: &Args, mpi: &Mpi) -> stencil::Result<()> {
    let sub = split(&GaussSeidel7, args, mpi)?;
    let f = rhs::<T>(&sub)?;
    let h2 = T::from_f64(spacings(&sub)[1].powi(2));
    describe::<T>(&sub, "boundary planes passed along and back every step", "a wavefront per sweep");
    let steps = |u: &mut Grid<T, 3>, steps: usize| {
        let forward = GaussSeidel7Params { h2 };
        Alternating::new(GaussSeidel7, forward, GaussSeidel7Back, GaussSeidel7BackParams { h2 })
            .input("f", &f)
            .backend(backend(args, mpi))
            .mode(Mode::Fast)
            .distributed(&sub)
            .run(u, steps)
            .map(|report| (report.wall, report.to_string()))
    };
    match args.bench {
        Some(k) => bench(&sub, k, steps),
        None => {
            let mut u = sub.local_grid(|_| T::ZERO)?;
            let (_, report) = steps(&mut u, args.steps)?;
            if mpi.rank() == 0 {
                println!("{report}");
            }
            report_error(&sub, &u);
            Ok(())
        }
    }
}

/// The problem solved by `stencil`'s iterations (Jacobi's or Gauss–Seidel's, both with the
/// input `f` and the parameter `h2`).
fn solve<S: Stencil<3>, T: Real>(stencil: S, args: &Args, mpi: &Mpi) -> stencil::Result<()> {
    let sub = split(&stencil, args, mpi)?;
    let h = spacings(&sub);
    let f = rhs::<T>(&sub)?;
    let backend = backend(args, mpi);
    let schedule = match args.schedule {
        Kind::Plain => Schedule::Plain,
        Kind::Tiled => Schedule::Tiled,
        Kind::Hierarchical => {
            Schedule::Hierarchical { tile: args.tile, halo: args.halo.unwrap_or(args.sub), sub: args.sub }
        }
        Kind::OutOfCore => {
            let inner = if args.skewed { Inner::Skewed } else { Inner::Plain };
            Schedule::OutOfCore { slab: args.slab, height: args.depth, inner, device_memory: None }
        }
        // A wavefront with the default tile.
        Kind::GaussSeidel | Kind::Symmetric => Schedule::Auto,
    };
    let exchange = match S::META.is_sweep() {
        true => "boundary planes passed along every sweep".to_owned(),
        false => format!("ghost planes exchanged every {} iteration(s)", args.depth),
    };
    describe::<T>(&sub, &exchange, &schedule.to_string());
    // One spacing for the stencil: the axes' spacings are equal unless `--weak` stretches
    // axis 0, and then the problem is only timed.
    let solver = |u: &mut Grid<T, 3>, iterations: usize, tolerance: Option<f64>| {
        let mut solver = Solver::new(stencil)
            .input("f", &f)
            .param("h2", h[1] * h[1])
            .backend(backend)
            .mode(Mode::Fast)
            .max_iterations(iterations)
            .schedule(schedule)
            .distributed(&sub);
        match tolerance {
            Some(eps) => solver = solver.tolerance(Tolerance::Absolute { norm: Norm::Max, eps }),
            // Timed runs check once, at the end, whatever the schedule (a checked iteration
            // is a plain one).
            None => solver = solver.check_every(iterations),
        }
        solver.run(u)
    };
    match args.bench {
        Some(k) => {
            bench(&sub, k, |u, iterations| solver(u, iterations, None).map(|report| (report.wall, report.to_string())))
        }
        None => {
            let mut u = sub.local_grid(|_| T::ZERO)?;
            let report = solver(&mut u, args.max_iterations, Some(args.tolerance))?;
            if mpi.rank() == 0 {
                println!("{report}");
            }
            report_error(&sub, &u);
            Ok(())
        }
    }
}

/// Times K and 2K iterations from the same start, three times; the steady time per
/// iteration is their difference over K (which leaves out the first and last iterations'
/// residual checks), the median of the three.
fn bench<T: Real>(
    sub: &Subdomain<'_, 3>,
    k: usize,
    run: impl Fn(&mut Grid<T, 3>, usize) -> stencil::Result<(std::time::Duration, String)>,
) -> stencil::Result<()> {
    let start = sub.local_grid(|[i, j, l]| T::from_f64(((i * 7 + j * 13 + l * 29) % 101) as f64 / 101.0))?;
    // A warm-up run: the JIT, the first launches, the MPI connections.
    run(&mut start.clone(), k.min(20))?;
    let mpi = sub.mpi();
    // Three pairs of runs; the median of their estimates. The slowest rank sets the pace.
    let mut estimates = Vec::new();
    let mut last = None;
    for _ in 0..3 {
        let short = run(&mut start.clone(), k)?;
        let long = run(&mut start.clone(), 2 * k)?;
        let (short_s, long_s) = (mpi.max(short.0.as_secs_f64()), mpi.max(long.0.as_secs_f64()));
        estimates.push((long_s - short_s) / k as f64);
        last = Some(long);
    }
    let mut sorted = estimates.clone();
    sorted.sort_by(f64::total_cmp);
    let per_iteration = sorted[1];
    if mpi.rank() == 0 {
        let [a, b, c] = sub.global_shape();
        let points = ((a - 2) * (b - 2) * (c - 2)) as f64;
        println!(
            "bench: {} ranks, {a}×{b}×{c}, depth {}: {:.3} ms per iteration, {:.1} Gpoint/s ({:.1} per rank)",
            sub.ranks(),
            sub.depth(),
            per_iteration * 1e3,
            points / per_iteration / 1e9,
            points / per_iteration / 1e9 / sub.ranks() as f64
        );
        let all: Vec<String> = estimates.iter().map(|t| format!("{:.3}", t * 1e3)).collect();
        println!("bench: the three estimates (ms per iteration): {}", all.join(", "));
        if let Some((_, report)) = last {
            println!("{report}");
        }
    }
    Ok(())
}
