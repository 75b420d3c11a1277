//! GPU benchmark (not a test): the plain and tiled kernels of the built-in Jacobi stencils
//! and of the two-unknown `GrayScott` against the device's copy bandwidth measured in the
//! same run, and the JIT's start-up times.
//!
//! For every grid it measures a copy kernel moving the bytes of one plain pass (12 B/point
//! in f32, 24 in f64: read u and f, write u; 16 and 32 for Gray–Scott: read u and v, write
//! both), then `Jacobi7` (3-D), or `Jacobi5` and `GrayScott` (2-D), through `Solver` on
//! CUDA device 0: runs of k and 2k iterations after a warm-up, the best
//! of `--repeats`; the steady rate is (2k − k) iterations over the difference of the two
//! times, which leaves out the final residual check. JIT: the first compile of a unit with
//! an empty disk cache, and a start from the disk cache with the memory cache cleared.
//!
//! ```text
//! cargo run --release --example 06_bench_gpu
//! cargo run --release --example 06_bench_gpu -- --sizes 512x512x512,8192x8192 --iterations 200
//! cargo run --release --example 06_bench_gpu -- --schedules plain --boundaries dirichlet,periodic,neumann
//! cargo run --release --example 06_bench_gpu -- --sizes 512x512x512 --schedules plain --radius2
//! cargo run --release --example 06_bench_gpu -- --sizes 512x512x512 --schedules plain,streaming:24:4
//! cargo run --release --example 06_bench_gpu -- --sizes 256x256x256,512x512x512 --schedules plain \
//!     --sweep-tiles 8,16 --iterations 10 --repeats 1 --no-peers
//! ```
//!
//! `--sweep-tiles` adds `Gs7`, a 3-D Gauss–Seidel sweep (`sweep(+, +, +)`), on the 3-D grids with
//! the wavefront schedule of each tile, against the same copy of the bytes `Jacobi7` moves: a
//! sweep reads u and f and writes u once, so that copy is its one-pass bound too.
//!
//! For temporal blocking (`streaming:TILE:SUB`, `hierarchical:TILE:HALO:SUB`) the steady share
//! of the copy probe is the iteration-points per second against the one-pass ceiling: 250 %
//! is 2.5 times what any one-pass kernel can reach.
//!
//! With periodic or Neumann boundaries the plain pass also writes the outer layers; the bytes
//! counted per point stay those of the plain pass, so their cost shows as a lower share of
//! the copy bandwidth.
//!
//! On every cubic 3-D grid, hand-written peers of `Jacobi7` (`peers.cu`: one thread per
//! point, and columns marching along z with a register queue) are timed in the same process
//! against their own run of the copy probe, and their rows follow the generated kernel's
//! (`--no-peers` leaves them out).

#[path = "../common/mod.rs"]
mod common;
mod peers;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use stencil::builtin::{GrayScott, GrayScottParams, Jacobi5, Jacobi7};
use stencil::cuda::{self, Mode, Origin};
use stencil::prelude::*;
use stencil::{Boundaries, Boundary, stencil};

stencil! {
    /// Jacobi update for −Δu = f with the fourth-order 13-point Laplacian (radius 2): it
    /// moves the bytes of `Jacobi7` and reads twice the neighbours.
    pub fn star13(mut u: Field3, f: Field3, h2: Real) -> Real {
        (16.0 * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1])
            - (u[-2, 0, 0] + u[2, 0, 0] + u[0, -2, 0] + u[0, 2, 0] + u[0, 0, -2] + u[0, 0, 2])
            + 12.0 * h2 * f[0, 0, 0])
            / 90.0
    }

    /// Gauss–Seidel for −Δu = f with the 7-point Laplacian: a sweep in which the west, south
    /// and lower neighbours are already new (the wavefront schedule).
    pub sweep(+, +, +) fn gs7(mut u: Field3, f: Field3, h2: Real) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1] + h2 * f[0, 0, 0]) / 6.0
    }
}

