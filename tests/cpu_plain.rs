//! The plain (Jacobi) twin against loops written out by hand, on awkward shapes with a
//! random boundary: the boundary never changes and every interior point is updated.

use stencil::builtin::{Jacobi7, Jacobi7Params};
use stencil::prelude::*;
use stencil::{Error, Residual};

stencil! {
    /// Radius 2, one-sided reads, a coefficient field.
    fn line(mut u: Field1, k: Field1) -> Real {
        (k[0] * u[-2] + u[-1] + u[1]) / (k[0] + 2.0)
    }

    /// A Gauss–Seidel sweep along a line.
    sweep(+) fn smooth_line(mut u: Field1) -> Real {
        (u[-1] + u[1]) / 2.0
    }
}

#[test]
fn jacobi7_matches_a_hand_loop_and_keeps_the_boundary() {
    let shape = [7, 13, 11];
    let u0 = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, 21).unwrap();
    let f = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, 22).unwrap();
    let h2 = 0.37;
    let mut expected = u0.clone();
    for _ in 0..3 {
        let u = expected.clone();
        for i in 1..shape[0] - 1 {
            for j in 1..shape[1] - 1 {
                for k in 1..shape[2] - 1 {
                    expected[[i, j, k]] = (u[[i - 1, j, k]]
                        + u[[i + 1, j, k]]
                        + u[[i, j - 1, k]]
                        + u[[i, j + 1, k]]
                        + u[[i, j, k - 1]]
                        + u[[i, j, k + 1]]
                        + h2 * f[[i, j, k]])
                        / 6.0;
                }
            }
        }
    }
    let mut u = u0.clone();
    Solver::new(Jacobi7).input("f", &f).params(Jacobi7Params { h2 }).max_iterations(3).run(&mut u).unwrap();
    assert!(u.as_slice() == expected.as_slice());
    for (flat, (&now, &before)) in u.as_slice().iter().zip(u0.as_slice()).enumerate() {
        let index = [flat / (shape[1] * shape[2]), flat / shape[2] % shape[1], flat % shape[2]];
        let edge = (0..3).any(|a| index[a] == 0 || index[a] == shape[a] - 1);
        assert!(!edge || now == before, "boundary point {index:?} changed");
    }
}

#[test]
fn one_dimensional_passes_split_into_chunks_exactly() {
    // Longer than one parallel chunk (16384 points), so chunk edges are crossed.
    let n = 40_003;
    let u0 = Grid::<f32, 1>::random_uniform([n], -1.0, 1.0, 9).unwrap();
    let k = Grid::<f32, 1>::random_uniform([n], 0.5, 2.0, 10).unwrap();
    let mut expected = u0.clone();
    for _ in 0..2 {
        let u = expected.clone();
        for i in 2..n - 2 {
            expected[[i]] = (k[[i]] * u[[i - 2]] + u[[i - 1]] + u[[i + 1]]) / (k[[i]] + 2.0);
        }
    }
    let mut u = u0;
    Solver::new(Line).input("k", &k).max_iterations(2).run(&mut u).unwrap();
    assert!(u.as_slice() == expected.as_slice());
}

mod radius;

#[test]
fn radius_eight_runs_on_every_schedule() {
    radius::every_schedule_equals_plain(Backend::Cpu);
}

