//! `Schedule::Hierarchical` on the GPU against its CPU twin, bit for bit in exact mode, for
//! exact configurations (halo ≥ sub · radius, which also equal `Plain`) and for paper 003's
//! inexact iteration (halo = radius), in f32 and f64, 1-D/2-D/3-D, prime sizes, tiles
//! larger than the grid and a user-written radius-2 stencil. Needs a GPU: the tests are ignored unless asked for
//! (`cargo test -- --include-ignored`, as `.gpu/run-tests` does), and then fail without one.

use stencil::builtin::{Jacobi5, Jacobi7};
use stencil::cuda::Mode;
use stencil::prelude::*;

mod common;
use common::{differing, random, require_gpu};

stencil! {
    /// Radius 2 in 1-D.
    fn wide(mut u: Field1, f: Field1, w: Real) -> Real {
        (u[-2] + u[2] + w * (u[-1] + u[1]) + f[0]) / (2.0 + 2.0 * w)
    }

    /// Radius 2 in 3-D, a field read off the point (staged in shared memory), `if` and `sqrt`.
    fn varied(mut u: Field3, k: Field3) -> Real {
        let s = (k[0, 1, 0] * k[0, 0, -1] + 1.0).sqrt();
        let m = if u[0, 0, 0] > 0.0 { u[0, 0, 2] } else { u[0, -2, 0] };
        (u[-1, 0, 0] + u[1, 0, 0] + u[0, 1, 0] + u[0, 0, -1] + m + s) / (5.0 + s)
    }
}

stencil! {
    /// Radius 2 across, 1 along, a field read off the point, and `if`: the register kernel
    /// shuffles every read, including those a branch does not take.
    fn skewed(mut u: Field2, k: Field2) -> Real {
        let m = if u[0, 0] > 0.0 { u[0, 2] } else { u[0, -2] };
        (u[-1, 0] + u[1, 0] + u[0, -1] + m + k[1, -1] * k[0, 1]) / (4.0 + k[0, 0].abs())
    }

    /// Independent rows (radius 0 on the slow axis), as paper 003's 1-D problem.
    fn rows(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 2.0
    }
}

/// `iterations` iterations with `schedule` on `backend`, checked every 2 iterations.
#[allow(clippy::too_many_arguments)]
fn solve<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    input: &str,
    params: &[(&str, f64)],
    schedule: Schedule,
    backend: Backend,
    iterations: usize,
) -> (Grid<T, N>, Report) {
    let f = random::<T, N>(shape, 2);
    let mut u = random::<T, N>(shape, 1);
    let mut solver = Solver::new(stencil)
        .backend(backend)
        .schedule(schedule)
        .mode(Mode::Exact)
        .input(input, &f)
        .max_iterations(iterations)
        .check_every(2);
    for (name, value) in params {
        solver = solver.param(name, *value);
    }
    let report = solver.run(&mut u).unwrap();
    (u, report)
}