/// Plain and tiled CUDA kernels against the copy bandwidth.
#[derive(Parser)]
struct Args {
    /// Grid shapes, boundary included: `AxBxC` runs Jacobi7, `AxB` runs Jacobi5.
    #[arg(long, value_delimiter = ',', default_value = "512x512x512,1024x1024x1024,8192x8192", value_parser = parse_shape)]
    sizes: Vec<Vec<usize>>,
    /// Iterations of the shorter timed run, k.
    #[arg(long, default_value_t = 100, value_parser = common::int(10..=1_000_000))]
    iterations: usize,
    /// Timed runs of every measurement; the best is reported.
    #[arg(long, default_value_t = 3, value_parser = common::int(1..=1000))]
    repeats: usize,
    /// Run f32 only.
    #[arg(long)]
    f32_only: bool,
    /// Schedules to run.
    #[arg(long, value_delimiter = ',', default_value = "plain,tiled", value_parser = parse_schedule)]
    schedules: Vec<Schedule>,
    /// Also run `Star13`, a radius-2 star, on the 3-D grids.
    #[arg(long)]
    radius2: bool,
    /// Also run `Gs7`, a Gauss–Seidel sweep, on the 3-D grids with the wavefront schedule of
    /// each of these tiles (its one-pass bound is the copy of the bytes `Jacobi7` moves).
    #[arg(long, value_delimiter = ',', value_parser = common::at_least(1))]
    sweep_tiles: Vec<usize>,
    /// Leave out the hand-written peers.
    #[arg(long)]
    no_peers: bool,
    /// Boundary conditions on every side, each measured in turn.
    #[arg(long, value_delimiter = ',', default_value = "dirichlet", value_parser = parse_boundary)]
    boundaries: Vec<Boundary>,
}

fn parse_boundary(s: &str) -> Result<Boundary, String> {
    match s {
        "dirichlet" => Ok(Boundary::Dirichlet),
        "periodic" => Ok(Boundary::Periodic),
        "neumann" => Ok(Boundary::Neumann),
        _ => Err(format!("`{s}` is not a boundary condition (dirichlet, periodic, neumann)")),
    }
}

fn parse_schedule(s: &str) -> Result<Schedule, String> {
    let numbers: Option<Vec<usize>> = s.split(':').skip(1).map(|n| n.parse().ok()).collect();
    match (s.split(':').next(), numbers.as_deref()) {
        (Some("plain"), Some([])) => Ok(Schedule::Plain),
        (Some("tiled"), Some([])) => Ok(Schedule::Tiled),
        (Some("streaming"), Some(&[tile, sub])) => Ok(Schedule::Streaming { tile, sub }),
        (Some("hierarchical"), Some(&[tile, halo, sub])) => Ok(Schedule::Hierarchical { tile, halo, sub }),
        _ => Err(format!(
            "`{s}` is not a GPU Jacobi schedule (plain, tiled, streaming:TILE:SUB, hierarchical:TILE:HALO:SUB)"
        )),
    }
}

fn parse_shape(s: &str) -> Result<Vec<usize>, String> {
    let shape = s.split('x').map(str::parse).collect::<Result<Vec<usize>, _>>();
    match shape {
        Ok(shape) if (2..=3).contains(&shape.len()) && shape.iter().all(|&n| n >= 3) => Ok(shape),
        _ => Err(format!("`{s}` is not a 2-D or 3-D shape of at least 3 points per axis")),
    }
}

fn main() -> ExitCode {
    common::exit(run(common::parse()))
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(reason) = cuda::unusable_reason(0) {
        return Err(format!("no GPU to benchmark: {reason}").into());
    }
    let cache = std::env::temp_dir().join(format!("stencil-bench-cache-{}", std::process::id()));
    // SAFETY: set at start-up, before any other thread exists to read the environment.
    unsafe { std::env::set_var(cuda::CACHE_DIR_VAR, &cache) };
    let rows = measure(&args);
    let _ = std::fs::remove_dir_all(&cache);
    let rows = rows?;
    // The table is printed once every row is measured, so that an error never cuts it short.
    println!(
        "| stencil | precision | grid | schedule | boundaries | Gpoint/s | GB/s | copy GB/s | of copy | steady Gpoint/s \
         | steady of copy |"
    );
    println!("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        println!("{row}");
    }
    Ok(())
}

