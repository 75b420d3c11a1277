//! CPU benchmark (not a test): how close the rayon twin of the built-in Jacobi stencils
//! comes to the memory bandwidth of the machine.
//!
//! It measures (a) the bandwidth of a large parallel copy (and of an add, whose traffic is
//! that of an ideal Jacobi pass), counting the bytes read and written, and (b) `Jacobi7` and
//! `Jacobi5` in f32 and f64 on the `--sizes` grids, each through `Solver` for a fixed number
//! of iterations after a warm-up run, counting 3 arrays per point (read u and f, write u:
//! 12 B/point in f32, 24 in f64). It prints a markdown table. The target is that the
//! stencils reach 80 % of the copy bandwidth.
//!
//! A run's time includes the residual check of the last iteration (the second buffer is
//! allocated before the clock starts); so the table also gives the steady rate of plain
//! passes, from the difference between runs of k and 2k iterations.
//!
//! After the twin on a cubic grid, the C/OpenMP peer (`peer.c`, compiled with the system's C
//! compiler at `-O3 -march=x86-64-v3 -fopenmp`) runs the same grid and iterations on the same
//! threads, in both precisions (`--no-peer` leaves it out); its rate is the best of its own
//! three runs, without a residual check, to be read beside the twin's steady rate.
//!
//! ```text
//! cargo run --release --example 05_bench_cpu
//! cargo run --release --example 05_bench_cpu -- --sizes 128x128x128,2048x2048 --iterations 100 --threads 1
//! ```

#[path = "../common/mod.rs"]
mod common;
mod peer;

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use rayon::prelude::*;
use stencil::builtin::{Jacobi5, Jacobi5Params, Jacobi7, Jacobi7Params};
use stencil::prelude::*;

/// Copy bandwidth and stencil throughput of the CPU twin.
#[derive(Parser)]
struct Args {
    /// Grid shapes, boundary included: `AxBxC` runs Jacobi7, `AxB` runs Jacobi5.
    #[arg(long, value_delimiter = ',', default_value = "256x256x256,4096x4096", value_parser = parse_shape)]
    sizes: Vec<Vec<usize>>,
    /// Timed iterations per run, k (runs of 2k also run, for the steady rate).
    #[arg(long, default_value_t = 100, value_parser = common::int(20..=1_000_000))]
    iterations: usize,
    /// Threads of rayon's global pool (default: one per core).
    #[arg(long, value_parser = common::int(1..=1024))]
    threads: Option<usize>,
    /// Size of each bandwidth-probe buffer, in MiB (three are allocated).
    #[arg(long, default_value_t = 1024, value_parser = common::int(1..=1 << 20))]
    copy_mib: usize,
    /// Timed runs of every measurement; the best is reported.
    #[arg(long, default_value_t = 3, value_parser = common::int(1..=1000))]
    repeats: usize,
    /// Leave out the C/OpenMP peer.
    #[arg(long)]
    no_peer: bool,
}

fn parse_shape(s: &str) -> Result<Vec<usize>, String> {
    let shape = s.split('x').map(str::parse).collect::<Result<Vec<usize>, _>>();
    match shape {
        Ok(shape) if (2..=3).contains(&shape.len()) && shape.iter().all(|&n| n >= 3) => Ok(shape),
        _ => Err(format!(
            "`{s}` is not a 2-D or 3-D shape of at least 3 points per axis, such as 4096x4096 or 256x256x256"
        )),
    }
}

/// One row of the table.
struct Row {
    /// The report of the fastest run.
    report: Report,
    /// Points per second of plain passes alone, in 10⁹.
    steady_gpoints_per_s: f64,
}