/// GPU against the CPU twin (bitwise, residuals included), and exact configurations
/// against `Plain` on the CPU.
fn check<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    input: &str,
    params: &[(&str, f64)],
    (tile, halo, sub): (usize, usize, usize),
) {
    let schedule = Schedule::Hierarchical { tile, halo, sub };
    let what = format!("{} {} {shape:?} {schedule}", S::META.name, T::NAME);
    let iterations = 2 * sub + 1;
    let (cpu, cpu_report) = solve::<S, T, N>(stencil, shape, input, params, schedule, Backend::Cpu, iterations);
    let (gpu, gpu_report) =
        solve::<S, T, N>(stencil, shape, input, params, schedule, Backend::Cuda { device: 0 }, iterations);
    assert_eq!(differing(&cpu, &gpu), 0, "{what}: GPU and CPU twin differ");
    assert_eq!(cpu_report.iterations, gpu_report.iterations, "{what}");
    assert_eq!(cpu_report.residuals.len(), gpu_report.residuals.len(), "{what}");
    for (x, y) in cpu_report.residuals.iter().zip(&gpu_report.residuals) {
        assert_eq!(x.iteration, y.iteration, "{what}");
        assert_eq!(x.max, y.max, "{what}: L∞ residuals differ");
        assert!((x.l2 - y.l2).abs() <= 1e-12 * x.l2.max(1e-300), "{what}: L2 {} vs {}", x.l2, y.l2);
    }
    if schedule.is_exact_blocking(S::META) {
        let (plain, _) = solve::<S, T, N>(stencil, shape, input, params, Schedule::Plain, Backend::Cpu, iterations);
        assert_eq!(differing(&plain, &gpu), 0, "{what}: exact blocking differs from Plain");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn three_dimensional_exact_and_inexact() {
    require_gpu();
    for config in [(8, 4, 4), (8, 1, 4), (5, 3, 3), (4, 1, 1), (64, 2, 2)] {
        check::<_, f32, 3>(Jacobi7, [19, 23, 29], "f", &[("h2", 0.1)], config);
        check::<_, f64, 3>(Jacobi7, [19, 23, 29], "f", &[("h2", 0.1)], config);
    }
    check::<_, f64, 3>(Jacobi7, [3, 3, 3], "f", &[("h2", 0.1)], (8, 4, 4));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_dimensional_exact_and_inexact() {
    require_gpu();
    for config in [(32, 16, 16), (32, 1, 16), (32, 8, 8), (7, 2, 5), (1, 1, 3)] {
        check::<_, f32, 2>(Jacobi5, [101, 131], "f", &[("h2", 0.01)], config);
        check::<_, f64, 2>(Jacobi5, [101, 131], "f", &[("h2", 0.01)], config);
    }
}

/// 1-D and 2-D configurations whose working region is at most 32 points wide run the register
/// kernel `_hier_rows` (the others above run the shared-memory kernel).
#[test]
#[ignore = "needs a CUDA GPU"]
fn register_kernel_in_one_and_two_dimensions() {
    require_gpu();
    for config in [(24, 4, 4), (28, 2, 8), (30, 1, 1), (16, 8, 3), (3, 1, 2)] {
        check::<_, f32, 2>(Jacobi5, [97, 113], "f", &[("h2", 0.01)], config);
        check::<_, f64, 2>(Jacobi5, [97, 113], "f", &[("h2", 0.01)], config);
        check::<_, f32, 2>(Rows, [37, 101], "f", &[("h2", 0.01)], config);
        check::<_, f64, 2>(Rows, [37, 101], "f", &[("h2", 0.01)], config);
    }
    for config in [(24, 4, 2), (20, 6, 3), (28, 2, 4), (5, 2, 1)] {
        check::<_, f32, 2>(Skewed, [41, 67], "k", &[], config);
        check::<_, f64, 2>(Skewed, [41, 67], "k", &[], config);
        check::<_, f32, 1>(Wide, [211], "f", &[("w", 0.5)], config);
        check::<_, f64, 1>(Wide, [211], "f", &[("w", 0.5)], config);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_dimensional_and_radius_two() {
    require_gpu();
    for config in [(32, 8, 4), (32, 2, 8), (13, 5, 2)] {
        check::<_, f32, 1>(Wide, [1009], "f", &[("w", 0.5)], config);
        check::<_, f64, 1>(Wide, [1009], "f", &[("w", 0.5)], config);
    }
    for config in [(6, 4, 2), (6, 2, 3), (8, 2, 1)] {
        check::<_, f32, 3>(Varied, [17, 19, 23], "k", &[], config);
        check::<_, f64, 3>(Varied, [17, 19, 23], "k", &[], config);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn converges_like_the_cpu_twin() {
    require_gpu();
    let shape = [130, 130];
    let f = Grid::<f64, 2>::filled(shape, 1.0).unwrap();
    let solve = |backend| {
        let mut u = Grid::<f64, 2>::filled(shape, 1.0).unwrap();
        let report = Solver::new(Jacobi5)
            .input("f", &f)
            .param("h2", (1.0f64 / 129.0).powi(2))
            .backend(backend)
            .mode(Mode::Exact)
            .schedule(Schedule::Hierarchical { tile: 32, halo: 1, sub: 16 })
            .tolerance(Tolerance::Relative { norm: Norm::L2, factor: 1e-3 })
            .max_iterations(1_000_000)
            .run(&mut u)
            .unwrap();
        (u, report)
    };
    let (cpu, cpu_report) = solve(Backend::Cpu);
    let (gpu, gpu_report) = solve(Backend::Cuda { device: 0 });
    assert_eq!(cpu_report.stop, StopReason::Converged);
    assert_eq!(cpu_report.iterations, gpu_report.iterations);
    assert_eq!(differing(&cpu, &gpu), 0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_working_region_beyond_shared_memory_is_an_error() {
    require_gpu();
    let shape = [300, 300, 300];
    let f = Grid::<f64, 3>::zeros(shape).unwrap();
    let u0 = Grid::<f64, 3>::filled(shape, 2.0).unwrap();
    let mut u = u0.clone();
    let error = Solver::new(Jacobi7)
        .input("f", &f)
        .param("h2", 1.0)
        .backend(Backend::Cuda { device: 0 })
        .schedule(Schedule::Hierarchical { tile: 64, halo: 8, sub: 8 })
        .max_iterations(8)
        .run(&mut u)
        .unwrap_err();
    assert!(matches!(error, stencil::Error::Launch { .. }), "{error}");
    assert!(error.to_string().contains("shared memory"), "{error}");
    assert!(u.as_slice() == u0.as_slice());
}

/// `Schedule::Auto` on the GPU times plain and exact blocking, keeps the fastest, says so, and
/// computes what `Plain` computes, bit for bit in exact mode.
#[test]
#[ignore = "needs a CUDA GPU"]
fn auto_chooses_by_measurement_and_equals_plain() {
    require_gpu();
    let shape = [515, 1029];
    let run = |schedule: Schedule, backend: Backend| {
        let f = random::<f32, 2>(shape, 2);
        let mut u = random::<f32, 2>(shape, 1);
        let report = Solver::new(Jacobi5)
            .input("f", &f)
            .param("h2", 0.01)
            .backend(backend)
            .schedule(schedule)
            .mode(Mode::Exact)
            .max_iterations(301)
            .run(&mut u)
            .unwrap();
        (u, report)
    };
    let (auto, report) = run(Schedule::Auto, Backend::Cuda { device: 0 });
    let (plain, _) = run(Schedule::Plain, Backend::Cpu);
    let reason = report.schedule_choice.clone().unwrap();
    eprintln!("auto chose {}: {reason}", report.schedule);
    assert!(reason.contains("measured on"), "{reason}");
    assert!(reason.contains("plain "), "{reason}");
    assert_eq!(report.iterations, 301);
    assert_eq!(differing(&auto, &plain), 0, "Auto ({}) differs from Plain", report.schedule);
    // The second run takes the cached choice.
    let (_, again) = run(Schedule::Auto, Backend::Cuda { device: 0 });
    assert_eq!(again.schedule, report.schedule);
    assert_eq!(again.schedule_choice, report.schedule_choice);
}
