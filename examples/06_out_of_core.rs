//! The out-of-core pyramid (papers 000/001) on the main job of `01_poisson3d`: −Δu = f on the
//! unit cube, zero boundary, f = 8-octave Perlin noise in [−1, 1], u⁰ uniform in [−1, 1], until
//! ‖uᵏ⁺¹ − uᵏ‖∞ < 1e-5, with the grid in host memory and a device-memory limit below the
//! data size (by default half of u and f together), so the GPU never holds the whole grid.
//!
//! A progress bar follows the passes and the slabs of each; each run prints its report.
//! `--checkpoint FILE` writes u every `--checkpoint-every` iterations and resumes from FILE
//! when it exists. `--in-core` also runs
//! `Plain` with the whole grid on the GPU, and `--cpu-iterations K` the CPU twin for K
//! iterations (its time to convergence is then extrapolated from that throughput, and the
//! table says so). `--heights 1,2,4,…` runs several pyramid heights one after another;
//! `--streaming 24:4` runs streaming cycles inside the slabs, `--skewed` skewed slabs (both:
//! streaming cycles inside skewed slabs).
//!
//! ```text
//! cargo run --release --example 06_out_of_core -- --size 256 --in-core
//! cargo run --release --example 06_out_of_core -- --size 1000 --iterations 400 --heights 8,16,32,64 --in-core
//! cargo run --release --example 06_out_of_core -- --size 1000 --iterations 384 --heights 96 --streaming 24:4
//! ```

mod common;
#[allow(dead_code)]
mod poisson;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use stencil::DEFAULT_CHECK_EVERY;
use stencil::builtin::Jacobi7;
use stencil::prelude::*;

/// Solve the 3-D Poisson problem out of core on the GPU.
#[derive(Parser)]
struct Args {
    /// Points per axis, boundary included.
    #[arg(long, default_value_t = 256, value_parser = common::at_least(3))]
    size: usize,
    /// Element type.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    precision: Precision,
    /// Pyramid heights n (iterations per pass), comma-separated: one run each.
    #[arg(long, value_delimiter = ',', default_values_t = [32], value_parser = common::at_least(1))]
    heights: Vec<usize>,
    /// Planes per slab; default: the widest that fits the device-memory limit.
    #[arg(long, value_parser = common::at_least(1))]
    slab: Option<usize>,
    /// Device memory the schedule may use, in GiB; default: half of u and f together, or
    /// what a slab of one plane needs when that is more.
    #[arg(long, value_parser = common::real(0.0, 1024.0))]
    device_memory_gib: Option<f64>,
    /// Run exactly this many iterations (a throughput measurement) instead of converging.
    #[arg(long, value_parser = common::at_least(1), conflicts_with = "tolerance")]
    iterations: Option<usize>,
    /// Stop once ‖uᵏ⁺¹ − uᵏ‖∞ (or the change since the last check, see `--residual`) is
    /// below this (without `--iterations`).
    #[arg(long, default_value_t = 1e-5, value_parser = common::real(0.0, 1.0))]
    tolerance: f64,
    /// What the tolerance is compared with.
    #[arg(long, value_enum, default_value_t = poisson::ResidualArg::Step, conflicts_with = "iterations")]
    residual: poisson::ResidualArg,
    /// Also run `Plain` in core on the GPU, for comparison.
    #[arg(long)]
    in_core: bool,
    /// Also run the CPU twin (plain pass) for this many iterations.
    #[arg(long, value_parser = common::at_least(1))]
    cpu_iterations: Option<usize>,
    /// The right-hand side: the papers' Perlin noise, or a cheap product of sines for very large grids.
    #[arg(long, value_enum, default_value_t = Rhs::Perlin)]
    rhs: Rhs,
    /// Seed of the noise in f and of the initial guess.
    #[arg(long, default_value_t = 1, value_parser = common::seed())]
    seed: u32,
    /// Skewed slabs (`Inner::Skewed`: every plane computed once per iteration) instead of
    /// the paper's pyramids.
    #[arg(long)]
    skewed: bool,
    /// Streaming cycles inside the slabs (`Inner::Streaming`, with `--skewed`
    /// `Inner::SkewedStreaming`), as TILE:SUB (core tile on the two fast axes, subiterations
    /// per cycle), e.g. `24:4`, instead of plain iterations.
    #[arg(long, value_parser = streaming)]
    streaming: Option<Inner>,
    /// Run `Schedule::Auto` instead of `--heights`: out of core (with the run-time model's
    /// height and slab) when the grid does not fit the GPU, else the fastest in-core schedule.
    #[arg(long, conflicts_with_all = ["heights", "slab", "device_memory_gib", "skewed", "streaming"])]
    auto: bool,
    /// Write u to this `.npz` file during out-of-core runs, and resume from it if it exists.
    #[arg(long, value_parser = common::output("npz"))]
    checkpoint: Option<std::path::PathBuf>,
    /// Iterations between checkpoints.
    #[arg(long, default_value_t = 1000, value_parser = common::at_least(1), requires = "checkpoint")]
    checkpoint_every: usize,
}

