//! `Schedule::Streaming` on the GPU against `Plain` on the CPU, bit for bit in exact mode: a
//! cycle of `sub` subiterations must equal `sub` plain iterations for radius 1 and 2, read-only
//! fields read off the point, 1-D to 3-D, no reads across planes, the levels of a step in
//! ascending and in descending order, f32 and f64, several columns
//! per thread, several chunks of the marching axis, every combination of boundary conditions,
//! systems, and the residuals a check records. Needs a GPU: the tests are ignored unless asked for
//! (`cargo test -- --include-ignored`, as `.gpu/run-tests` does), and then fail without one.

use stencil::builtin::{GrayScott, GrayScottParams, Jacobi5, Jacobi7};
use stencil::cuda::{CudaOptions, Mode};
use stencil::prelude::*;

mod common;
use common::{boundary_combinations, differing, random, require_gpu};

stencil! {
    /// Radius 2 in 1-D.
    fn wide(mut u: Field1, f: Field1, w: Real) -> Real {
        (u[-2] + u[2] + w * (u[-1] + u[1]) + f[0]) / (2.0 + 2.0 * w)
    }

    /// Radius 2 in 3-D, a field read off the point, reads across planes and columns at once,
    /// `if` and `sqrt`.
    fn varied(mut u: Field3, k: Field3) -> Real {
        let s = (k[0, 1, 0] * k[0, 0, -1] + 1.0).sqrt();
        let m = if u[0, 0, 0] > 0.0 { u[0, 0, 2] } else { u[0, -2, 0] };
        (u[-1, 0, 0] + u[2, 0, 0] + u[-1, 1, 0] + u[1, 0, -1] + m + s) / (5.0 + s)
    }

    /// No read across planes: radius 0 on the marching axis.
    fn planar(mut u: Field3, f: Field3) -> Real {
        (u[0, 1, 0] + u[0, -1, 0] + u[0, 0, 1] + u[0, 0, -1] + f[0, 0, 0]) / 4.5
    }

    /// A corner read in 2-D (a plane behind and a column across).
    fn corner5(mut u: Field2, f: Field2) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + 0.5 * u[-1, 1] + f[0, 0]) / 4.5
    }

    /// A read across columns a whole radius ahead on the marching axis: its levels run
    /// descending, each two planes behind the one before it.
    fn corner_ahead(mut u: Field2, f: Field2) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + 0.5 * u[1, -1] + f[0, 0]) / 4.5
    }
}

/// `iterations` iterations of `stencil` with `schedule` on `backend` in exact mode, checked
/// every 3 iterations.
#[allow(clippy::too_many_arguments)]
fn solve<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    input: &str,
    params: &[(&str, f64)],
    boundaries: Boundaries<N>,
    schedule: Schedule,
    backend: Backend,
    threads: Option<u32>,
    iterations: usize,
) -> (Grid<T, N>, Report) {
    let f = random::<T, N>(shape, 2);
    let mut u = random::<T, N>(shape, 1);
    let mut solver = Solver::new(stencil)
        .backend(backend)
        .schedule(schedule)
        .boundaries(boundaries)
        .cuda(CudaOptions { stream_threads: threads, ..CudaOptions::default() })
        .mode(Mode::Exact)
        .input(input, &f)
        .max_iterations(iterations)
        .check_every(3);
    for (name, value) in params {
        solver = solver.param(name, *value);
    }
    let report = solver.run(&mut u).unwrap();
    (u, report)
}

