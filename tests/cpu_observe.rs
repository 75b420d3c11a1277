//! Watching a run: the observer sees every k-th iterate, equal to a run of exactly that many
//! iterations, on every schedule (cycles and passes end there), with its periodic and
//! Neumann layers filled; a period of 0 is an error before the run.

use stencil::builtin::Jacobi5;
use stencil::prelude::*;
use stencil::{Boundary, Error};

mod common;
use common::random;

/// Every `every`-th iterate of `iterations` with `schedule` and `boundaries`, as observed.
fn observed(
    schedule: Schedule,
    boundaries: Boundaries<2>,
    every: usize,
    iterations: usize,
) -> Vec<(usize, Grid<f64, 2>)> {
    let (f, mut u) = (random::<f64, 2>([19, 23], 2), random::<f64, 2>([19, 23], 1));
    let mut seen = Vec::new();
    Solver::new(Jacobi5)
        .input("f", &f)
        .param("h2", 0.01)
        .schedule(schedule)
        .boundaries(boundaries)
        .max_iterations(iterations)
        .observe(every, |iteration, u: &Grid<f64, 2>| seen.push((iteration, u.clone())))
        .run(&mut u)
        .unwrap();
    seen
}

/// Exactly `iterations` plain iterations.
fn plain(boundaries: Boundaries<2>, iterations: usize) -> Grid<f64, 2> {
    let (f, mut u) = (random::<f64, 2>([19, 23], 2), random::<f64, 2>([19, 23], 1));
    Solver::new(Jacobi5)
        .input("f", &f)
        .param("h2", 0.01)
        .boundaries(boundaries)
        .max_iterations(iterations)
        .run(&mut u)
        .unwrap();
    u
}

#[test]
fn every_kth_iterate_is_shown_as_a_run_of_that_many_iterations_would_end() {
    let schedules = [
        Schedule::Plain,
        Schedule::Hierarchical { tile: 4, halo: 6, sub: 3 },
        Schedule::OutOfCore { slab: Some(5), height: 4, inner: Inner::Plain, device_memory: None },
    ];
    for schedule in schedules {
        let seen = observed(schedule, Boundaries::default(), 7, 30);
        assert_eq!(seen.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [7, 14, 21, 28], "{schedule}");
        for (k, u) in &seen {
            assert_eq!(u, &plain(Boundaries::default(), *k), "{schedule}: iterate {k}");
        }
    }
    // Periodic layers are filled in what the observer sees.
    let periodic = Boundary::Periodic.into();
    for (k, u) in observed(Schedule::Plain, periodic, 5, 10) {
        assert_eq!(u, plain(periodic, k), "iterate {k}");
        assert_eq!(u.view()[[0, 4]], u.view()[[17, 4]], "the wrapped row of iterate {k}");
    }
}

#[test]
fn a_period_of_zero_is_an_error_before_the_run() {
    let (f, u0) = (random::<f64, 2>([9, 9], 2), random::<f64, 2>([9, 9], 1));
    let mut u = u0.clone();
    let e = Solver::new(Jacobi5).input("f", &f).param("h2", 0.1).max_iterations(5).observe(0, |_, _| {}).run(&mut u);
    assert!(matches!(e, Err(Error::InvalidObserver)), "{e:?}");
    assert_eq!(u, u0);
}
