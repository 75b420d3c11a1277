//! The CPU twin of `Schedule::OutOfCore` (the pyramid of papers 000/001): slabs written back
//! in place equal `Plain` bit for bit for every slab width, height and inner schedule; the
//! residual is checked once per pass and is `Plain`'s; a device-memory limit cuts the grid
//! into the widest slabs that fit; bad configurations are errors that leave the grid alone.

use proptest::prelude::*;
use stencil::builtin::Jacobi7;
use stencil::prelude::*;

mod common;
use common::run;

stencil! {
    /// Radius 2 along the slow axis (so a pass needs 2·height ghost planes), 1 along the fast.
    fn deep(mut u: Field2, k: Field2) -> Real {
        (u[-2, 0] + u[2, 0] + u[0, -1] + u[0, 1] + k[0, 0] * u[-1, 0]) / (k[0, 0] + 4.0)
    }
}

stencil! {
    /// 1-D Poisson: a slab of a 1-D grid is a run of points.
    fn line(mut u: Field1, f: Field1, h2: Real) -> Real {
        (u[-1] + u[1] + h2 * f[0]) / 2.0
    }
}

fn bitwise<const N: usize>(a: &Grid<f64, N>, b: &Grid<f64, N>) -> bool {
    a.as_slice().iter().zip(b.as_slice()).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn out_of_core(slab: usize, height: usize, inner: Inner) -> Schedule {
    Schedule::OutOfCore { slab: Some(slab), height, inner, device_memory: None }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn slabs_equal_plain_in_3d(
        shape in [3usize..20, 3usize..9, 3usize..9],
        slab in 1usize..8,
        height in 1usize..6,
        iterations in 1usize..14,
        seed in 0u64..1000,
    ) {
        let u0 = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, seed).unwrap();
        let f = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, seed + 1).unwrap();
        let params = [("h2", 0.3)];
        let plain = run(Jacobi7, &u0, ("f", &f), &params, Schedule::Plain, iterations);
        let slabs = run(Jacobi7, &u0, ("f", &f), &params, out_of_core(slab, height, Inner::Plain), iterations);
        prop_assert!(bitwise(&plain, &slabs));
        let skewed = run(Jacobi7, &u0, ("f", &f), &params, out_of_core(slab, height, Inner::Skewed), iterations);
        prop_assert!(bitwise(&plain, &skewed));
    }

    #[test]
    fn slabs_equal_plain_with_radius_two_on_the_slow_axis(
        shape in [5usize..30, 3usize..12],
        slab in 1usize..9,
        height in 1usize..5,
        iterations in 1usize..12,
        seed in 0u64..1000,
    ) {
        let u0 = Grid::<f64, 2>::random_uniform(shape, -1.0, 1.0, seed).unwrap();
        let k = Grid::<f64, 2>::random_uniform(shape, 0.5, 2.0, seed + 1).unwrap();
        let plain = run(Deep, &u0, ("k", &k), &[], Schedule::Plain, iterations);
        let slabs = run(Deep, &u0, ("k", &k), &[], out_of_core(slab, height, Inner::Plain), iterations);
        prop_assert!(bitwise(&plain, &slabs));
        let skewed = run(Deep, &u0, ("k", &k), &[], out_of_core(slab, height, Inner::Skewed), iterations);
        prop_assert!(bitwise(&plain, &skewed));
    }

    #[test]
    fn slabs_equal_plain_in_1d(
        n in 3usize..200,
        slab in 1usize..40,
        height in 1usize..9,
        iterations in 1usize..20,
        seed in 0u64..1000,
    ) {
        let u0 = Grid::<f64, 1>::random_uniform([n], -1.0, 1.0, seed).unwrap();
        let f = Grid::<f64, 1>::random_uniform([n], -1.0, 1.0, seed + 1).unwrap();
        let params = [("h2", 0.01)];
        let plain = run(Line, &u0, ("f", &f), &params, Schedule::Plain, iterations);
        let slabs = run(Line, &u0, ("f", &f), &params, out_of_core(slab, height, Inner::Plain), iterations);
        prop_assert!(bitwise(&plain, &slabs));
        let skewed = run(Line, &u0, ("f", &f), &params, out_of_core(slab, height, Inner::Skewed), iterations);
        prop_assert!(bitwise(&plain, &skewed));
    }

    #[test]
    fn exact_cycles_inside_the_slabs_equal_plain(
        shape in [3usize..18, 3usize..10, 3usize..10],
        slab in 1usize..7,
        height in 1usize..7,
        tile in 1usize..6,
        sub in 1usize..4,
        iterations in 1usize..12,
        seed in 0u64..1000,
    ) {
        let u0 = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, seed).unwrap();
        let f = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, seed + 1).unwrap();
        let params = [("h2", 0.3)];
        let plain = run(Jacobi7, &u0, ("f", &f), &params, Schedule::Plain, iterations);
        let inner = Inner::Hierarchical { tile, halo: sub, sub };
        let slabs = run(Jacobi7, &u0, ("f", &f), &params, out_of_core(slab, height, inner), iterations);
        prop_assert!(bitwise(&plain, &slabs));
        let streaming = Inner::Streaming { tile, sub };
        let slabs = run(Jacobi7, &u0, ("f", &f), &params, out_of_core(slab, height, streaming), iterations);
        prop_assert!(bitwise(&plain, &slabs));
        let skewed = Inner::SkewedStreaming { tile, sub };
        let slabs = run(Jacobi7, &u0, ("f", &f), &params, out_of_core(slab, height, skewed), iterations);
        prop_assert!(bitwise(&plain, &slabs));
    }
}