/// The JIT times, then the table's rows.
fn measure(args: &Args) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    jit_times()?;
    let mut rows = Vec::new();
    for shape in &args.sizes {
        match shape[..] {
            [a, b, c] => {
                let peers = !args.no_peers && a == b && b == c;
                rows.extend(bench::<_, f32, 3>(Jacobi7, [a, b, c], args)?);
                if peers {
                    rows.extend(peer_rows::<f32>(a, "float", args)?);
                }
                if !args.f32_only {
                    rows.extend(bench::<_, f64, 3>(Jacobi7, [a, b, c], args)?);
                    if peers {
                        rows.extend(peer_rows::<f64>(a, "double", args)?);
                    }
                }
                if !args.sweep_tiles.is_empty() {
                    let sweeps: Vec<Schedule> =
                        args.sweep_tiles.iter().map(|&tile| Schedule::Wavefront { tile }).collect();
                    rows.extend(bench_with::<_, f32, 3>(Gs7, [a, b, c], &sweeps, args)?);
                    if !args.f32_only {
                        rows.extend(bench_with::<_, f64, 3>(Gs7, [a, b, c], &sweeps, args)?);
                    }
                }
                if args.radius2 {
                    rows.extend(bench::<_, f32, 3>(Star13, [a, b, c], args)?);
                    if !args.f32_only {
                        rows.extend(bench::<_, f64, 3>(Star13, [a, b, c], args)?);
                    }
                }
            }
            [a, b] => {
                rows.extend(bench::<_, f32, 2>(Jacobi5, [a, b], args)?);
                rows.extend(bench_system::<f32>([a, b], args)?);
                if !args.f32_only {
                    rows.extend(bench::<_, f64, 2>(Jacobi5, [a, b], args)?);
                    rows.extend(bench_system::<f64>([a, b], args)?);
                }
            }
            _ => unreachable!("parse_shape accepts 2-D and 3-D shapes"),
        }
    }
    Ok(rows)
}

/// The rows of the hand-written peers on an n³ grid of `T` (`c_type` in C), against a copy
/// of the bytes `Jacobi7` moves, measured just before them.
fn peer_rows<T: Real + cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + From<f32>>(
    n: usize,
    c_type: &str,
    args: &Args,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let bytes_per_point = Jacobi7::META.bytes_per_point(T::BYTES);
    let points = (n - 2).pow(3);
    let copy = cuda::copy_bandwidth(0, points * bytes_per_point, args.repeats.max(3))?;
    let rates = peers::time::<T>(n, c_type, args.repeats)?;
    Ok(rates
        .into_iter()
        .map(|(name, rate)| {
            let gbs = rate * bytes_per_point as f64;
            let share = 100.0 * gbs / copy;
            format!(
                "| peer: {name} | {} | {n}×{n}×{n} | — | dirichlet | {rate:.1} | {gbs:.0} | {copy:.0} | {share:.0} % | \
                 {rate:.1} | {share:.0} % |",
                T::NAME
            )
        })
        .collect())
}

/// First compile with an empty disk cache, then a start from the disk cache.
fn jit_times() -> Result<(), Box<dyn std::error::Error>> {
    let once = |label: &str| -> Result<(Duration, Origin), Box<dyn std::error::Error>> {
        let f = Grid::<f32, 3>::zeros([8, 8, 8])?;
        let mut u = Grid::<f32, 3>::zeros([8, 8, 8])?;
        let started = std::time::Instant::now();
        let report = Solver::new(Jacobi7)
            .input("f", &f)
            .param("h2", 1.0)
            .backend(Backend::Cuda { device: 0 })
            .max_iterations(1)
            .run(&mut u)?;
        let whole = started.elapsed();
        let jit = report.jit.ok_or("no JIT time in a GPU report")?;
        println!(
            "JIT {label}: {:.1} ms ({:?}); the whole run of one iteration on 8³, device set-up included: {:.1} ms",
            jit.0.as_secs_f64() * 1e3,
            jit.1,
            whole.as_secs_f64() * 1e3
        );
        Ok(jit)
    };
    once("first compile (empty disk cache)")?;
    cuda::clear_memory_cache();
    once("start from the disk cache")?;
    once("start from the memory cache")?;
    println!();
    Ok(())
}

/// A row of the table for every schedule and boundary condition of Jacobi stencil `S`.
fn bench<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    args: &Args,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    bench_with::<S, T, N>(stencil, shape, &args.schedules, args)
}

/// A row of the table for every one of `schedules` and every boundary condition of `S`.
fn bench_with<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    schedules: &[Schedule],
    args: &Args,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let f = Grid::<T, N>::random_uniform(shape, T::from_f64(-1.0), T::from_f64(1.0), 2)?;
    let u0 = Grid::<T, N>::random_uniform(shape, T::from_f64(-1.0), T::from_f64(1.0), 1)?;
    rows::<S, T, N>(shape, schedules, args, |schedule, boundaries, k| {
        let mut u = u0.clone();
        solver(Solver::new(stencil).input("f", &f).param("h2", 1e-4), schedule, boundaries, k).run(&mut u)
    })
}

