//! Bad input is an error, never a panic, and a rejected run leaves the grid untouched.

use stencil::builtin::{Jacobi5, Jacobi5Params, Jacobi7};
use stencil::prelude::*;
use stencil::{Error, Progress};

stencil! {
    /// Divides by the right-hand side: f = 0 somewhere makes the iterate infinite.
    fn divide(mut u: Field2, f: Field2) -> Real {
        (u[-1, 0] + u[1, 0]) / f[0, 0]
    }

    /// Radius 2 on axis 0, radius 1 on axis 1.
    fn wide(mut u: Field2, n: i32) -> Real {
        (u[-2, 0] + u[2, 0] + u[0, 1] + u[0, -1]) / 4.0 + n
    }
}

fn grids() -> (Grid<f64, 2>, Grid<f64, 2>) {
    let u = Grid::random_uniform([9, 9], -1.0, 1.0, 3).unwrap();
    let f = Grid::filled([9, 9], 1.0).unwrap();
    (u, f)
}

#[test]
fn input_errors_leave_the_grid_untouched() {
    let (mut u, f) = grids();
    let before = u.clone();
    let small = Grid::<f64, 2>::zeros([9, 8]).unwrap();
    let ok = || Solver::new(Jacobi5).params(Jacobi5Params { h2: 0.1 }).max_iterations(10);

    let e = ok().input("f", &small).run(&mut u).unwrap_err();
    assert!(matches!(&e, Error::ShapeMismatch { field, .. } if field == "f"), "{e}");
    let e = ok().run(&mut u).unwrap_err();
    assert!(matches!(&e, Error::MissingField { field, .. } if field == "f"), "{e}");
    assert!(e.to_string().contains(".input(\"f\""), "the message says what to add: {e}");
    let e = ok().input("f", &f).input("g", &f).run(&mut u).unwrap_err();
    assert!(matches!(&e, Error::UnknownField { field, .. } if field == "g"), "{e}");
    let e = ok().input("f", &f).input("f", &f).run(&mut u).unwrap_err();
    assert!(matches!(e, Error::Duplicate { .. }), "{e}");
    let e = ok().input("u", &f).input("f", &f).run(&mut u).unwrap_err();
    assert!(matches!(e, Error::UnknownGivenAsInput { .. }), "{e}");

    let named = || Solver::new(Jacobi5).input("f", &f).max_iterations(10);
    let e = named().run(&mut u).unwrap_err();
    assert!(matches!(&e, Error::MissingParameter { name, .. } if name == "h2"), "{e}");
    let e = named().param("h2", 0.1).param("h3", 0.1).run(&mut u).unwrap_err();
    assert!(matches!(&e, Error::UnknownParameter { name, .. } if name == "h3"), "{e}");
    let e = Solver::new(Wide).max_iterations(1).param("n", 1.5).run(&mut u).unwrap_err();
    assert!(matches!(e, Error::InvalidParameter { .. }), "{e}");

    let e = Solver::new(Jacobi5).input("f", &f).param("h2", 0.1).run(&mut u).unwrap_err();
    assert!(matches!(e, Error::NeverStops { .. }), "{e}");
    let e = Solver::new(Jacobi5)
        .input("f", &f)
        .param("h2", 0.1)
        .tolerance(Tolerance::Absolute { norm: Norm::L2, eps: 0.0 })
        .run(&mut u)
        .unwrap_err();
    assert!(matches!(e, Error::NeverStops { .. }), "{e}");
    let e = ok().input("f", &f).schedule(Schedule::Wavefront { tile: 8 }).run(&mut u).unwrap_err();
    assert!(matches!(e, Error::InvalidSchedule { .. }), "{e}");

    assert_eq!(u, before, "no rejected run may touch the grid");
}