#[test]
fn a_device_memory_limit_cuts_the_widest_slabs_that_fit() {
    let shape = [41, 12, 10];
    let u0 = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, 7).unwrap();
    let f = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, 8).unwrap();
    let params = [("h2", 0.2)];
    let plain = run(Jacobi7, &u0, ("f", &f), &params, Schedule::Plain, 23);
    // Per slot three chunk buffers (u twice, f) of w + 2·4 planes of 12·10·8 B, plus a carry
    // of 4 planes: (2·3·(w + 8) + 4)·960 B ≤ 61 440 B gives w = 2, so 20 slabs.
    let schedule = Schedule::OutOfCore { slab: None, height: 4, inner: Inner::Plain, device_memory: Some(61_440) };
    let mut limited = u0.clone();
    let report = Solver::new(Jacobi7)
        .input("f", &f)
        .param("h2", 0.2)
        .schedule(schedule)
        .max_iterations(23)
        .run(&mut limited)
        .unwrap();
    assert!(report.schedule.to_string().starts_with("out-of-core(slab 2, height 4"), "{}", report.schedule);
    assert!(bitwise(&plain, &limited));

    let mut u = u0.clone();
    let tight = Schedule::OutOfCore { slab: None, height: 4, inner: Inner::Plain, device_memory: Some(50_000) };
    let error = Solver::new(Jacobi7).input("f", &f).param("h2", 0.2).schedule(tight).max_iterations(3).run(&mut u);
    let error = error.unwrap_err();
    assert!(matches!(error, stencil::Error::DeviceMemory { needed: 55_680, limit: 50_000, .. }), "{error}");
    assert!(u.as_slice() == u0.as_slice());
}

#[test]
fn the_residual_is_checked_once_per_pass_and_is_the_plain_residual() {
    let shape = [34, 34];
    let u0 = Grid::<f64, 2>::filled(shape, 1.0).unwrap();
    let f = Grid::<f64, 2>::filled(shape, 1.0).unwrap();
    let h2 = (1.0f64 / 33.0).powi(2);
    let tolerance = Tolerance::Relative { norm: Norm::L2, factor: 1e-2 };
    let height = 6;
    let solve = |schedule: Schedule, check_every: Option<usize>| {
        let mut u = u0.clone();
        let mut solver = Solver::new(stencil::builtin::Jacobi5)
            .input("f", &f)
            .param("h2", h2)
            .schedule(schedule)
            .tolerance(tolerance)
            .max_iterations(100_000);
        if let Some(m) = check_every {
            solver = solver.check_every(m);
        }
        let report = solver.run(&mut u).unwrap();
        (u, report)
    };
    // By default a pass is checked, as in the paper's Algorithm 1 (line 16).
    let (u, report) = solve(out_of_core(5, height, Inner::Plain), None);
    let (plain_u, plain) = solve(Schedule::Plain, Some(height));
    assert_eq!(report.stop, StopReason::Converged);
    assert_eq!(report.iterations, plain.iterations);
    assert_eq!(report.residuals.len(), plain.residuals.len());
    for (sample, twin) in report.residuals.iter().zip(&plain.residuals) {
        assert_eq!(sample.iteration, twin.iteration);
        assert_eq!(sample.max.to_bits(), twin.max.to_bits(), "L∞ at iteration {}", sample.iteration);
        assert!((sample.l2 - twin.l2).abs() <= 1e-12 * twin.l2, "L2 at iteration {}", sample.iteration);
    }
    assert!(bitwise(&u, &plain_u));
    // A check period that the height does not divide shortens the passes that reach a check.
    let (u, report) = solve(out_of_core(7, height, Inner::Plain), Some(10));
    let (plain_u, plain) = solve(Schedule::Plain, Some(10));
    assert_eq!(report.iterations, plain.iterations);
    let at = |r: &Report| r.residuals.iter().map(|s| s.iteration).collect::<Vec<_>>();
    assert_eq!(at(&report), at(&plain));
    assert!(bitwise(&u, &plain_u));
}

