//! Hierarchical subiterations (paper 003) against the plain schedule, on the paper's
//! problems, and exact temporal blocking against the one-pass bandwidth ceiling.
//!
//! `--problem paper2d` (default): 2-D Poisson on N×N interior points, f64, initial
//! solution and right-hand side all ones on the interior, zero Dirichlet boundary, until the L2 residual falls by `--reduction`
//! (1e-4 in the paper). `--problem paper1d`: 1-D Poisson on 1024 independent rows of N
//! points (a 2-D grid whose stencil reads along rows only). For every `sub` and halo it
//! prints the time to converge, the iterations, and the speedup over `Plain`.
//!
//! `--problem blocking`: `jacobi7` f32 at 512³ and `jacobi5` f32 at 8192² for a fixed
//! number of iterations with exact configurations (halo = sub · radius), in
//! iteration-points per second against the one-pass ceiling (copy bandwidth measured in
//! the same run ÷ bytes per point of one plain pass).
//!
//! ```text
//! cargo run --release --example 05_hierarchical -- --size 1024 --subs 4,8,16,32,64,128 --halos 1,2,4,8
//! cargo run --release --example 05_hierarchical -- --problem blocking
//! ```

mod common;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use stencil::builtin::{Jacobi5, Jacobi7};
use stencil::cuda::{self, Mode};
use stencil::prelude::*;

stencil! {
    /// 1-D Poisson along every row: rows are independent copies (radius 0 on axis 0).
    pub fn rows(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 2.0
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum Problem {
    Paper2d,
    Paper1d,
    Blocking,
}

/// Paper 003's tables, and exact temporal blocking.
#[derive(Parser)]
struct Args {
    /// Which measurement.
    #[arg(long, value_enum, default_value = "paper2d")]
    problem: Problem,
    /// Interior points per axis (paper problems).
    #[arg(long, default_value_t = 1024, value_parser = common::int(1..=1_000_000))]
    size: usize,
    /// Subiterations per cycle to try.
    #[arg(long, value_delimiter = ',', default_value = "4,8,16,32,64,128", value_parser = common::int(1..=1_000_000))]
    subs: Vec<usize>,
    /// Halos to try (halo = radius + overlap / 2; 1 is paper 003 without overlap).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8", value_parser = common::int(1..=1_000_000))]
    halos: Vec<usize>,
    /// Core tile edge (2-D and the paper problems). Without it, the paper problems use tiles
    /// of `--region` − 2 · halo (a working region `--region` points wide, as paper 003's
    /// subdomains of 32 threads), and so does `--problem blocking` in 2-D.
    #[arg(long, value_parser = common::int(1..=1_000_000))]
    tile: Option<usize>,
    /// Width of the working region when `--tile` is not given (paper problems).
    #[arg(long, default_value_t = 32, value_parser = common::int(1..=1_000_000))]
    region: usize,
    /// Plain launch shapes to try, `BLOCK_X,BLOCK_Y,MARCH` separated by `;` (paper problems):
    /// each runs a fixed number of iterations, and the fastest runs to convergence.
    #[arg(
        long,
        value_delimiter = ';',
        default_value = "32,1,1;64,1,1;128,1,1;256,1,1;32,1,4;64,1,4;128,1,4;256,1,4;64,1,8;128,1,8;128,1,16",
        value_parser = parse_plain_shape
    )]
    plain_shapes: Vec<String>,
    /// Core tile edge in 3-D (`--problem blocking`).
    #[arg(long, default_value_t = 8, value_parser = common::int(1..=1_000_000))]
    tile_3d: usize,
    /// Reduction of the L2 residual to reach (paper problems).
    #[arg(long, default_value_t = 1e-4, value_parser = common::real(0.0, 1.0))]
    reduction: f64,
    /// Iterations between residual checks (paper problems), for every schedule alike; a
    /// hierarchical cycle longer than this is checked every cycle.
    #[arg(long, default_value_t = 64, value_parser = common::int(1..=stencil::MAX_UNLIMITED_CHECK_EVERY))]
    check_every: usize,
    /// Skip the plain runs (paper problems; for tuning the hierarchical kernel alone).
    #[arg(long)]
    skip_plain: bool,
    /// Run on the CPU twin instead of GPU 0.
    #[arg(long)]
    cpu: bool,
}

/// A launch shape of the plain kernel on the paper problems' 2-D grids, as the runtime reads
/// it from `cuda::SHAPE_VAR`: BLOCK_X·BLOCK_Y threads, and BLOCK_Y = 1 in 2-D.
fn parse_plain_shape(s: &str) -> Result<String, String> {
    let parts: Result<Vec<u32>, _> = s.split(',').map(|p| p.trim().parse()).collect();
    match parts.as_deref() {
        Ok(&[x, 1, m]) if (1..=1024).contains(&x) && m >= 1 => Ok(format!("{x},1,{m}")),
        _ => {
            Err("expected BLOCK_X,1,MARCH with BLOCK_X from 1 to 1024 and MARCH at least 1 (the grids are 2-D)".into())
        }
    }
}

