//! Helpers shared by the integration tests (each test binary uses some of them).
#![allow(dead_code)]

use stencil::cuda::unusable_reason;
use stencil::prelude::*;
use stencil::{Boundaries, Boundary, Side};

/// Fails the test unless a GPU is usable. Tests that call this are marked
/// `#[ignore = "needs a CUDA GPU"]`, so a machine without one reports them as ignored;
/// `cargo test -- --include-ignored` runs them, and then a missing GPU is a failure.
pub fn require_gpu() {
    if let Some(reason) = unusable_reason(0) {
        panic!("this test needs a CUDA GPU: {reason}");
    }
}

/// Uniform values in [−1, 1].
pub fn random<T: Real, const N: usize>(shape: [usize; N], seed: u64) -> Grid<T, N> {
    Grid::random_uniform(shape, T::from_f64(-1.0), T::from_f64(1.0), seed).unwrap()
}

/// How many points of `a` and `b` differ in their bits.
pub fn differing<T: Real, const N: usize>(a: &Grid<T, N>, b: &Grid<T, N>) -> usize {
    a.as_slice().iter().zip(b.as_slice()).filter(|(x, y)| x.to_f64().to_bits() != y.to_f64().to_bits()).count()
}

/// Exactly `iterations` iterations of `stencil` with `schedule` on the CPU, from `u0`, with one
/// read-only field and the scalar parameters by name.
pub fn run<S: Stencil<N>, const N: usize>(
    stencil: S,
    u0: &Grid<f64, N>,
    field: (&str, &Grid<f64, N>),
    params: &[(&str, f64)],
    schedule: Schedule,
    iterations: usize,
) -> Grid<f64, N> {
    let mut u = u0.clone();
    let mut solver = Solver::new(stencil).input(field.0, field.1).schedule(schedule).max_iterations(iterations);
    for &(name, value) in params {
        solver = solver.param(name, value);
    }
    let report = solver.run(&mut u).unwrap();
    assert_eq!(report.iterations, iterations);
    u
}

/// Every valid combination of boundary conditions on the sides of `N` axes (a periodic axis
/// is periodic on both sides).
pub fn boundary_combinations<const N: usize>() -> Vec<Boundaries<N>> {
    let kinds = [Boundary::Dirichlet, Boundary::Periodic, Boundary::Neumann];
    let sides: Vec<(Boundary, Boundary)> = kinds
        .iter()
        .flat_map(|&l| kinds.iter().map(move |&h| (l, h)))
        .filter(|&(l, h)| (l == Boundary::Periodic) == (h == Boundary::Periodic))
        .collect();
    let mut all = vec![Boundaries::<N>::default()];
    for axis in 0..N {
        all = all
            .into_iter()
            .flat_map(|b| sides.iter().map(move |&(l, h)| b.side(axis, Side::Low, l).side(axis, Side::High, h)))
            .collect();
    }
    all
}
