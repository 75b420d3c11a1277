//! A plain (Jacobi) stencil run through `Solver` in f32 and f64: every read of the unknown
//! sees the previous iterate.
use stencil::prelude::*;

stencil! {
    /// Jacobi update for −Δu = f; `h2` is h².
    pub fn poisson(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
    }
}

fn run<T: Real>() {
    let n = 5;
    let start = Grid::<T, 2>::from_fn([n, n], |[i, j]| T::from_f64((i * n + j) as f64)).unwrap();
    let f = Grid::<T, 2>::filled([n, n], T::from_f64(1.0)).unwrap();
    let h2 = T::from_f64(0.5);
    let mut u = start.clone();
    Solver::new(Poisson).input("f", &f).params(PoissonParams { h2 }).max_iterations(1).run(&mut u).unwrap();
    for i in 0..n {
        for j in 0..n {
            let expected = if i == 0 || j == 0 || i == n - 1 || j == n - 1 {
                start[[i, j]]
            } else {
                (start[[i - 1, j]] + start[[i + 1, j]] + start[[i, j - 1]] + start[[i, j + 1]] + h2 * f[[i, j]])
                    / T::from_f64(4.0)
            };
            assert_eq!(u[[i, j]], expected, "{} at {i},{j}", T::NAME);
        }
    }
    // Parameters by name give the same result.
    let mut v = start.clone();
    Solver::new(Poisson).input("f", &f).param("h2", 0.5).max_iterations(1).run(&mut v).unwrap();
    assert_eq!(u, v);
}

fn main() {
    run::<f32>();
    run::<f64>();
}
