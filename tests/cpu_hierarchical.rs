//! The CPU twin of `Schedule::Hierarchical`: exact configurations (halo ≥ sub · radius)
//! equal `Plain` bit for bit, every configuration keeps the boundary, the inexact iteration
//! (a smaller halo) is the block Jacobi method that docs/schedules.md defines (checked against a
//! hand-written loop), and the stopping rules work per cycle.

use proptest::prelude::*;
use stencil::builtin::{Jacobi5, Jacobi7};
use stencil::prelude::*;

mod common;
use common::run;

stencil! {
    /// Radius 2 along the fast axis, 1 along the slow one, with a coefficient field.
    fn wide(mut u: Field2, k: Field2) -> Real {
        (k[0, 0] * u[0, -2] + u[0, -1] + u[0, 2] + u[-1, 0] + u[1, 0]) / (k[0, 0] + 4.0)
    }
}

stencil! {
    /// 1-D Poisson on every row of a 2-D grid: rows are independent (radius 0 on axis 0).
    fn rows(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 2.0
    }
}

fn boundary_unchanged<const N: usize>(before: &Grid<f64, N>, after: &Grid<f64, N>, radius: [usize; N]) -> bool {
    let shape = before.shape();
    before.as_slice().iter().zip(after.as_slice()).enumerate().all(|(flat, (b, a))| {
        let mut rest = flat;
        let mut edge = false;
        for axis in (0..N).rev() {
            let i = rest % shape[axis];
            rest /= shape[axis];
            edge |= i < radius[axis] || i >= shape[axis] - radius[axis];
        }
        !edge || a.to_bits() == b.to_bits()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn exact_configurations_equal_plain_in_3d(
        shape in [3usize..14, 3usize..14, 3usize..14],
        tile in 1usize..7,
        sub in 1usize..4,
        extra in 0usize..3,
        iterations in 1usize..9,
        seed in 0u64..1000,
    ) {
        let u0 = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, seed).unwrap();
        let f = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, seed + 1).unwrap();
        let params = [("h2", 0.3)];
        let plain = run(Jacobi7, &u0, ("f", &f), &params, Schedule::Plain, iterations);
        let schedule = Schedule::Hierarchical { tile, halo: sub + extra, sub };
        let blocked = run(Jacobi7, &u0, ("f", &f), &params, schedule, iterations);
        prop_assert!(plain.as_slice().iter().zip(blocked.as_slice()).all(|(a, b)| a.to_bits() == b.to_bits()));
    }

    #[test]
    fn exact_configurations_equal_plain_with_radius_two(
        shape in [3usize..16, 5usize..24],
        tile in 1usize..9,
        sub in 1usize..5,
        extra in 0usize..3,
        iterations in 1usize..12,
        seed in 0u64..1000,
    ) {
        let u0 = Grid::<f64, 2>::random_uniform(shape, -1.0, 1.0, seed).unwrap();
        let k = Grid::<f64, 2>::random_uniform(shape, 0.5, 2.0, seed + 1).unwrap();
        let plain = run(Wide, &u0, ("k", &k), &[], Schedule::Plain, iterations);
        let schedule = Schedule::Hierarchical { tile, halo: 2 * sub + extra, sub };
        let blocked = run(Wide, &u0, ("k", &k), &[], schedule, iterations);
        prop_assert!(plain.as_slice().iter().zip(blocked.as_slice()).all(|(a, b)| a.to_bits() == b.to_bits()));
    }

    #[test]
    fn every_configuration_keeps_the_boundary(
        shape in [3usize..16, 5usize..24],
        tile in 1usize..9,
        sub in 1usize..6,
        halo in 2usize..8,
        iterations in 1usize..12,
        seed in 0u64..1000,
    ) {
        let u0 = Grid::<f64, 2>::random_uniform(shape, -1.0, 1.0, seed).unwrap();
        let k = Grid::<f64, 2>::random_uniform(shape, 0.5, 2.0, seed + 1).unwrap();
        let after = run(Wide, &u0, ("k", &k), &[], Schedule::Hierarchical { tile, halo, sub }, iterations);
        prop_assert!(boundary_unchanged(&u0, &after, [1, 2]));
        prop_assert!(after.as_slice().iter().all(|v| v.is_finite()));
    }
}

/// One cycle of the inexact iteration written out by hand for `rows`: every row is cut
/// into tiles of `tile` points; a tile loads its core and `halo` points on each side
/// (clipped at the row's ends) and runs `sub` Jacobi sweeps on the points at distance ≥ 1
/// from the region's ends; then the core is kept.
fn hand_cycle(u: &Grid<f64, 2>, f: &Grid<f64, 2>, h2: f64, tile: usize, halo: usize, sub: usize) -> Grid<f64, 2> {
    let [rows, n] = u.shape();
    let mut out = u.clone();
    for row in 0..rows {
        let mut core = 1;
        while core < n - 1 {
            let core_end = (core + tile).min(n - 1);
            let (lo, hi) = (core.saturating_sub(halo), (core_end + halo).min(n));
            let mut w: Vec<f64> = (lo..hi).map(|j| u[[row, j]]).collect();
            for _ in 0..sub {
                let old = w.clone();
                for j in lo + 1..hi - 1 {
                    let l = j - lo;
                    w[l] = (old[l - 1] + old[l + 1] + h2 * f[[row, j]]) / 2.0;
                }
            }
            for j in core..core_end {
                out[[row, j]] = w[j - lo];
            }
            core = core_end;
        }
    }
    out
}

