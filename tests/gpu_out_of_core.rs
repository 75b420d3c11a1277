//! `Schedule::OutOfCore` on the GPU against its CPU twin and `Plain`, bit for bit in exact
//! mode: a device-memory limit that forces at least four slabs, heights that neither the
//! slab width nor the iteration count divide, f32 and f64, 1-D/2-D/3-D, radius 2, an exact
//! hierarchical inner schedule, stopping on a tolerance, a non-finite value and a limit
//! that does not fit. Needs a GPU: the tests are ignored unless asked for
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

    /// Radius 2 in 3-D, a field read off the point, `if` and `sqrt`.
    fn varied(mut u: Field3, k: Field3) -> Real {
        let s = (k[0, 1, 0] * k[0, 0, -1] + 1.0).sqrt();
        let m = if u[0, 0, 0] > 0.0 { u[0, 0, 2] } else { u[-2, 0, 0] };
        (u[-1, 0, 0] + u[1, 0, 0] + u[0, 1, 0] + u[0, 0, -1] + m + s) / (5.0 + s)
    }
}

/// The device-memory limit at which the widest slab is `width` planes: two slots of
/// `arrays` chunk buffers of `width + 2·height·radius` planes, and the carry.
fn limit_for<T: Real>(width: usize, height: usize, radius: usize, plane_len: usize, arrays: usize) -> usize {
    let ghost = height * radius;
    (2 * arrays * (width + 2 * ghost) + ghost) * plane_len * T::BYTES
}

#[allow(clippy::too_many_arguments)]
fn solve<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    input: &str,
    params: &[(&str, f64)],
    schedule: Schedule,
    backend: Backend,
    iterations: usize,
    check_every: usize,
) -> (Grid<T, N>, Report) {
    let f = random::<T, N>(shape, 2);
    let mut u = random::<T, N>(shape, 1);
    let mut solver = Solver::new(stencil)
        .backend(backend)
        .schedule(schedule)
        .mode(Mode::Exact)
        .input(input, &f)
        .max_iterations(iterations)
        .check_every(check_every);
    for (name, value) in params {
        solver = solver.param(name, *value);
    }
    let report = solver.run(&mut u).unwrap();
    (u, report)
}