fn main() -> ExitCode {
    let (args, matches) = common::parse_with::<Args>(|command| command);
    let paper = !matches!(args.problem, Problem::Blocking);
    let papers = "to --problem paper2d and paper1d";
    let ignored = common::refuse_ignored(
        &matches,
        &[
            ("size", paper, papers),
            ("plain_shapes", paper && !args.cpu && !args.skip_plain, "to the paper problems' plain runs on the GPU"),
            ("reduction", paper, papers),
            ("check_every", paper, papers),
            ("skip_plain", paper, papers),
            ("tile_3d", !paper, "to --problem blocking"),
        ],
    );
    common::exit(ignored.map_err(Into::into).and_then(|()| run(args)))
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    // Checked first, so that no table is left half printed.
    if let Some(reason) = cuda::unusable_reason(0).filter(|_| !args.cpu) {
        return Err(format!("no usable GPU: {reason}; --cpu runs the CPU twin").into());
    }
    let backend = if args.cpu { Backend::Cpu } else { Backend::Cuda { device: 0 } };
    match args.problem {
        Problem::Paper2d => {
            let shape = [args.size + 2, args.size + 2];
            paper::<_, 2>(Jacobi5, shape, &args, backend)
        }
        Problem::Paper1d => paper::<_, 2>(Rows, [1024, args.size + 2], &args, backend),
        Problem::Blocking => {
            blocking::<_, 3>(Jacobi7, [514, 514, 514], &args, backend)?;
            blocking::<_, 2>(Jacobi5, [8194, 8194], &args, backend)
        }
    }
}

/// Time to reduce the L2 residual by `args.reduction`, plain and hierarchical.
fn paper<S: Stencil<N>, const N: usize>(
    stencil: S,
    shape: [usize; N],
    args: &Args,
    backend: Backend,
) -> Result<(), Box<dyn std::error::Error>> {
    let h = 1.0 / (args.size + 1) as f64;
    let f = Grid::<f64, N>::filled(shape, 1.0)?;
    // Paper 003's system has only the interior unknowns: the boundary is zero (Dirichlet).
    let radius: [usize; N] = std::array::from_fn(|a| S::META.radius[a]);
    let initial = || -> Result<Grid<f64, N>, stencil::Error> {
        let mut u = Grid::<f64, N>::filled(shape, 1.0)?;
        u.set_boundary(radius, |_| 0.0);
        Ok(u)
    };
    let solve = |schedule: Schedule| -> Result<Report, Box<dyn std::error::Error>> {
        let mut u = initial()?;
        let solver = Solver::new(stencil)
            .input("f", &f)
            .param("h2", h * h)
            .backend(backend)
            .schedule(schedule)
            .mode(Mode::Fast)
            .tolerance(Tolerance::Relative { norm: Norm::L2, factor: args.reduction })
            .max_iterations(50_000_000);
        // Every schedule checks about every `--check-every` iterations (a cycle counts as `sub`
        // iterations, and a cycle is checked when a check falls inside it), so that plain and
        // hierarchical runs pay the same for checks.
        let check = match schedule {
            Schedule::Hierarchical { sub, .. } => args.check_every.max(sub),
            _ => args.check_every,
        };
        Ok(solver.check_every(check).run(&mut u)?)
    };
    println!("{} on {shape:?}, f64, L2 residual reduced by {:e}, {backend}", S::META.name, args.reduction);
    let seconds = |d: Duration| d.as_secs_f64();
    if !args.cpu && !args.skip_plain {
        // Plain at its best launch shape: every shape runs the same iterations (each point is
        // computed the same way whatever the shape), so the fastest per iteration is the
        // fastest to converge.
        let mut best: Option<(f64, &String)> = None;
        println!("| plain launch shape | Gpoint/s |");
        println!("|---|---:|");
        for candidate in &args.plain_shapes {
            set_plain_shape(candidate);
            let mut u = initial()?;
            let check = args.check_every;
            let report = Solver::new(stencil)
                .input("f", &f)
                .param("h2", h * h)
                .backend(backend)
                .schedule(Schedule::Plain)
                .mode(Mode::Fast)
                // About 2·10¹⁰ point updates per shape (20 000 iterations at 1024²).
                .max_iterations((2e10 / shape.iter().product::<usize>() as f64).clamp(200.0, 20_000.0) as usize)
                .check_every(check)
                .run(&mut u)?;
            println!("| {candidate} | {:.1} |", report.gpoints_per_s());
            if best.is_none_or(|(rate, _)| report.gpoints_per_s() > rate) {
                best = Some((report.gpoints_per_s(), candidate));
            }
        }
        if let Some((_, candidate)) = best {
            println!("fastest plain shape: {candidate}");
            set_plain_shape(candidate);
        }
    }
    let plain_time = if args.skip_plain {
        None
    } else {
        let plain = solve(Schedule::Plain)?;
        println!(
            "plain: {} iterations, {:.3} s ({:.1} Gpoint/s)",
            plain.iterations,
            seconds(plain.wall),
            plain.gpoints_per_s()
        );
        Some(seconds(plain.wall))
    };
    println!();
    println!("| tile | halo | sub | iterations | time (s) | speedup over plain |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for &halo in &args.halos {
        let Some(tile) = args.tile.or_else(|| args.region.checked_sub(2 * halo).filter(|&t| t > 0)) else {
            println!("| – | {halo} | – | – | – | a region of {} has no core with this halo |", args.region);
            continue;
        };
        for &sub in &args.subs {
            let schedule = Schedule::Hierarchical { tile, halo, sub };
            match solve(schedule) {
                Ok(r) => println!(
                    "| {tile} | {halo} | {sub} | {} | {:.3} | {} |",
                    r.iterations,
                    seconds(r.wall),
                    plain_time.map_or("– (--skip-plain)".into(), |t| format!("{:.2}", t / seconds(r.wall)))
                ),
                Err(e) => println!("| {tile} | {halo} | {sub} | – | – | {e} |"),
            }
        }
    }
    Ok(())
}