#[test]
fn the_inexact_iteration_is_block_jacobi_with_inner_iterations() {
    let shape = [3, 41];
    let u0 = Grid::<f64, 2>::random_uniform(shape, -1.0, 1.0, 5).unwrap();
    let f = Grid::<f64, 2>::random_uniform(shape, -1.0, 1.0, 6).unwrap();
    let h2 = 0.01;
    for (tile, halo, sub) in [(8, 1, 4), (5, 2, 7), (32, 1, 3), (1, 1, 2)] {
        let mut expected = u0.clone();
        for _ in 0..3 {
            expected = hand_cycle(&expected, &f, h2, tile, halo, sub);
        }
        let got = run(Rows, &u0, ("f", &f), &[("h2", h2)], Schedule::Hierarchical { tile, halo, sub }, 3 * sub);
        assert!(got.as_slice() == expected.as_slice(), "tile {tile}, halo {halo}, sub {sub}");
        // And it is not the plain iteration (with these halos, stale values reach the cores).
        let plain = run(Rows, &u0, ("f", &f), &[("h2", h2)], Schedule::Plain, 3 * sub);
        assert!(got.as_slice() != plain.as_slice(), "tile {tile}, halo {halo}, sub {sub}");
    }
}

#[test]
fn the_last_cycle_stops_at_the_iteration_limit() {
    let shape = [9, 9, 9];
    let u0 = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, 1).unwrap();
    let f = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, 2).unwrap();
    let plain = run(Jacobi7, &u0, ("f", &f), &[("h2", 0.1)], Schedule::Plain, 7);
    let blocked = run(Jacobi7, &u0, ("f", &f), &[("h2", 0.1)], Schedule::Hierarchical { tile: 4, halo: 3, sub: 3 }, 7);
    assert!(plain.as_slice() == blocked.as_slice());
}

#[test]
fn the_residual_is_checked_per_cycle_and_is_the_plain_residual() {
    let shape = [66, 66];
    let u0 = Grid::<f64, 2>::filled(shape, 1.0).unwrap();
    let f = Grid::<f64, 2>::filled(shape, 1.0).unwrap();
    let h2 = (1.0f64 / 65.0).powi(2);
    let tolerance = Tolerance::Relative { norm: Norm::L2, factor: 1e-2 };
    let solve = |schedule: Schedule| {
        let mut u = u0.clone();
        let report = Solver::new(Jacobi5)
            .input("f", &f)
            .param("h2", h2)
            .schedule(schedule)
            .tolerance(tolerance)
            .check_every(8)
            .max_iterations(100_000)
            .run(&mut u)
            .unwrap();
        (u, report)
    };
    let sub = 8;
    // Exact temporal blocking stops as `Plain` does: cycles end on the checked iterations and
    // measure in their last subiteration, so the samples, the stopping iteration and the
    // iterate are those of `Plain`.
    let (u, report) = solve(Schedule::Hierarchical { tile: 16, halo: 8, sub });
    let (plain_u, plain) = solve(Schedule::Plain);
    assert_eq!(report.stop, StopReason::Converged);
    assert_eq!(report.iterations, plain.iterations);
    assert_eq!(report.residuals.len(), plain.residuals.len());
    for (sample, twin) in report.residuals.iter().zip(&plain.residuals) {
        assert_eq!(sample.iteration, twin.iteration);
        assert_eq!(sample.max.to_bits(), twin.max.to_bits(), "L∞ at iteration {}", sample.iteration);
        assert!((sample.l2 - twin.l2).abs() <= 1e-12 * twin.l2, "L2 at iteration {}", sample.iteration);
    }
    assert!(u.as_slice() == plain_u.as_slice());
    // The inexact iteration keeps whole cycles and measures ρ of the iterate a cycle starts
    // from (its first subiteration is one plain application), recorded one iteration later.
    let (_, inexact) = solve(Schedule::Hierarchical { tile: 16, halo: 1, sub });
    assert_eq!(inexact.stop, StopReason::Converged);
    assert_eq!(inexact.iterations % sub, 0);
    let at: Vec<usize> = inexact.residuals.iter().map(|r| r.iteration).collect();
    assert_eq!(at, (0..at.len()).map(|c| c * sub + 1).collect::<Vec<_>>());
    assert_eq!(inexact.residuals[0].max.to_bits(), plain.residuals[0].max.to_bits());
}