/// The rows of the two-unknown `GrayScott` (from a seeded square, so that the reaction runs).
fn bench_system<T: Real>(shape: [usize; 2], args: &Args) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let t = T::from_f64;
    let params = GrayScottParams { du: t(0.2097), dv: t(0.105), feed: t(0.0367), kill: t(0.0649), dt: t(1.0) };
    let [n0, n1] = shape;
    let inside = move |i: usize, j: usize| i.abs_diff(n0 / 2) < n0 / 10 && j.abs_diff(n1 / 2) < n1 / 10;
    let u0 = Grid::<T, 2>::from_fn(shape, |[i, j]| if inside(i, j) { t(0.5) } else { t(1.0) })?;
    let v0 = Grid::<T, 2>::from_fn(shape, |[i, j]| if inside(i, j) { t(0.25) } else { t(0.0) })?;
    rows::<GrayScott, T, 2>(shape, &args.schedules, args, |schedule, boundaries, k| {
        let (mut u, mut v) = (u0.clone(), v0.clone());
        solver(Solver::new(GrayScott).params(params), schedule, boundaries, k).run_system(&mut [&mut u, &mut v])
    })
}

/// `solver` on device 0 with `schedule` and `boundaries`, fast mode, `k` iterations and one
/// check at the end.
fn solver<S: Stencil<N>, T: Real, const N: usize>(
    solver: Solver<'_, S, T, N>,
    schedule: Schedule,
    boundaries: Boundaries<N>,
    k: usize,
) -> Solver<'_, S, T, N> {
    solver
        .backend(Backend::Cuda { device: 0 })
        .schedule(schedule)
        .boundaries(boundaries)
        .mode(Mode::Fast)
        .max_iterations(k)
        .check_every(k)
}

/// The best of `--repeats` runs of `args.iterations` iterations and the steady rate in
/// Gpoint/s from the runs of k and 2k iterations.
fn measure_case<const N: usize>(
    run: &impl Fn(Schedule, Boundaries<N>, usize) -> stencil::Result<Report>,
    schedule: Schedule,
    boundary: Boundary,
    points: usize,
    args: &Args,
) -> stencil::Result<(Report, f64)> {
    let time = |k: usize| -> stencil::Result<(f64, Report)> {
        let mut best: Option<Report> = None;
        for _ in 0..=args.repeats {
            let report = run(schedule, Boundaries::all(boundary), k)?;
            if best.as_ref().is_none_or(|b| report.wall < b.wall) {
                best = Some(report);
            }
        }
        let best = best.expect("at least one run");
        Ok((best.wall.as_secs_f64(), best))
    };
    let (t1, report) = time(args.iterations)?;
    let (t2, _) = time(2 * args.iterations)?;
    let steady = points as f64 * args.iterations as f64 / (t2 - t1).max(1e-12) / 1e9;
    Ok((report, steady))
}

/// A row of the table for every one of `schedules` and every boundary condition; `run(schedule,
/// boundaries, k)` runs `k` iterations of `S` from the same start each time.
fn rows<S: Stencil<N>, T: Real, const N: usize>(
    shape: [usize; N],
    schedules: &[Schedule],
    args: &Args,
    run: impl Fn(Schedule, Boundaries<N>, usize) -> stencil::Result<Report>,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let bytes_per_point = S::META.bytes_per_point(T::BYTES);
    let points: usize = shape.iter().map(|n| n - 2).product();
    let copy = cuda::copy_bandwidth(0, points * bytes_per_point, args.repeats.max(3))?;
    let mut rows = Vec::new();
    let cases = schedules.iter().flat_map(|&s| args.boundaries.iter().map(move |&b| (s, b)));
    for (schedule, boundary) in cases {
        let name = |what: &str| {
            let grid = shape.iter().map(ToString::to_string).collect::<Vec<_>>().join("×");
            format!(
                "| {} | {} | {grid} | {schedule} | {} | {what}",
                S::META.name,
                T::NAME,
                Boundaries::<N>::all(boundary)
            )
        };
        // A configuration the device refuses (too much shared memory, say) is a row that says
        // why, so that the table keeps every other row.
        match measure_case(&run, schedule, boundary, points, args) {
            Ok((report, steady)) => {
                let gbs = report.effective_gb_per_s();
                rows.push(name(&format!(
                    "{:.1} | {:.0} | {copy:.0} | {:.0} % | {steady:.1} | {:.0} % |",
                    report.gpoints_per_s(),
                    gbs,
                    100.0 * gbs / copy,
                    100.0 * steady * bytes_per_point as f64 / copy,
                )));
            }
            Err(error) => rows.push(name(&format!("{error} | | | | | |"))),
        }
    }
    Ok(rows)
}
