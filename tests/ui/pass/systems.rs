//! A stencil of two unknowns: each one's new value from the previous iterate of both, the
//! read-only fields between them taken by the inputs struct, the unknowns given in order.
use stencil::prelude::*;

stencil! {
    /// Two coupled diffusions with a source between them.
    pub fn coupled(mut u: Field2, s: Field2, mut v: Field2, k: Real) -> (Real, Real) {
        let lu = u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4.0 * u[0, 0];
        (u[0, 0] + k * (lu - v[0, 0]), v[0, 0] + k * (u[0, 0] - v[0, 0]) + s[0, 0])
    }
}

fn main() {
    let n = 8;
    let s = Grid::<f64, 2>::filled([n, n], 0.01).unwrap();
    let mut u = Grid::<f64, 2>::from_fn([n, n], |[i, j]| (i + j) as f64).unwrap();
    let mut v = Grid::<f64, 2>::zeros([n, n]).unwrap();
    let report = Solver::new(Coupled)
        .inputs(CoupledInputs { s: &s })
        .params(CoupledParams { k: 0.1 })
        .max_iterations(4)
        .run_system(&mut [&mut u, &mut v])
        .unwrap();
    assert_eq!(report.iterations, 4);
    assert!(v[[3, 3]] != 0.0);
    assert_eq!(Coupled::META.unknowns, &[0, 2]);
    assert_eq!(Coupled::META.unknown_names(), ["u", "v"]);
}