#[test]
fn a_non_finite_value_stops_the_run_with_the_whole_iterate_in_the_grid() {
    let shape = [20, 9];
    let mut u0 = Grid::<f64, 2>::random_uniform(shape, -1.0, 1.0, 5).unwrap();
    u0.as_mut_slice()[11 * 9 + 4] = f64::INFINITY;
    let k = Grid::<f64, 2>::filled(shape, 1.0).unwrap();
    let fail = |schedule: Schedule| {
        let mut u = u0.clone();
        let error = Solver::new(Deep)
            .input("k", &k)
            .schedule(schedule)
            .max_iterations(50)
            .check_every(4)
            .run(&mut u)
            .unwrap_err();
        (u, error)
    };
    let (u, error) = fail(out_of_core(3, 4, Inner::Plain));
    let (plain_u, plain_error) = fail(Schedule::Plain);
    assert!(matches!(error, stencil::Error::NonFinite { iteration: 4, .. }), "{error}");
    assert_eq!(error.to_string(), plain_error.to_string());
    assert!(
        u.as_slice()
            .iter()
            .zip(plain_u.as_slice())
            .all(|(a, b)| a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan())
    );
}

#[test]
fn bad_configurations_are_errors_that_leave_the_grid_alone() {
    let u0 = Grid::<f64, 2>::random_uniform([12, 10], -1.0, 1.0, 3).unwrap();
    let k = Grid::<f64, 2>::filled([12, 10], 1.0).unwrap();
    let hierarchical = |halo, sub| Inner::Hierarchical { tile: 4, halo, sub };
    for (schedule, needle) in [
        (out_of_core(2, 0, Inner::Plain), "height"),
        (out_of_core(0, 2, Inner::Plain), "at least one plane"),
        (Schedule::OutOfCore { slab: None, height: 2, inner: Inner::Plain, device_memory: Some(0) }, "0 bytes"),
        (out_of_core(2, 2, hierarchical(2, 2)), "must be exact"),
        (out_of_core(2, 2, hierarchical(1, 0)), "inner schedule"),
        (out_of_core(2, 2, Inner::Streaming { tile: 0, sub: 2 }), "inner schedule: the tile"),
        (out_of_core(2, 2, Inner::Streaming { tile: 4, sub: 0 }), "inner schedule: a cycle"),
    ] {
        let mut u = u0.clone();
        let error = Solver::new(Deep).input("k", &k).schedule(schedule).max_iterations(3).run(&mut u).unwrap_err();
        assert!(matches!(error, stencil::Error::InvalidSchedule { .. }), "{error}");
        assert!(error.to_string().contains(needle), "{needle}: {error}");
        assert!(u.as_slice() == u0.as_slice());
    }
}

#[test]
fn every_slab_of_every_pass_is_reported_in_order() {
    let shape = [23, 6, 7];
    let u0 = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, 1).unwrap();
    let f = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, 2).unwrap();
    let mut seen = Vec::new();
    Solver::new(Jacobi7)
        .input("f", &f)
        .param("h2", 0.1)
        .schedule(out_of_core(6, 4, Inner::Plain))
        .max_iterations(10)
        .on_slab(|p| seen.push((p.pass_start, p.pass_end, p.slab, p.slabs)))
        .run(&mut u0.clone())
        .unwrap();
    // 21 interior planes in slabs of 6: 4 slabs; passes of 4, 4 and 2 iterations.
    let expected: Vec<_> =
        [(0, 4), (4, 8), (8, 10)].into_iter().flat_map(|(a, b)| (1..=4).map(move |s| (a, b, s, 4))).collect();
    assert_eq!(seen, expected);
}
