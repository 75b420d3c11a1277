//! A stencil whose only scalars are `i32` has a plain parameter struct, `PickParams { n: 1 }`,
//! and one with no scalars a unit struct; an `i32` is converted where a `Real` is needed,
//! also as the receiver of a method.
#![deny(warnings)]
use stencil::prelude::*;

stencil! {
    /// Keeps the neighbour on the side that `n` names.
    pub fn pick(mut u: Field1, n: i32) -> Real {
        if n > 0 { u[1] } else { u[-1] }
    }

    /// `n.sqrt()` is √n in the element type.
    pub fn root(mut u: Field1, n: i32, m: i32) -> Real {
        u[0] * n.sqrt() + m.abs() + (n * m).powi(2)
    }

    pub fn average(mut u: Field1) -> Real {
        (u[-1] + u[1]) / 2.0
    }
}

fn main() {
    let start = Grid::<f64, 1>::from_fn([5], |[i]| i as f64 * i as f64).unwrap();
    let mut u = start.clone();
    let report = Solver::new(Pick).params(PickParams { n: 1 }).max_iterations(1).run(&mut u).unwrap();
    assert_eq!(report.iterations, 1);
    assert_eq!(u.as_slice(), &[0.0, 4.0, 9.0, 16.0, 16.0]);
    let mut v = start.clone();
    Solver::new(Pick).params(PickParams::new(-1)).max_iterations(1).run(&mut v).unwrap();
    assert_eq!(v.as_slice(), &[0.0, 0.0, 1.0, 4.0, 16.0]);
    // The same struct serves both precisions.
    let mut w = Grid::<f32, 1>::from_fn([5], |[i]| i as f32).unwrap();
    Solver::new(Pick).params(PickParams { n: 1 }).max_iterations(1).run(&mut w).unwrap();
    assert_eq!(w.as_slice(), &[0.0, 2.0, 3.0, 4.0, 4.0]);

    let p = RootParams { n: 4, m: -3 };
    assert_eq!(<Root as Stencil<1>>::point(|_| 1.5f64, &p), 1.5 * 2.0 + 3.0 + 144.0);
    assert_eq!(<Root as Stencil<1>>::point(|_| 1.5f32, &p), 1.5 * 2.0 + 3.0 + 144.0);

    let mut a = start.clone();
    Solver::new(Average).params(AverageParams).max_iterations(1).run(&mut a).unwrap();
    assert_eq!(a.as_slice(), &[0.0, 2.0, 5.0, 10.0, 16.0]);
    assert_eq!(AverageParams::new(), AverageParams::default());
}