/// Exact temporal blocking: iteration-points per second against the one-pass ceiling.
fn blocking<S: Stencil<N>, const N: usize>(
    stencil: S,
    shape: [usize; N],
    args: &Args,
    backend: Backend,
) -> Result<(), Box<dyn std::error::Error>> {
    let f = Grid::<f32, N>::random_uniform(shape, -1.0, 1.0, 2)?;
    let u0 = Grid::<f32, N>::random_uniform(shape, -1.0, 1.0, 1)?;
    let points: usize = shape.iter().map(|n| n - 2).product();
    let bytes = S::META.bytes_per_point(4);
    // The ceiling comes from the GPU's copy bandwidth; the CPU twin has none to compare with.
    let ceiling = if args.cpu {
        println!("{} f32 {shape:?}: no one-pass ceiling (the copy probe runs on the GPU)", S::META.name);
        None
    } else {
        let copy = cuda::copy_bandwidth(0, points * bytes, 3)?;
        let ceiling = copy / bytes as f64;
        println!("{} f32 {shape:?}: copy {copy:.0} GB/s, one-pass ceiling {ceiling:.1} Gpoint/s", S::META.name);
        Some(ceiling)
    };
    println!("| schedule | Gpoint/s (iteration-points) | × one-pass ceiling |");
    println!("|---|---:|---:|");
    let time = |schedule: Schedule, iterations: usize| -> Result<f64, Box<dyn std::error::Error>> {
        let mut best = f64::INFINITY;
        for _ in 0..2 {
            let mut u = u0.clone();
            let report = Solver::new(stencil)
                .input("f", &f)
                .param("h2", 1e-4)
                .backend(backend)
                .schedule(schedule)
                .mode(Mode::Fast)
                .max_iterations(iterations)
                .check_every(iterations)
                .run(&mut u)?;
            best = best.min(report.wall.as_secs_f64());
        }
        Ok(best)
    };
    let mut schedules = vec![Schedule::Plain];
    for &sub in &args.subs {
        // In 2-D, a working region `--region` wide (the register kernel's one warp).
        let tile = if N == 3 { args.tile_3d } else { args.tile.unwrap_or(args.region.saturating_sub(2 * sub).max(1)) };
        schedules.push(Schedule::Hierarchical { tile, halo: sub, sub });
    }
    for schedule in schedules {
        // Steady rate: the difference of two runs, which leaves out uploads and the check.
        let k = 64;
        let rate = match (time(schedule, k), time(schedule, 2 * k)) {
            (Ok(t1), Ok(t2)) => points as f64 * k as f64 / (t2 - t1).max(1e-12) / 1e9,
            (Err(e), _) | (_, Err(e)) => {
                println!("| {schedule} | {e} | |");
                continue;
            }
        };
        println!("| {schedule} | {rate:.1} | {} |", ceiling.map_or("n/a".into(), |c| format!("{:.2}", rate / c)));
    }
    let mut u = u0.clone();
    let auto = Solver::new(stencil)
        .input("f", &f)
        .param("h2", 1e-4)
        .backend(backend)
        .mode(Mode::Fast)
        // Long enough for Auto to time its candidates (runs shorter than 256 iterations are plain).
        .max_iterations(256)
        .run(&mut u)?;
    println!("Schedule::Auto chose {}: {}", auto.schedule, auto.schedule_choice.unwrap_or_default());
    println!();
    Ok(())
}

/// Sets the plain kernel's launch shape for the runs that follow.
fn set_plain_shape(shape: &str) {
    // SAFETY: the example is single-threaded here; no other thread reads the environment
    // while it changes (the solver reads it at the start of a run, on this thread).
    unsafe { std::env::set_var(cuda::SHAPE_VAR, shape) };
}