/// Where streaming cycles of (tile, sub) on the GPU differ from `Plain` on the CPU, for every
/// combination of boundary conditions when `all_boundaries`: with the default threads per
/// block (a column each, mostly), and with 64 (several consecutive columns each, whose
/// neighbours on axis 2 come from each other's registers).
fn compare<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    input: &str,
    params: &[(&str, f64)],
    configs: &[(usize, usize)],
    all_boundaries: bool,
) -> Vec<String> {
    let mut wrong = Vec::new();
    let boundaries = if all_boundaries { boundary_combinations::<N>() } else { vec![Boundaries::default()] };
    for &(tile, sub) in configs {
        for &b in &boundaries {
            let schedule = Schedule::Streaming { tile, sub };
            let iterations = 2 * sub + 2;
            let run = |schedule, backend, threads| {
                solve::<S, T, N>(stencil, shape, input, params, b, schedule, backend, threads, iterations)
            };
            let (plain, plain_report) = run(Schedule::Plain, Backend::Cpu, None);
            for threads in [None, Some(64)] {
                let what = format!("{} {} {shape:?} {b} {schedule} threads {threads:?}", S::META.name, T::NAME);
                let (gpu, gpu_report) = run(schedule, Backend::Cuda { device: 0 }, threads);
                let differ = differing(&plain, &gpu);
                if differ > 0 {
                    wrong.push(format!("{what}: {differ} points differ from Plain"));
                }
                let (p, g) = (&plain_report.residuals, &gpu_report.residuals);
                let same = |p: &stencil::ResidualSample, g: &stencil::ResidualSample| {
                    p.iteration == g.iteration && p.max == g.max && (p.l2 - g.l2).abs() <= 1e-12 * p.l2.max(1e-300)
                };
                if p.len() != g.len() || !p.iter().zip(g).all(|(p, g)| same(p, g)) {
                    wrong.push(format!("{what}: residuals {p:?} and {g:?}"));
                }
            }
        }
    }
    wrong
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn three_dimensional_cycles_equal_plain() {
    require_gpu();
    let configs = [(8, 4), (5, 3), (4, 1), (64, 2), (16, 8)];
    let mut wrong = compare::<_, f32, 3>(Jacobi7, [19, 23, 29], "f", &[("h2", 0.1)], &configs, false);
    wrong.extend(compare::<_, f64, 3>(Jacobi7, [19, 23, 29], "f", &[("h2", 0.1)], &configs, false));
    // Several chunks of axis 0 per tile, and regions of more columns than a block's threads.
    wrong.extend(compare::<_, f32, 3>(Jacobi7, [150, 21, 37], "f", &[("h2", 0.1)], &[(8, 2), (40, 4)], false));
    wrong.extend(compare::<_, f64, 3>(Jacobi7, [3, 3, 3], "f", &[("h2", 0.1)], &[(8, 4)], false));
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn radius_two_one_and_two_dimensions_equal_plain() {
    require_gpu();
    let mut wrong = compare::<_, f32, 3>(Varied, [17, 19, 23], "k", &[], &[(6, 2), (6, 3), (8, 1)], false);
    wrong.extend(compare::<_, f64, 3>(Varied, [17, 19, 23], "k", &[], &[(6, 2)], false));
    for configs in [&[(32, 16), (7, 5), (1, 3)][..], &[(300, 8)]] {
        wrong.extend(compare::<_, f32, 2>(Jacobi5, [101, 131], "f", &[("h2", 0.01)], configs, false));
        wrong.extend(compare::<_, f64, 2>(Jacobi5, [101, 131], "f", &[("h2", 0.01)], configs, false));
    }
    wrong.extend(compare::<_, f32, 2>(Corner5, [301, 67], "f", &[], &[(16, 4)], false));
    wrong.extend(compare::<_, f64, 2>(CornerAhead, [211, 67], "f", &[], &[(16, 4), (8, 3)], false));
    wrong.extend(compare::<_, f64, 1>(Wide, [1009], "f", &[("w", 0.5)], &[(32, 4), (13, 2)], false));
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn planes_without_reads_across_them_equal_plain() {
    require_gpu();
    // With radius 0 on the marching axis the steady steps run to a region's last plane; under
    // compute-sanitizer this also checks that no load there goes past the grid's last plane.
    let mut wrong = compare::<_, f32, 3>(Planar, [40, 21, 23], "f", &[], &[(8, 4), (16, 3)], false);
    wrong.extend(compare::<_, f64, 3>(Planar, [67, 13, 11], "f", &[], &[(8, 2)], false));
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_boundary_combination_equals_plain() {
    require_gpu();
    let mut wrong = compare::<_, f32, 3>(Jacobi7, [9, 11, 13], "f", &[("h2", 0.1)], &[(4, 2)], true);
    wrong.extend(compare::<_, f64, 3>(Varied, [11, 9, 13], "k", &[], &[(5, 2)], true));
    wrong.extend(compare::<_, f32, 2>(Corner5, [23, 29], "f", &[], &[(8, 3)], true));
    wrong.extend(compare::<_, f32, 2>(CornerAhead, [23, 29], "f", &[], &[(8, 3)], true));
    wrong.extend(compare::<_, f64, 1>(Wide, [61], "f", &[("w", 0.5)], &[(8, 2)], true));
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn systems_equal_plain_for_every_combination() {
    require_gpu();
    let params = GrayScottParams { du: 0.2, dv: 0.1, feed: 0.03, kill: 0.06, dt: 0.9 };
    for b in boundary_combinations::<2>() {
        let run = |schedule, backend, threads| {
            let (mut u, mut v) = (random::<f32, 2>([37, 45], 1), random::<f32, 2>([37, 45], 2));
            Solver::new(GrayScott)
                .params(params)
                .boundaries(b)
                .schedule(schedule)
                .backend(backend)
                .cuda(CudaOptions { stream_threads: threads, ..CudaOptions::default() })
                .mode(Mode::Exact)
                .max_iterations(11)
                .run_system(&mut [&mut u, &mut v])
                .unwrap();
            (u, v)
        };
        let (pu, pv) = run(Schedule::Plain, Backend::Cpu, None);
        // 16 columns a block, one a thread; 48 columns on 32 threads, two consecutive ones each.
        for (tile, threads) in [(8, None), (40, Some(32))] {
            let (gu, gv) = run(Schedule::Streaming { tile, sub: 4 }, Backend::Cuda { device: 0 }, threads);
            assert_eq!(differing(&pu, &gu) + differing(&pv, &gv), 0, "gray_scott {b} tile {tile} {threads:?}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn converges_like_plain_at_any_threads_per_block() {
    require_gpu();
    let shape = [66, 70, 74];
    let f = Grid::<f64, 3>::filled(shape, 1.0).unwrap();
    let solve = |schedule, backend, threads| {
        let mut u = Grid::<f64, 3>::filled(shape, 0.0).unwrap();
        let report = Solver::new(Jacobi7)
            .input("f", &f)
            .param("h2", (1.0f64 / 65.0).powi(2))
            .backend(backend)
            .cuda(CudaOptions { stream_threads: threads, ..CudaOptions::default() })
            .mode(Mode::Exact)
            .schedule(schedule)
            .tolerance(Tolerance::Relative { norm: Norm::L2, factor: 1e-2 })
            .check_every(6)
            .max_iterations(100_000)
            .run(&mut u)
            .unwrap();
        (u, report)
    };
    let (plain, plain_report) = solve(Schedule::Plain, Backend::Cpu, None);
    assert_eq!(plain_report.stop, StopReason::Converged);
    for threads in [None, Some(64), Some(1024)] {
        let (gpu, report) = solve(Schedule::Streaming { tile: 16, sub: 6 }, Backend::Cuda { device: 0 }, threads);
        assert_eq!(report.iterations, plain_report.iterations, "{threads:?} threads");
        assert_eq!(differing(&plain, &gpu), 0, "{threads:?} threads");
    }
}