#[test]
fn bad_configurations_are_errors_that_leave_the_grid_alone() {
    let u0 = Grid::<f64, 2>::random_uniform([10, 10], -1.0, 1.0, 3).unwrap();
    let f = Grid::<f64, 2>::filled([10, 10], 1.0).unwrap();
    for (schedule, needle) in [
        (Schedule::Hierarchical { tile: 0, halo: 1, sub: 1 }, "tile"),
        (Schedule::Hierarchical { tile: 4, halo: 1, sub: 0 }, "subiteration"),
        (Schedule::Hierarchical { tile: 4, halo: 1, sub: 1 }, "radius (2)"),
        (Schedule::Streaming { tile: 0, sub: 2 }, "tile"),
        (Schedule::Streaming { tile: 4, sub: 0 }, "subiteration"),
        (Schedule::Streaming { tile: 4, sub: usize::MAX }, "too large"),
    ] {
        let mut u = u0.clone();
        let error = Solver::new(Wide).input("k", &f).schedule(schedule).max_iterations(3).run(&mut u).unwrap_err();
        assert!(matches!(error, stencil::Error::InvalidSchedule { .. }), "{error}");
        assert!(error.to_string().contains(needle), "{error}");
        assert!(u.as_slice() == u0.as_slice());
    }
    // An exact cycle whose halo is wider than the grid would be clipped, which across a
    // periodic edge changes the result: refused.
    for schedule in [Schedule::Streaming { tile: 4, sub: 6 }, Schedule::Hierarchical { tile: 4, halo: 12, sub: 6 }] {
        let mut u = u0.clone();
        let error = Solver::new(Wide)
            .input("k", &f)
            .boundaries(stencil::Boundaries::all(stencil::Boundary::Periodic))
            .schedule(schedule)
            .max_iterations(6)
            .run(&mut u)
            .unwrap_err();
        assert!(error.to_string().contains("wider than the grid's longest axis (10 points)"), "{error}");
        assert!(error.to_string().contains("use sub ≤ 5"), "{error}");
        assert!(u.as_slice() == u0.as_slice());
    }
}

/// A streaming cycle on the CPU runs as the exact hierarchical cycle it equals: `Plain`'s
/// iterates, residuals and stop.
#[test]
fn streaming_equals_plain_and_stops_where_it_does() {
    let shape = [23, 31];
    let f = Grid::<f64, 2>::random_uniform(shape, 0.5, 1.5, 2).unwrap();
    let solve = |schedule| {
        let mut u = Grid::<f64, 2>::random_uniform(shape, -1.0, 1.0, 1).unwrap();
        let report = Solver::new(Wide)
            .input("k", &f)
            .schedule(schedule)
            .tolerance(Tolerance::Absolute { norm: Norm::Max, eps: 1e-6 })
            .check_every(3)
            .max_iterations(100_000)
            .run(&mut u)
            .unwrap();
        (u, report)
    };
    let (plain, plain_report) = solve(Schedule::Plain);
    let (streamed, report) = solve(Schedule::Streaming { tile: 8, sub: 3 });
    assert_eq!(plain_report.stop, StopReason::Converged);
    assert_eq!(report.iterations, plain_report.iterations);
    assert_eq!(report.residuals.len(), plain_report.residuals.len());
    for (s, p) in report.residuals.iter().zip(&plain_report.residuals) {
        assert_eq!((s.iteration, s.max), (p.iteration, p.max));
        // A sum over tiles: the order differs, the value equals to rounding.
        assert!((s.l2 - p.l2).abs() <= 1e-12 * p.l2, "{} and {}", s.l2, p.l2);
    }
    assert!(plain.as_slice() == streamed.as_slice());
    assert_eq!(report.schedule, Schedule::Streaming { tile: 8, sub: 3 });
}

#[test]
fn auto_on_the_cpu_is_plain_and_says_why() {
    let shape = [34, 34];
    let f = Grid::<f64, 2>::filled(shape, 1.0).unwrap();
    let mut u = Grid::<f64, 2>::zeros(shape).unwrap();
    let report = Solver::new(Jacobi5)
        .input("f", &f)
        .param("h2", 1e-3)
        .backend(Backend::Cpu)
        .max_iterations(10)
        .run(&mut u)
        .unwrap();
    assert_eq!(report.schedule, Schedule::Plain);
    let reason = report.schedule_choice.as_deref().unwrap();
    assert!(reason.contains("CPU"), "{reason}");
    assert!(report.to_string().contains(reason), "the report prints the reason");
    // An explicit schedule carries no reason.
    let explicit = Solver::new(Jacobi5)
        .input("f", &f)
        .param("h2", 1e-3)
        .schedule(Schedule::Plain)
        .max_iterations(10)
        .run(&mut u)
        .unwrap();
    assert_eq!(explicit.schedule_choice, None);
}
