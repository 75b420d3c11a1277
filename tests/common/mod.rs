//! Helpers shared by the integration tests (each test binary uses some of them).
#![allow(dead_code)]

use stencil::cuda::unusable_reason;
use stencil::prelude::*;

/// Whether a GPU is usable; without one the test says it was skipped, and with
/// `STENCIL_REQUIRE_GPU=1` a missing GPU is a failure.
pub fn gpu() -> bool {
    match unusable_reason(0) {
        None => true,
        Some(reason) => {
            assert!(std::env::var("STENCIL_REQUIRE_GPU").as_deref() != Ok("1"), "STENCIL_REQUIRE_GPU=1 but {reason}");
            eprintln!("skipped: {reason}");
            false
        }
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