fn main() -> ExitCode {
    common::exit(run(common::parse()))
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(threads) = args.threads {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build_global()?;
    }
    let (copy, add) = stream_bandwidth(args.copy_mib << 20, args.repeats.max(5))?;
    println!(
        "{} threads, buffers of {} MiB f32, best of {}:",
        rayon::current_num_threads(),
        args.copy_mib,
        args.repeats.max(5)
    );
    println!("  copy  b = a      {copy:.1} GB/s (8 B/element read + written)");
    println!("  add   c = a + b  {add:.1} GB/s (12 B/element: the traffic of an ideal Jacobi pass)\n");

    let peers = match args.no_peer {
        true => None,
        false => Some(Peers::compile()),
    };
    let mut rows = Vec::new();
    let mut peer_rows = Vec::new();
    for shape in &args.sizes {
        if let &[a, b, c] = shape.as_slice() {
            let h2 = 1.0 / ((a - 1) as f64).powi(2);
            rows.push(bench(Jacobi7, Jacobi7Params { h2: h2 as f32 }, [a, b, c], &args)?);
            rows.push(bench(Jacobi7, Jacobi7Params { h2 }, [a, b, c], &args)?);
            if let (Some(peers), true) = (&peers, a == b && b == c) {
                peer_rows.extend(peers.rows(a, &args, copy));
            }
        } else {
            let [a, b] = [shape[0], shape[1]];
            let h2 = 1.0 / ((a - 1) as f64).powi(2);
            rows.push(bench(Jacobi5, Jacobi5Params { h2: h2 as f32 }, [a, b], &args)?);
            rows.push(bench(Jacobi5, Jacobi5Params { h2 }, [a, b], &args)?);
        }
    }

    println!(
        "| stencil | precision | grid | iterations | wall (s) | Gpoint/s | GB/s | of copy | steady GB/s | steady of copy |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for Row { report: r, steady_gpoints_per_s } in &rows {
        let shape: Vec<String> = r.shape.iter().map(ToString::to_string).collect();
        let steady = steady_gpoints_per_s * r.bytes_per_point as f64;
        println!(
            "| {} | {} | {} | {} | {:.3} | {:.3} | {:.1} | {:.0} % | {steady:.1} | {:.0} % |",
            r.stencil,
            r.precision,
            shape.join("×"),
            r.iterations,
            r.wall.as_secs_f64(),
            r.gpoints_per_s(),
            r.effective_gb_per_s(),
            100.0 * r.effective_gb_per_s() / copy,
            100.0 * steady / copy,
        );
    }
    for row in &peer_rows {
        println!("{row}");
    }
    if let Some(peers) = &peers {
        println!("\nThe peer: {}.", peers.note());
    }
    println!(
        "\nGB/s count {} B/point in f32 and {} in f64 (read u and f, write u). \"steady\": runs of 2k less runs",
        Jacobi7::META.bytes_per_point(4),
        Jacobi7::META.bytes_per_point(8)
    );
    println!("of k iterations, which leaves k plain passes without the final residual check.");
    Ok(())
}

/// The C/OpenMP peer in both precisions, or why it is missing.
struct Peers {
    dir: tempfile::TempDir,
    compiled: Vec<(&'static str, Result<peer::Peer, String>)>,
}

impl Peers {
    fn compile() -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder for the peer");
        let compiled = [("f32", "float"), ("f64", "double")]
            .into_iter()
            .map(|(name, c_type)| (name, peer::Peer::compile(dir.path(), c_type)))
            .collect();
        Self { dir, compiled }
    }

    /// The peer's rows for an n³ grid: its rate, or why there is none.
    fn rows(&self, n: usize, args: &Args, copy: f64) -> Vec<String> {
        let threads = rayon::current_num_threads();
        self.compiled
            .iter()
            .map(|(precision, peer)| {
                let bytes = Jacobi7::META.bytes_per_point(if *precision == "f32" { 4 } else { 8 }) as f64;
                match peer.as_ref().map_err(Clone::clone).and_then(|p| p.time(n, args.iterations, threads)) {
                    Ok(rate) => format!(
                        "| peer: C OpenMP loop | {precision} | {n}×{n}×{n} | {} | — | — | — | — | {:.1} | {:.0} % |",
                        args.iterations,
                        rate * bytes,
                        100.0 * rate * bytes / copy
                    ),
                    Err(why) => format!("| peer: C OpenMP loop | {precision} | {n}×{n}×{n} | — | {why} |"),
                }
            })
            .collect()
    }