#[test]
fn grids_smaller_than_the_stencil_are_rejected() {
    let mut u = Grid::<f64, 2>::zeros([4, 3]).unwrap();
    let e = Solver::new(Wide).param("n", 0.0).max_iterations(1).run(&mut u).unwrap_err();
    assert!(
        matches!(e, Error::GridTooSmall { axis: 0, size: 4, radius: 2, min: 5, .. }),
        "axis 0 needs 2·2 + 1 points: {e}"
    );
    let mut ok = Grid::<f64, 2>::zeros([5, 3]).unwrap();
    Solver::new(Wide).param("n", 1.0).max_iterations(1).run(&mut ok).unwrap();
    assert_eq!(ok[[2, 1]], 1.0, "the one interior point is updated");
    let mut cube = Grid::<f32, 3>::zeros([3, 2, 3]).unwrap();
    let f = cube.clone();
    let e = Solver::new(Jacobi7).input("f", &f).param("h2", 1.0).max_iterations(1).run(&mut cube).unwrap_err();
    assert!(matches!(e, Error::GridTooSmall { axis: 1, .. }), "{e}");
}

#[test]
fn non_finite_iterates_stop_the_run_with_where_and_when() {
    let mut u = Grid::<f64, 2>::filled([6, 7], 1.0).unwrap();
    let mut f = Grid::<f64, 2>::filled([6, 7], 1.0).unwrap();
    f[[3, 4]] = 0.0;
    let e = Solver::new(Divide).input("f", &f).max_iterations(50).check_every(10).run(&mut u).unwrap_err();
    match e {
        Error::NonFinite { iteration, index, check_every, .. } => {
            assert_eq!(iteration, 10, "found at the first check");
            // ∞ appears at [3, 4] and spreads along axis 0 only (the stencil reads no other
            // axis): the first non-finite point in memory order is then [1, 4].
            assert_eq!(index, [1, 4]);
            assert_eq!(check_every, 10);
        }
        other => panic!("expected NonFinite, got {other}"),
    }
    assert!(u.first_non_finite().is_some(), "the grid holds the iterate that was checked");
}

#[test]
fn residuals_are_update_norms_and_progress_is_reported() {
    let (mut u, f) = grids();
    let mut seen: Vec<Progress> = Vec::new();
    let report = Solver::new(Jacobi5)
        .input("f", &f)
        .param("h2", 0.01)
        .max_iterations(25)
        .check_every(10)
        .on_progress(|p| seen.push(*p))
        .run(&mut u)
        .unwrap();
    assert_eq!(report.stop, StopReason::IterationLimit);
    assert_eq!(report.iterations, 25);
    let at: Vec<usize> = report.residuals.iter().map(|r| r.iteration).collect();
    assert_eq!(at, [10, 20, 25]);
    assert_eq!(seen.iter().map(|p| p.iteration).collect::<Vec<_>>(), at);
    assert!(report.residuals.windows(2).all(|w| w[1].max < w[0].max), "Jacobi's update shrinks");

    // The residual at iteration k is ‖uᵏ − uᵏ⁻¹‖: one more step by hand gives it.
    let (mut v, _) = grids();
    let run = |v: &mut Grid<f64, 2>, n| {
        Solver::new(Jacobi5).input("f", &f).param("h2", 0.01).max_iterations(n).run(v).unwrap()
    };
    run(&mut v, 24);
    let before = v.clone();
    let last = run(&mut v, 1);
    let by_hand = v.as_slice().iter().zip(before.as_slice()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert_eq!(last.final_residual().unwrap().max, by_hand);
    assert_eq!(report.final_residual().unwrap().max, by_hand);
    assert_eq!(u, v);
}

#[test]
fn relative_tolerance_reduces_the_first_residual() {
    let (mut u, f) = grids();
    let report = Solver::new(Jacobi5)
        .input("f", &f)
        .param("h2", 0.01)
        .tolerance(Tolerance::Relative { norm: Norm::L2, factor: 1e-4 })
        .check_every(5)
        .run(&mut u)
        .unwrap();
    let first = report.residuals.first().unwrap();
    let last = report.final_residual().unwrap();
    assert_eq!(first.iteration, 1);
    assert!(last.l2 < 1e-4 * first.l2);
    assert!(report.to_string().contains("converged"));
}