/// GPU against the CPU twin (iterate and residuals bit for bit) and against `Plain` on the
/// CPU, with the slabs that `limit` allows, which must be `width` planes wide.
#[allow(clippy::too_many_arguments)]
fn check<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    input: &str,
    params: &[(&str, f64)],
    (width, height, inner): (usize, usize, Inner),
    iterations: usize,
    check_every: usize,
) {
    let radius = S::META.radius[0];
    let plane_len: usize = shape[1..].iter().product();
    // The pyramid's slabs come from a limit that fits `width` planes exactly; skewed ones are
    // given their width.
    let schedule = if matches!(inner, Inner::Skewed | Inner::SkewedStreaming { .. }) {
        Schedule::OutOfCore { slab: Some(width), height, inner, device_memory: None }
    } else {
        let limit = limit_for::<T>(width, height, radius, plane_len, 3);
        Schedule::OutOfCore { slab: None, height, inner, device_memory: Some(limit) }
    };
    let what = format!("{} {} {shape:?} {schedule}", S::META.name, T::NAME);
    let slabs = (shape[0] - 2 * radius).div_ceil(width);
    assert!(slabs >= 4, "{what}: {slabs} slabs");
    let run =
        |schedule, backend| solve::<S, T, N>(stencil, shape, input, params, schedule, backend, iterations, check_every);
    let (cpu, cpu_report) = run(schedule, Backend::Cpu);
    let (gpu, gpu_report) = run(schedule, Backend::Cuda { device: 0 });
    assert!(
        gpu_report.schedule.to_string().starts_with(&format!("out-of-core(slab {width},")),
        "{what}: {}",
        gpu_report.schedule
    );
    assert_eq!(differing(&cpu, &gpu), 0, "{what}: GPU and CPU twin differ");
    assert_eq!(cpu_report.iterations, gpu_report.iterations, "{what}");
    assert_eq!(cpu_report.residuals.len(), gpu_report.residuals.len(), "{what}");
    for (x, y) in cpu_report.residuals.iter().zip(&gpu_report.residuals) {
        assert_eq!(x.iteration, y.iteration, "{what}");
        assert_eq!(x.max, y.max, "{what}: L∞ residuals differ");
        assert!((x.l2 - y.l2).abs() <= 1e-12 * x.l2.max(1e-300), "{what}: L2 {} vs {}", x.l2, y.l2);
    }
    let (plain, _) = run(Schedule::Plain, Backend::Cpu);
    assert_eq!(differing(&plain, &gpu), 0, "{what}: out-of-core differs from Plain");
    let (gpu_plain, _) = run(Schedule::Plain, Backend::Cuda { device: 0 });
    assert_eq!(differing(&gpu_plain, &gpu), 0, "{what}: out-of-core differs from Plain on the GPU");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn three_dimensional_f32_and_f64() {
    require_gpu();
    for (width, height, iterations, check_every) in [(7, 4, 23, 4), (5, 3, 10, 7), (1, 2, 9, 3), (11, 6, 6, 6)] {
        let config = (width, height, Inner::Plain);
        check::<_, f32, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], config, iterations, check_every);
        check::<_, f64, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], config, iterations, check_every);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_and_one_dimensional() {
    require_gpu();
    for (width, height) in [(13, 5), (20, 8), (3, 1)] {
        check::<_, f32, 2>(Jacobi5, [101, 131], "f", &[("h2", 0.01)], (width, height, Inner::Plain), 17, 5);
        check::<_, f64, 2>(Jacobi5, [101, 131], "f", &[("h2", 0.01)], (width, height, Inner::Plain), 17, 5);
    }
    check::<_, f64, 1>(Wide, [1009], "f", &[("w", 0.5)], (97, 6, Inner::Plain), 29, 7);
    check::<_, f32, 1>(Wide, [1009], "f", &[("w", 0.5)], (250, 3, Inner::Plain), 29, 29);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn radius_two_and_an_exact_hierarchical_inner_schedule() {
    require_gpu();
    check::<_, f64, 3>(Varied, [43, 19, 23], "k", &[], (6, 3, Inner::Plain), 13, 4);
    let inner = Inner::Hierarchical { tile: 8, halo: 4, sub: 2 };
    check::<_, f64, 3>(Varied, [43, 19, 23], "k", &[], (6, 5, inner), 13, 5);
    let inner = Inner::Hierarchical { tile: 6, halo: 3, sub: 3 };
    check::<_, f32, 3>(Jacobi7, [50, 29, 31], "f", &[("h2", 0.1)], (9, 7, inner), 20, 7);
    check::<_, f32, 2>(Jacobi5, [101, 131], "f", &[("h2", 0.01)], (13, 8, inner), 17, 8);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn streaming_cycles_inside_the_slabs_equal_plain() {
    require_gpu();
    // Heights that are and are not multiples of the cycle's length; a checked pass ends with
    // one plain iteration.
    let inner = |tile, sub| Inner::Streaming { tile, sub };
    check::<_, f32, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], (7, 8, inner(8, 4)), 23, 8);
    check::<_, f64, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], (11, 6, inner(8, 4)), 20, 6);
    check::<_, f64, 3>(Varied, [43, 19, 23], "k", &[], (6, 5, inner(6, 2)), 13, 5);
    check::<_, f32, 2>(Jacobi5, [101, 131], "f", &[("h2", 0.01)], (13, 8, inner(32, 8)), 17, 8);
    check::<_, f64, 2>(Jacobi5, [101, 131], "f", &[("h2", 0.01)], (20, 7, inner(16, 3)), 17, 7);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn streaming_cycles_inside_skewed_slabs_equal_plain() {
    require_gpu();
    // Heights that are and are not multiples of the cycle's length; a checked pass ends with
    // one plain level.
    let inner = |tile, sub| Inner::SkewedStreaming { tile, sub };
    check::<_, f32, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], (12, 6, inner(8, 3)), 23, 6);
    check::<_, f64, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], (10, 7, inner(8, 2)), 20, 7);
    check::<_, f64, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], (9, 8, inner(6, 4)), 17, 100);
    check::<_, f64, 3>(Varied, [43, 19, 23], "k", &[], (9, 4, inner(6, 2)), 13, 4);
    check::<_, f32, 2>(Jacobi5, [101, 131], "f", &[("h2", 0.01)], (20, 8, inner(32, 4)), 17, 8);
    // Passes taller than the lowest slabs: their levels stop at the interior's first plane,
    // then empty, and the slabs above take those planes over.
    check::<_, f32, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], (8, 30, inner(8, 3)), 47, 100);
    check::<_, f64, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], (10, 24, inner(6, 4)), 50, 25);
    check::<_, f64, 3>(Varied, [43, 19, 23], "k", &[], (9, 12, inner(6, 2)), 26, 100);
    check::<_, f32, 2>(Jacobi5, [101, 131], "f", &[("h2", 0.01)], (12, 40, inner(32, 4)), 60, 100);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn passes_that_start_while_the_one_before_ends_equal_plain() {
    require_gpu();
    // Seven slabs (an odd count: consecutive passes start in alternate slots), many passes
    // with no check between them, a last pass shorter than the others (its first slab, sent
    // up ahead for a pass of the full height, goes up again), checks every pass (a skewed
    // pass's first slab computed ahead, measured, before the host reads the check of the
    // pass before), and checks every second pass (computed ahead for the wrong pass, and
    // again).
    let inners = [Inner::Plain, Inner::Skewed, Inner::Streaming { tile: 8, sub: 2 }];
    for (inner, height) in inners.into_iter().zip([3, 4, 4]) {
        for check_every in [100, height, 2 * height] {
            let config = (9, height, inner);
            check::<_, f32, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], config, 31, check_every);
            check::<_, f64, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], config, 31, check_every);
        }
    }
    let inner = Inner::SkewedStreaming { tile: 8, sub: 4 };
    check::<_, f32, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], (9, 8, inner), 41, 100);
    check::<_, f32, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], (9, 8, inner), 41, 8);
    check::<_, f64, 2>(Jacobi5, [101, 131], "f", &[("h2", 0.01)], (15, 8, inner), 41, 16);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn skewed_slabs_equal_plain() {
    require_gpu();
    // Slabs narrower than height · radius included (width 1 and 3).
    for (width, height, iterations, check_every) in [(7, 4, 23, 4), (1, 2, 9, 3), (11, 6, 6, 6), (3, 9, 20, 9)] {
        let config = (width, height, Inner::Skewed);
        check::<_, f32, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], config, iterations, check_every);
        check::<_, f64, 3>(Jacobi7, [61, 37, 41], "f", &[("h2", 0.1)], config, iterations, check_every);
    }
    check::<_, f32, 2>(Jacobi5, [101, 131], "f", &[("h2", 0.01)], (13, 5, Inner::Skewed), 17, 5);
    check::<_, f64, 1>(Wide, [1009], "f", &[("w", 0.5)], (97, 6, Inner::Skewed), 29, 7);
    check::<_, f64, 3>(Varied, [43, 19, 23], "k", &[], (6, 3, Inner::Skewed), 13, 4);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn converges_like_plain_and_stops_at_the_same_iteration() {
    require_gpu();
    let shape = [66, 34, 34];
    let f = Grid::<f32, 3>::filled(shape, 1.0).unwrap();
    let solve = |schedule| {
        let mut u = Grid::<f32, 3>::zeros(shape).unwrap();
        let report = Solver::new(Jacobi7)
            .backend(Backend::Cuda { device: 0 })
            .mode(Mode::Exact)
            .schedule(schedule)
            .input("f", &f)
            .param("h2", 1e-3)
            .tolerance(Tolerance::Absolute { norm: Norm::Max, eps: 1e-6 })
            .check_every(8)
            .max_iterations(100_000)
            .run(&mut u)
            .unwrap();
        (u, report)
    };
    let (plain_u, plain) = solve(Schedule::Plain);
    // Skewed slabs compute the next pass's first slab before the host reads the check: at
    // the stop it is left unused, and the grid is the iterate checked.
    let skewed_streaming = Inner::SkewedStreaming { tile: 8, sub: 4 };
    for inner in [Inner::Plain, Inner::Skewed, skewed_streaming] {
        let schedule = Schedule::OutOfCore { slab: Some(9), height: 8, inner, device_memory: None };
        let (u, report) = solve(schedule);
        assert_eq!(report.stop, StopReason::Converged, "{inner:?}");
        assert_eq!(report.iterations, plain.iterations, "{inner:?}");
        assert_eq!(report.residuals.last().unwrap().max, plain.residuals.last().unwrap().max, "{inner:?}");
        assert_eq!(differing(&u, &plain_u), 0, "{inner:?}");
        println!("{inner:?}: converged in {} iterations: {report}", report.iterations);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_non_finite_value_and_a_limit_that_does_not_fit_are_errors() {
    require_gpu();
    let shape = [40, 20, 20];
    let f = Grid::<f64, 3>::filled(shape, 1.0).unwrap();
    let mut u0 = random::<f64, 3>(shape, 4);
    u0.as_mut_slice()[(29 * 20 + 5) * 20 + 7] = f64::NAN;
    let fail = |schedule, backend| {
        let mut u = u0.clone();
        let error = Solver::new(Jacobi7)
            .backend(backend)
            .mode(Mode::Exact)
            .schedule(schedule)
            .input("f", &f)
            .param("h2", 0.1)
            .max_iterations(40)
            .check_every(6)
            .run(&mut u)
            .unwrap_err();
        (u, error.to_string())
    };
    let schedule = Schedule::OutOfCore { slab: Some(5), height: 4, inner: Inner::Plain, device_memory: None };
    let (u, error) = fail(schedule, Backend::Cuda { device: 0 });
    let (twin_u, twin_error) = fail(schedule, Backend::Cpu);
    assert!(error.contains("iteration 6"), "{error}");
    assert_eq!(error, twin_error);
    let same =
        u.as_slice().iter().zip(twin_u.as_slice()).all(|(a, b)| a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan());
    assert!(same, "the grid after the error differs from the CPU twin's");

    let tight = Schedule::OutOfCore { slab: None, height: 4, inner: Inner::Plain, device_memory: Some(100_000) };
    let mut u = u0.clone();
    let error =
        Solver::new(Jacobi7).backend(Backend::Cuda { device: 0 }).schedule(tight).input("f", &f).param("h2", 0.1);
    let error = error.max_iterations(3).run(&mut u).unwrap_err();
    assert!(matches!(error, stencil::Error::DeviceMemory { .. }), "{error}");
    assert_eq!(differing(&u, &u0), 0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_resumed_gpu_run_ends_where_an_uninterrupted_one_does_and_a_stopped_pass_says_so() {
    require_gpu();
    let shape = [40, 17, 33];
    let f = random::<f32, 3>(shape, 2);
    let u0 = random::<f32, 3>(shape, 1);
    let device = Backend::Cuda { device: 0 };
    let limit = limit_for::<f32>(7, 4, 1, 17 * 33, 3);
    let out_of_core = Schedule::OutOfCore { slab: None, height: 4, inner: Inner::Plain, device_memory: Some(limit) };
    let solver = |schedule| {
        Solver::new(Jacobi7).backend(device).schedule(schedule).mode(Mode::Exact).input("f", &f).param("h2", 0.01)
    };
    for schedule in [Schedule::Plain, out_of_core] {
        let dir = tempfile::tempdir().unwrap();
        let checkpoint = Checkpoint::every(6, dir.path().join("u.npz")).resume();
        let mut whole = u0.clone();
        solver(schedule).max_iterations(31).run(&mut whole).unwrap();
        let mut part = u0.clone();
        solver(schedule).max_iterations(20).checkpoint(checkpoint.clone()).run(&mut part).unwrap();
        let mut resumed = random::<f32, 3>(shape, 5);
        let report = solver(schedule).max_iterations(31).checkpoint(checkpoint).run(&mut resumed).unwrap();
        assert_eq!((report.iterations, report.resumed_at), (31, Some(18)), "{schedule}");
        assert_eq!(differing(&resumed, &whole), 0, "{schedule}");
    }

    // Every slab of every pass is reported once its copy to the host has finished.
    let mut seen = Vec::new();
    solver(out_of_core)
        .max_iterations(10)
        .on_slab(|p| seen.push((p.pass_end, p.slab, p.slabs)))
        .run(&mut u0.clone())
        .unwrap();
    let expected: Vec<_> = [4, 8, 10].into_iter().flat_map(|end| (1..=6).map(move |s| (end, s, 6))).collect();
    assert_eq!(seen, expected);

    // A pass stopped after three slabs (of 7 planes, from the limit) leaves their planes at
    // the new iterate and the rest at the old one.
    let mut u = u0.clone();
    let err = solver(out_of_core).max_iterations(8).fail_after_slabs(3).run(&mut u).unwrap_err();
    let stencil::Error::StoppedMidPass { pass_start, pass_end, written_to, .. } = err else { panic!("{err:?}") };
    assert_eq!((pass_start, pass_end, written_to), (0, 4, 1 + 3 * 7));
    let mut four = u0.clone();
    solver(Schedule::Plain).max_iterations(4).run(&mut four).unwrap();
    let split = written_to * 17 * 33;
    let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
    assert!(same(&u.as_slice()[..split], &four.as_slice()[..split]));
    assert!(same(&u.as_slice()[split..], &u0.as_slice()[split..]));
}
