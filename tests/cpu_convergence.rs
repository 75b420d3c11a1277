//! Manufactured solutions: the Jacobi fixed points of `jacobi5` and `jacobi7` (Dirichlet),
//! and of a Helmholtz stencil on a periodic domain, converge to the continuous solution at
//! second order in h.

use std::f64::consts::PI;

use stencil::builtin::{Jacobi5, Jacobi5Params, Jacobi7, Jacobi7Params};
use stencil::prelude::*;

stencil! {
    /// Jacobi for (−Δ + c)·u = f; `h2` is h².
    fn helmholtz(mut u: Field2, f: Field2, h2: Real, c: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / (4.0 + c * h2)
    }
}

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

/// Max-norm error of the converged periodic Helmholtz solution for u* = sin(2πx)·cos(4πy)
/// on the unit torus with m points per axis (the grid has the two wrapped layers more).
fn error_periodic(m: usize) -> f64 {
    let (h, c) = (1.0 / m as f64, 200.0);
    // Interior index i ≥ 1 is x = (i − 1)·h; the outer layers are filled by the wrap.
    let exact = |[i, j]: [usize; 2]| {
        let (x, y) = ((i as f64 - 1.0) * h, (j as f64 - 1.0) * h);
        (2.0 * PI * x).sin() * (4.0 * PI * y).cos()
    };
    let f = Grid::from_fn([m + 2, m + 2], |ix| (20.0 * PI * PI + c) * exact(ix)).unwrap();
    let mut u = Grid::<f64, 2>::zeros([m + 2, m + 2]).unwrap();
    let report = Solver::new(Helmholtz)
        .input("f", &f)
        .params(HelmholtzParams { h2: h * h, c })
        .boundaries(Boundary::Periodic)
        .tolerance(Tolerance::Absolute { norm: Norm::Max, eps: 1e-14 })
        .check_every(50)
        .run(&mut u)
        .unwrap();
    assert_eq!(report.stop, StopReason::Converged);
    let e = Grid::from_fn([m + 2, m + 2], |ix| (u[ix] - exact(ix)).abs()).unwrap();
    e.as_slice().iter().copied().fold(0.0, f64::max)
}

#[test]
fn periodic_helmholtz_is_second_order() {
    let errors: Vec<f64> = [16, 32, 64, 128].into_iter().map(error_periodic).collect();
    assert_second_order(&errors);
}