/// `TILE:SUB` as streaming cycles inside the slabs.
fn streaming(text: &str) -> Result<Inner, String> {
    let parts = text.split(':').map(|p| p.trim().parse::<usize>().ok().filter(|&n| n > 0)).collect::<Vec<_>>();
    match parts[..] {
        [Some(tile), Some(sub)] => Ok(Inner::Streaming { tile, sub }),
        _ => Err(format!("`{text}` is not TILE:SUB, two positive whole numbers (e.g. 24:4)")),
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum Precision {
    F32,
    F64,
}

#[derive(Clone, Copy, ValueEnum)]
enum Rhs {
    /// 8-octave Perlin noise rescaled to [−1, 1] (papers 000/001).
    Perlin,
    /// sin(2πx)·sin(2πy)·sin(2πz).
    Sines,
}

fn main() -> ExitCode {
    let args: Args = common::parse();
    common::exit(match args.precision {
        Precision::F32 => run::<f32>(&args),
        Precision::F64 => run::<f64>(&args),
    })
}

fn run<T: Real>(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let n = args.size;
    if args.iterations.is_none() && args.tolerance < poisson::tolerance_floor::<T>() {
        return Err(format!(
            "--tolerance {:e} may never be met in {}: use at least {:e}, or run a fixed number with --iterations",
            args.tolerance,
            T::NAME,
            poisson::tolerance_floor::<T>()
        )
        .into());
    }
    let h = 1.0 / (n - 1) as f64;
    println!("building the problem: {n}³ points, {}", T::NAME);
    let f = match args.rhs {
        Rhs::Perlin => poisson::perlin_rhs::<T, 3>(n, args.seed)?,
        Rhs::Sines => {
            let s = |i: usize| (2.0 * std::f64::consts::PI * i as f64 * h).sin();
            Grid::from_fn([n; 3], |[i, j, k]| T::from_f64(s(i) * s(j) * s(k)))?
        }
    };
    let mut u0 = Grid::<T, 3>::random_uniform([n; 3], T::from_f64(-1.0), T::from_f64(1.0), args.seed.into())?;
    u0.set_boundary([1; 3], |_| T::ZERO);
    let data = 2 * u0.as_slice().len() * T::BYTES;
    // Rounded up, so that a tiny limit is too small for a slab rather than no limit at all.
    let limit = args.device_memory_gib.map_or(data / 2, |gib| (gib * (1u64 << 30) as f64).ceil() as usize);
    let gib = |bytes: usize| bytes as f64 / (1u64 << 30) as f64;
    if args.auto {
        println!("u and f: {:.2} GiB in host memory; Auto uses the GPU's free memory", gib(data));
    } else {
        println!("u and f: {:.2} GiB in host memory; device-memory limit {:.2} GiB", gib(data), gib(limit));
    }

    let stop = |solver, check_every| configure(solver, args, &f, h * h, check_every);
    // A single run iterates on u⁰ itself: at sizes near the host's memory there is no room
    // for a copy.
    let heights = if args.auto { &[][..] } else { &args.heights[..] };
    let runs = heights.len().max(usize::from(args.auto))
        + usize::from(args.in_core)
        + usize::from(args.cpu_iterations.is_some());
    let mut u0 = Starting { grid: u0, in_place: runs == 1 };
    if args.checkpoint.is_some() && (heights.len() > 1 || (args.auto && !heights.is_empty())) {
        // Every run would resume from the one before it.
        return Err("--checkpoint needs a single out-of-core run: one height, or --auto".into());
    }
    let checkpoint = |solver| with_checkpoint(solver, args);
    let mut rows = Vec::new();
    if args.auto {
        let bar = progress()?;
        // Out of core, the check period follows the height the model chooses.
        let solver = checkpoint(Solver::new(Jacobi7).backend(Backend::Auto).schedule(Schedule::Auto));
        let solver = stop(solver, None).on_slab(|p| {
            bar.set_message(format!("iterations {}–{}, slab {}/{}", p.pass_start + 1, p.pass_end, p.slab, p.slabs))
        });
        let report = u0.run(solver);
        bar.finish_and_clear();
        let report = report?;
        println!("{report}");
        rows.push((format!("auto: {}", report.schedule), report, false));
    }
    let mut failed = 0;
    for &height in heights {
        let inner = match (args.skewed, args.streaming) {
            (true, Some(Inner::Streaming { tile, sub })) => Inner::SkewedStreaming { tile, sub },
            (true, _) => Inner::Skewed,
            (false, streaming) => streaming.unwrap_or(Inner::Plain),
        };
        let bar = slab_progress()?;
        let mut run = |slab, limit| {
            let schedule = Schedule::OutOfCore { slab, height, inner, device_memory: Some(limit) };
            let solver = checkpoint(Solver::new(Jacobi7).backend(Backend::Auto).schedule(schedule));
            let solver = stop(solver, Some(height))
                .on_slab(|p| {
                    bar.set_prefix(format!(
                        "pass {} (iterations {}–{})",
                        p.pass_end.div_ceil(height),
                        p.pass_start + 1,
                        p.pass_end
                    ));
                    bar.set_length(p.slabs as u64);
                    bar.set_position(p.slab as u64);
                })
                .on_progress(|p| {
                    let residual = p.residual.map_or("–".into(), |r| format!("{r:.3e}"));
                    bar.set_message(format!(
                        "residual {residual} at iteration {}, {:.1} Gpoint/s",
                        p.iteration, p.gpoints_per_s
                    ));
                });
            u0.run(solver)
        };
        let mut report = run(args.slab, limit);
        // On a small grid half of u and f is less than a slab of one plane needs under a tall
        // pyramid: the default limit is then that need.
        if let (None, Err(stencil::Error::DeviceMemory { needed, .. })) = (args.device_memory_gib, &report) {
            let needed = *needed;
            bar.suspend(|| println!("height {height}: device-memory limit raised to the {needed} B a slab needs"));
            report = run(args.slab, needed);
        }
        bar.finish_and_clear();
        // A height whose slabs do not fit the limit is reported, and the others still run.
        match report {
            Ok(report) => {
                println!("{report}");
                rows.push((report.schedule.to_string(), report, false));
            }
            Err(e) => {
                eprintln!("error: height {height}: {}", common::message(&e));
                failed += 1;
            }
        }
    }
    if args.in_core {
        let bar = progress()?;
        // In core, every check waits for the device and reads the residual back: every 100
        // iterations, as in the papers (the pyramids check once per pass).
        let solver = Solver::new(Jacobi7).backend(Backend::Auto).schedule(Schedule::Plain);
        let solver = stop(solver, Some(DEFAULT_CHECK_EVERY)).on_progress(|p| {
            bar.set_message(format!("in core: iteration {}, {:.1} Gpoint/s", p.iteration, p.gpoints_per_s))
        });
        let report = u0.run(solver);
        bar.finish_and_clear();
        let report = report?;
        println!("{report}");
        rows.push(("plain, in core".into(), report, false));
    }
    if let Some(k) = args.cpu_iterations {
        let solver = Solver::new(Jacobi7).backend(Backend::Cpu).schedule(Schedule::Plain);
        let solver = solver.input("f", &f).param("h2", h * h).max_iterations(k).check_every(k);
        let report = u0.run(solver)?;
        println!("{report}");
        rows.push((format!("CPU twin, {} threads", rayon_threads()), report, true));
    }

    if rows.is_empty() {
        // Every run failed, and said why above: no table to print.
        return Err(format!("none of the {failed} runs succeeded").into());
    }
    // Convergence runs give the iterations the others are extrapolated to.
    let converged = rows.iter().find(|(_, r, _)| r.stop == StopReason::Converged).map(|(_, r, _)| r.iterations);
    let in_core = rows.iter().find(|(name, ..)| name == "plain, in core").map(|(_, r, _)| r.gpoints_per_s());
    println!("\n| run | iterations | time (s) | Gpoint/s | of in-core plain | time to convergence (s) |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, report, extrapolated) in &rows {
        let rate = report.gpoints_per_s();
        let ratio = in_core.map_or("–".into(), |c| format!("{:.0} %", 100.0 * rate / c));
        let to_converge = match (report.stop, converged) {
            (StopReason::Converged, _) => format!("{:.2}", report.wall.as_secs_f64()),
            (_, Some(k)) => {
                let seconds = report.wall.as_secs_f64() * k as f64 / report.iterations as f64;
                format!("{seconds:.1} (extrapolated{})", if *extrapolated { ", CPU" } else { "" })
            }
            _ => "–".into(),
        };
        println!(
            "| {name} | {} | {:.3} | {rate:.1} | {ratio} | {to_converge} |",
            report.iterations,
            report.wall.as_secs_f64()
        );
    }
    model_summary(&rows);
    match failed {
        0 => Ok(()),
        _ => Err(format!("{failed} of {} runs failed (above)", rows.len() + failed).into()),
    }
}

/// The run-time model against the measurements: each out-of-core run's predicted and
/// measured time, the height the model picks among those run, and how far its measured
/// time is from the best measured.
fn model_summary(rows: &[(String, Report, bool)]) {
    let runs: Vec<(&str, &Report, &stencil::model::ModelReport)> =
        rows.iter().filter_map(|(name, r, _)| r.model.as_ref().map(|m| (name.as_str(), r, m))).collect();
    if runs.is_empty() {
        return;
    }
    println!(
        "\n| run | predicted, overlapped (s) | predicted, sequential (s) | paper 000's form (s) | measured (s) | measured / predicted |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, report, model) in &runs {
        let p = model.predicted;
        let measured = report.wall.as_secs_f64();
        println!(
            "| {name} | {:.3} | {:.3} | {:.3} | {measured:.3} | {:.2} |",
            p.overlapped.as_secs_f64(),
            p.sequential.as_secs_f64(),
            p.paper.as_secs_f64(),
            measured / p.overlapped.as_secs_f64()
        );
    }
    let (_, _, first) = runs[0];
    let c = first.costs;
    println!(
        "\nprobes: up {:.1} GB/s, down {:.1} GB/s, device copy {:.0} GB/s, τa {:.4} ns/point",
        1e-9 / c.up,
        1e-9 / c.down,
        1e-9 / c.device_copy,
        c.update * 1e9
    );
    if let Some((inner, update)) = first.streaming {
        println!("{inner} timed too: {:.4} ns/point and iteration", update * 1e9);
    }
    let (height, slab, _) = first.best;
    println!("the model's best for this limit (any height ≤ 128, any slab): height {height}, slab {slab}");
    if runs.len() > 1 {
        let per_iteration =
            |r: &Report| r.wall.as_secs_f64() / (r.iterations - r.resumed_at.unwrap_or(0)).max(1) as f64;
        let predicted_per_iteration = |r: &Report, m: &stencil::model::ModelReport| {
            m.predicted.overlapped.as_secs_f64() / (r.iterations - r.resumed_at.unwrap_or(0)).max(1) as f64
        };
        let picked = runs
            .iter()
            .min_by(|a, b| predicted_per_iteration(a.1, a.2).total_cmp(&predicted_per_iteration(b.1, b.2)))
            .expect("not empty");
        let best = runs.iter().min_by(|a, b| per_iteration(a.1).total_cmp(&per_iteration(b.1))).expect("not empty");
        let ratio = per_iteration(picked.1) / per_iteration(best.1);
        println!(
            "the model picks {} among these; measured, it takes {ratio:.3}× the best measured ({}): {}",
            picked.0,
            best.0,
            if ratio <= 1.10 { "within 10 %" } else { "NOT within 10 %" }
        );
    }
}

/// `--checkpoint`: write u every `--checkpoint-every` iterations, and resume from the file.
fn with_checkpoint<'a, T: Real>(solver: Solver<'a, Jacobi7, T, 3>, args: &Args) -> Solver<'a, Jacobi7, T, 3> {
    match &args.checkpoint {
        Some(path) => solver.checkpoint(Checkpoint::every(args.checkpoint_every, path).resume()),
        None => solver,
    }
}

