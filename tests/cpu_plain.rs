//! The plain (Jacobi) twin against loops written out by hand, on awkward shapes with a
//! random boundary: the boundary never changes and every interior point is updated.

use stencil::builtin::{Jacobi7, Jacobi7Params};
use stencil::prelude::*;

stencil! {
    /// Radius 2, one-sided reads, a coefficient field.
    fn line(mut u: Field1, k: Field1) -> Real {
        (k[0] * u[-2] + u[-1] + u[1]) / (k[0] + 2.0)
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
