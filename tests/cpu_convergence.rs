//! Manufactured solutions: the Jacobi fixed points of `jacobi5` and `jacobi7` converge to
//! the continuous solution at second order in h.

use std::f64::consts::PI;

use stencil::builtin::{Jacobi5, Jacobi5Params, Jacobi7, Jacobi7Params};
use stencil::prelude::*;

/// Max-norm error of the converged `jacobi5` solution for u* = sin(πx)·sin(πy).
fn error_2d(n: usize) -> f64 {
    let h = 1.0 / (n - 1) as f64;
    let exact = |[i, j]: [usize; 2]| (PI * i as f64 * h).sin() * (PI * j as f64 * h).sin();
    let f = Grid::from_fn([n, n], |ix| 2.0 * PI * PI * exact(ix)).unwrap();
    let mut u = Grid::<f64, 2>::zeros([n, n]).unwrap();
    let report = Solver::new(Jacobi5)
        .input("f", &f)
        .params(Jacobi5Params { h2: h * h })
        .tolerance(Tolerance::Absolute { norm: Norm::Max, eps: 1e-13 })
        .check_every(50)
        .run(&mut u)
        .unwrap();
    assert_eq!(report.stop, StopReason::Converged);
    let e = Grid::from_fn([n, n], |ix| (u[ix] - exact(ix)).abs()).unwrap();
    e.as_slice().iter().copied().fold(0.0, f64::max)
}

/// Max-norm error of the converged `jacobi7` solution for u* = sin(πx)·sin(πy)·sin(πz).
fn error_3d(n: usize) -> f64 {
    let h = 1.0 / (n - 1) as f64;
    let exact =
        |[i, j, k]: [usize; 3]| (PI * i as f64 * h).sin() * (PI * j as f64 * h).sin() * (PI * k as f64 * h).sin();
    let f = Grid::from_fn([n, n, n], |ix| 3.0 * PI * PI * exact(ix)).unwrap();
    let mut u = Grid::<f64, 3>::zeros([n, n, n]).unwrap();
    let report = Solver::new(Jacobi7)
        .input("f", &f)
        .params(Jacobi7Params { h2: h * h })
        .tolerance(Tolerance::Absolute { norm: Norm::Max, eps: 1e-13 })
        .check_every(50)
        .run(&mut u)
        .unwrap();
    assert_eq!(report.stop, StopReason::Converged);
    let e = Grid::from_fn([n, n, n], |ix| (u[ix] - exact(ix)).abs()).unwrap();
    e.as_slice().iter().copied().fold(0.0, f64::max)
}

fn assert_second_order(errors: &[f64]) {
    for pair in errors.windows(2) {
        let ratio = pair[0] / pair[1];
        println!("error {:.3e} -> {:.3e}: ratio {ratio:.3}", pair[0], pair[1]);
        assert!((3.7..=4.3).contains(&ratio), "h halved but the error fell by {ratio}, not about 4");
    }
}

#[test]
fn jacobi5_is_second_order() {
    let errors: Vec<f64> = [9, 17, 33, 65].into_iter().map(error_2d).collect();
    assert_second_order(&errors);
}

#[test]
fn jacobi7_is_second_order() {
    let errors: Vec<f64> = [9, 17, 33].into_iter().map(error_3d).collect();
    assert_second_order(&errors);
}