/// The problem's input and stopping rule: `--iterations`, or the tolerance.
fn configure<'a, T: Real>(
    solver: Solver<'a, Jacobi7, T, 3>,
    args: &Args,
    f: &'a Grid<T, 3>,
    h2: f64,
    check_every: Option<usize>,
) -> Solver<'a, Jacobi7, T, 3> {
    let mut solver = solver.input("f", f).param("h2", h2);
    if let Some(m) = check_every {
        solver = solver.check_every(m);
    }
    match args.iterations {
        Some(k) => solver.max_iterations(k),
        None => solver
            .tolerance(Tolerance::Absolute { norm: Norm::Max, eps: args.tolerance })
            .residual(args.residual.into()),
    }
}

/// The initial guess, copied for every run, or iterated on in place by the only run.
struct Starting<T: Real> {
    grid: Grid<T, 3>,
    in_place: bool,
}

impl<T: Real> Starting<T> {
    fn run(&mut self, mut solver: Solver<'_, Jacobi7, T, 3>) -> stencil::Result<Report> {
        if self.in_place {
            return solver.run(&mut self.grid);
        }
        solver.run(&mut self.grid.clone())
    }
}

fn progress() -> Result<ProgressBar, Box<dyn std::error::Error>> {
    let bar = ProgressBar::new_spinner().with_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}")?);
    bar.enable_steady_tick(Duration::from_millis(100));
    Ok(bar)
}

/// Passes in the prefix, the slabs of the pass as the bar, the last check in the message.
fn slab_progress() -> Result<ProgressBar, Box<dyn std::error::Error>> {
    let style = ProgressStyle::with_template("{spinner} {elapsed} {prefix} [{bar:24}] slab {pos}/{len} {msg}")?;
    let bar = ProgressBar::new(1).with_style(style.progress_chars("=> "));
    bar.enable_steady_tick(Duration::from_millis(100));
    Ok(bar)
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