    /// How the peer was compiled, and where.
    fn note(&self) -> String {
        let commands: Vec<String> =
            self.compiled.iter().filter_map(|(_, p)| p.as_ref().ok().map(|p| p.command.clone())).collect();
        match commands.first() {
            Some(command) => format!(
                "`{command}` (in {}), steady GB/s = its best run's rate × the twin's bytes per point",
                self.dir.path().display()
            ),
            None => "not compiled (no C compiler with OpenMP)".into(),
        }
    }
}

/// Best bandwidths of `repeats` parallel copies `b = a` and adds `c = a + b` of
/// `bytes`-long f32 buffers, in GB/s counting every byte read and written.
fn stream_bandwidth(bytes: usize, repeats: usize) -> stencil::Result<(f64, f64)> {
    const CHUNK: usize = 1 << 16;
    let len = bytes / size_of::<f32>();
    // One-axis grids, whose allocation fails with an error rather than an abort.
    let [mut a, mut b, mut c] = [Grid::<f32, 1>::zeros([len])?, Grid::zeros([len])?, Grid::zeros([len])?];
    let [a, b, c] = [a.as_mut_slice(), b.as_mut_slice(), c.as_mut_slice()];
    // Touch the buffers from the pool's threads first, so no page fault is timed.
    for (x, v) in [(&mut *a, 1.0), (&mut *b, 2.0), (&mut *c, 0.0)] {
        x.par_chunks_mut(CHUNK).for_each(|chunk| chunk.fill(v));
    }
    let best = |pass: &mut dyn FnMut()| {
        (0..repeats)
            .map(|_| {
                let started = Instant::now();
                pass();
                started.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let copy = best(&mut || b.par_chunks_mut(CHUNK).zip(a.par_chunks(CHUNK)).for_each(|(b, a)| b.copy_from_slice(a)));
    let add = best(&mut || {
        c.par_chunks_mut(CHUNK).zip(a.par_chunks(CHUNK)).zip(b.par_chunks(CHUNK)).for_each(|((c, a), b)| {
            for ((c, a), b) in c.iter_mut().zip(a).zip(b) {
                *c = a + b;
            }
        });
    });
    assert_eq!(c[len - 1], 2.0);
    Ok((2.0 * bytes as f64 / copy / 1e9, 3.0 * bytes as f64 / add / 1e9))
}

/// The best of `args.repeats` runs of `k = args.iterations` iterations after a warm-up
/// run, and the steady rate: the best run of `2k` less the best run of `k` is `k` plain
/// passes, without the residual check that every run pays once.
fn bench<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    params: S::Params<T>,
    shape: [usize; N],
    args: &Args,
) -> stencil::Result<Row> {
    let f = Grid::<T, N>::filled(shape, T::from_f64(1.0))?;
    let mut u = Grid::<T, N>::random_uniform(shape, T::from_f64(-1.0), T::from_f64(1.0), 1)?;
    u.set_boundary([1; N], |_| T::ZERO);
    let mut best = |iterations: usize, repeats: usize| -> stencil::Result<Report> {
        let mut best: Option<Report> = None;
        for _ in 0..repeats {
            let report = Solver::new(stencil)
                .input("f", &f)
                .params(params)
                .schedule(Schedule::Plain)
                .max_iterations(iterations)
                .check_every(iterations)
                .run(&mut u)?;
            if best.as_ref().is_none_or(|b| report.wall < b.wall) {
                best = Some(report);
            }
        }
        Ok(best.expect("at least one run"))
    };
    let k = args.iterations;
    best(k / 4, 1)?;
    let one = best(k, args.repeats)?;
    let two = best(2 * k, args.repeats)?;
    let plain_passes = two.wall.saturating_sub(one.wall).as_secs_f64();
    let steady_gpoints_per_s = (one.interior_points * k) as f64 / plain_passes.max(1e-9) / 1e9;
    Ok(Row { report: one, steady_gpoints_per_s })
}
