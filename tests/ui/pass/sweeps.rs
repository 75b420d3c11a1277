//! `sweep(…)` stencils: directions, the derived hyperplane and skew, and a run that matches
//! a hand-written Gauss–Seidel sweep.
use stencil::Direction::{Ascending, Descending};
use stencil::prelude::*;

stencil! {
    /// Gauss–Seidel for −Δu = f, x ascending and y descending.
    pub sweep(+, -) fn gs_mixed(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
    }

    /// Reads along the anti-diagonal need a steeper hyperplane and a skew.
    pub sweep(+, +) fn gs_diagonal(mut u: Field2) -> Real {
        (u[-1, 1] + u[1, -1] + u[0, -1] + u[0, 1]) / 4.0
    }

    /// The same reads with axis 1 descending: in oriented coordinates they no longer cross
    /// the diagonal.
    pub sweep(+, -) fn gs_diagonal_mixed(mut u: Field2) -> Real {
        (u[-1, 1] + u[1, -1] + u[0, -1] + u[0, 1]) / 4.0
    }

    pub sweep(+, +, +) fn gs7(mut u: Field3, f: Field3, h2: Real) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1] + h2 * f[0, 0, 0]) / 6.0
    }

    pub sweep(-, +, -) fn gs7_reversed(mut u: Field3) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1]) / 6.0
    }

    pub sweep(+) fn gs1(mut u: Field1) -> Real {
        (u[-1] + u[1]) / 2.0
    }
}

fn main() {
    let s = <GsMixed as Stencil<2>>::META.sweep.expect("a sweep stencil");
    assert_eq!(s.directions, &[Ascending, Descending]);
    assert_eq!(s.hyperplane, &[1, 1]);
    assert_eq!(s.skew, &[0, 0]);

    let s = <GsDiagonal as Stencil<2>>::META.sweep.unwrap();
    assert_eq!(s.hyperplane, &[2, 1]);
    assert_eq!(s.skew, &[0, 1]);

    let s = <GsDiagonalMixed as Stencil<2>>::META.sweep.unwrap();
    assert_eq!(s.hyperplane, &[1, 1]);
    assert_eq!(s.skew, &[0, 0]);

    let s = <Gs7 as Stencil<3>>::META.sweep.unwrap();
    assert_eq!(s.directions, &[Ascending; 3]);
    assert_eq!(s.hyperplane, &[1, 1, 1]);
    assert_eq!(s.skew, &[0, 0, 0]);
    let s = <Gs7Reversed as Stencil<3>>::META.sweep.unwrap();
    assert_eq!(s.directions, &[Descending, Ascending, Descending]);
    assert_eq!(s.hyperplane, &[1, 1, 1]);
    assert_eq!(<Gs1 as Stencil<1>>::META.sweep.unwrap().hyperplane, &[1]);

    // One sweep on a 6×5 grid, on the CPU, against a sequential loop in the declared order.
    let (n0, n1) = (6, 5);
    let start = Grid::<f64, 2>::from_fn([n0, n1], |[i, j]| ((i * 7 + j * 3) % 5) as f64).unwrap();
    let f = Grid::<f64, 2>::from_fn([n0, n1], |[i, j]| (i + 2 * j) as f64).unwrap();
    let h2 = 0.1;
    let mut expected = start.clone();
    for i in 1..n0 - 1 {
        for j in (1..n1 - 1).rev() {
            expected[[i, j]] = (expected[[i - 1, j]]
                + expected[[i + 1, j]]
                + expected[[i, j - 1]]
                + expected[[i, j + 1]]
                + h2 * f[[i, j]])
                / 4.0;
        }
    }
    for schedule in [Schedule::Plain, Schedule::Auto] {
        let mut u = start.clone();
        let report = Solver::new(GsMixed)
            .input("f", &f)
            .params(GsMixedParams { h2 })
            .schedule(schedule)
            .max_iterations(1)
            .run(&mut u)
            .unwrap();
        assert_eq!(report.iterations, 1);
        assert_eq!(u, expected, "{schedule}");
    }
}