/// `Residual::SinceLastCheck` measures ‖uᵏ − uʲ‖ from one check j to the next k (every
/// period and the last iteration) over the interior, on every Jacobi schedule, and
/// stops at the first check below the tolerance; the rules and schedules that cannot
/// measure it are refused.
#[test]
fn the_change_since_the_last_check_is_measured_between_checks() {
    let shape = [11, 9, 10];
    let f = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, 7).unwrap();
    let u0 = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, 8).unwrap();
    let params = Jacobi7Params { h2: 0.01 };
    // The iterates one plain iteration at a time.
    let mut iterates = vec![u0.clone()];
    let mut solver = Solver::new(Jacobi7).input("f", &f).params(params).schedule(Schedule::Plain).max_iterations(1);
    for _ in 0..25 {
        let mut u = iterates.last().unwrap().clone();
        solver.run(&mut u).unwrap();
        iterates.push(u);
    }
    let change = |k: usize, j: usize| {
        let (mut max, mut sum) = (0f64, 0f64);
        for i in 1..shape[0] - 1 {
            for l in 1..shape[1] - 1 {
                for m in 1..shape[2] - 1 {
                    let d = iterates[k][[i, l, m]] - iterates[j][[i, l, m]];
                    (max, sum) = (max.max(d.abs()), sum + d * d);
                }
            }
        }
        (max, sum.sqrt())
    };
    let expected = [(10, change(10, 0)), (20, change(20, 10)), (25, change(25, 20))];
    let schedules = [
        Schedule::Plain,
        Schedule::Tiled,
        Schedule::Hierarchical { tile: 4, halo: 3, sub: 3 },
        Schedule::Streaming { tile: 4, sub: 2 },
        Schedule::OutOfCore { slab: Some(3), height: 4, inner: Inner::Plain, device_memory: None },
        Schedule::OutOfCore { slab: Some(2), height: 6, inner: Inner::Skewed, device_memory: None },
        Schedule::OutOfCore {
            slab: Some(3),
            height: 5,
            inner: Inner::SkewedStreaming { tile: 4, sub: 2 },
            device_memory: None,
        },
    ];
    for schedule in schedules {
        let run = |solver: Solver<'_, Jacobi7, f64, 3>| {
            let mut u = u0.clone();
            let solver = solver.input("f", &f).params(params).schedule(schedule).residual(Residual::SinceLastCheck);
            let report = solver.check_every(10).run(&mut u).unwrap();
            (report, u)
        };
        let none = Tolerance::Absolute { norm: Norm::Max, eps: 0.0 };
        let (report, u) = run(Solver::new(Jacobi7).tolerance(none).max_iterations(25));
        assert_eq!(u.as_slice(), iterates[25].as_slice(), "{schedule:?}");
        assert_eq!(report.residuals.len(), 3, "{schedule:?}");
        for (sample, &(at, (max, l2))) in report.residuals.iter().zip(&expected) {
            assert_eq!((sample.iteration, sample.max), (at, max), "{schedule:?}");
            assert!((sample.l2 - l2).abs() <= 1e-12 * l2, "{schedule:?}: {} against {l2}", sample.l2);
        }
        // Stops at the first check below the tolerance: the change from 10 to 20 is smaller.
        let eps = (expected[0].1.0 + expected[1].1.0) / 2.0;
        assert!(expected[1].1.0 < eps && eps < expected[0].1.0);
        let (report, u) = run(Solver::new(Jacobi7).tolerance(Tolerance::Absolute { norm: Norm::Max, eps }));
        assert_eq!((report.iterations, report.stop), (20, StopReason::Converged), "{schedule:?}");
        assert_eq!(u.as_slice(), iterates[20].as_slice(), "{schedule:?}");
    }
    let refused = |solver: Solver<'_, Jacobi7, f64, 3>| {
        let mut u = u0.clone();
        let mut solver = solver.input("f", &f).params(params).residual(Residual::SinceLastCheck).max_iterations(4);
        match solver.run(&mut u) {
            Err(Error::InvalidStoppingRule { reason }) => reason,
            other => panic!("expected the rule to be refused, got {other:?}"),
        }
    };
    // A non-finite value is found where a step check finds it.
    let mut inf = Grid::<f64, 3>::filled(shape, 0.0).unwrap();
    inf[[4, 5, 6]] = f64::INFINITY;
    let mut u = u0.clone();
    let absolute = Tolerance::Absolute { norm: Norm::Max, eps: 1e-9 };
    let solver = Solver::new(Jacobi7).input("f", &inf).params(params).residual(Residual::SinceLastCheck);
    match solver.tolerance(absolute).max_iterations(10).check_every(2).run(&mut u) {
        Err(Error::NonFinite { iteration: 2, index, .. }) => assert_eq!(index, [3, 5, 6]),
        other => panic!("expected a non-finite value at iteration 2, got {other:?}"),
    }
    let relative = Tolerance::Relative { norm: Norm::Max, factor: 1e-3 };
    assert!(refused(Solver::new(Jacobi7).tolerance(relative)).contains("absolute tolerance"));
    let inexact = Schedule::Hierarchical { tile: 4, halo: 1, sub: 2 };
    assert!(refused(Solver::new(Jacobi7).tolerance(absolute).schedule(inexact)).contains("inexact"));
    let mut line = Grid::<f64, 1>::random_uniform([20], -1.0, 1.0, 3).unwrap();
    let mut sweep = Solver::new(SmoothLine).residual(Residual::SinceLastCheck).tolerance(absolute).max_iterations(4);
    match sweep.run(&mut line) {
        Err(Error::InvalidStoppingRule { reason }) => assert!(reason.contains("sweeps"), "{reason}"),
        other => panic!("expected the rule to be refused, got {other:?}"),
    }
}
