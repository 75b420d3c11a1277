//! Sweep stencils: the rayon wavefront equals the sequential sweep bit for bit, and the
//! sequential sweep is the Gauss–Seidel order the stencil declares.

use stencil::Direction;
use stencil::prelude::*;

stencil! {
    /// Reads diagonal neighbours on both sides of the sweep, with axis 1 descending.
    sweep(+, -) fn diag2(mut u: Field2, f: Field2, w: Real) -> Real {
        (u[-1, 1] + u[1, -1] + u[0, -1] + u[0, 1] + u[-1, -1] + u[1, 1] + w * f[0, 0]) / 6.5
    }

    /// 3-D, mixed directions, diagonal and radius-2 reads.
    sweep(-, +, -) fn diag3(mut u: Field3, f: Field3) -> Real {
        (u[1, -1, 0] + u[-1, 1, 0] + u[0, 0, 2] + u[0, 0, -2] + u[0, 1, -1] + u[0, -1, 1]
            + u[-1, 0, 0] + u[1, 0, 0] + u[1, 1, 0] + u[-1, -1, 0] + f[0, 0, 0]) / 10.25
    }

    /// Plain Gauss–Seidel for −Δu = f.
    sweep(+, +) fn gs5(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
    }
}

fn run<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    u: &mut Grid<T, N>,
    f: &Grid<T, N>,
    params: &[(&str, f64)],
    schedule: Schedule,
    sweeps: usize,
) {
    let mut solver = Solver::new(stencil).input("f", f).schedule(schedule).max_iterations(sweeps);
    for (name, value) in params {
        solver = solver.param(name, *value);
    }
    solver.run(u).unwrap();
}

#[test]
fn hyperplanes_and_skews_are_derived_at_compile_time() {
    let d2 = Diag2::META.sweep.unwrap();
    assert_eq!(d2.directions, [Direction::Ascending, Direction::Descending]);
    // Oriented reads (-1, 1) earlier and (1, -1) later rule out the anti-diagonal, and
    // rectangular tiles need a skew.
    assert_eq!((d2.hyperplane, d2.skew), (&[2u32, 1][..], &[0u32, 1][..]));
    let gs = Gs5::META.sweep.unwrap();
    assert_eq!((gs.hyperplane, gs.skew), (&[1u32, 1][..], &[0u32, 0][..]));
    let d3 = Diag3::META.sweep.unwrap();
    assert_eq!(Diag3::META.radius, [1, 1, 2]);
    assert!(d3.skew.iter().any(|&c| c > 0), "diagonal reads across the sweep need a skewed tiling");
}

fn check_wavefront_2d<T: Real>(shape: [usize; 2]) {
    let u0 = Grid::<T, 2>::random_uniform(shape, T::from_f64(-1.0), T::from_f64(1.0), 11).unwrap();
    let f = Grid::<T, 2>::random_uniform(shape, T::from_f64(-1.0), T::from_f64(1.0), 12).unwrap();
    let mut sequential = u0.clone();
    run(Diag2, &mut sequential, &f, &[("w", 0.3)], Schedule::Plain, 3);
    assert_ne!(sequential, u0);
    for tile in [1, 2, 3, 7, 16, 1000] {
        let mut tiled = u0.clone();
        run(Diag2, &mut tiled, &f, &[("w", 0.3)], Schedule::Wavefront { tile }, 3);
        assert!(tiled.as_slice() == sequential.as_slice(), "tile {tile}, shape {shape:?}: wavefront differs");
    }
}

#[test]
fn wavefront_equals_sequential_sweep_2d_diagonal_descending() {
    check_wavefront_2d::<f64>([37, 41]);
    check_wavefront_2d::<f32>([53, 29]);
    check_wavefront_2d::<f64>([3, 3]);
}

#[test]
fn wavefront_equals_sequential_sweep_3d_mixed_directions() {
    let shape = [13, 11, 17];
    let u0 = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, 5).unwrap();
    let f = Grid::<f64, 3>::random_uniform(shape, -1.0, 1.0, 6).unwrap();
    let mut sequential = u0.clone();
    run(Diag3, &mut sequential, &f, &[], Schedule::Plain, 2);
    for tile in [1, 2, 5, 64] {
        let mut tiled = u0.clone();
        run(Diag3, &mut tiled, &f, &[], Schedule::Wavefront { tile }, 2);
        assert!(tiled.as_slice() == sequential.as_slice(), "tile {tile}: wavefront differs");
    }
    let mut auto = u0.clone();
    run(Diag3, &mut auto, &f, &[], Schedule::Auto, 2);
    assert!(auto.as_slice() == sequential.as_slice());
}

/// The declared order written out by hand: i ascending, j descending, in place.
#[test]
fn sequential_sweep_is_the_declared_gauss_seidel_order() {
    let shape = [19, 23];
    let u0 = Grid::<f64, 2>::random_uniform(shape, -1.0, 1.0, 1).unwrap();
    let f = Grid::<f64, 2>::random_uniform(shape, -1.0, 1.0, 2).unwrap();
    let mut by_hand = u0.clone();
    let w = 0.3;
    for i in 1..shape[0] - 1 {
        for j in (1..shape[1] - 1).rev() {
            let u = &by_hand;
            let v = (u[[i - 1, j + 1]]
                + u[[i + 1, j - 1]]
                + u[[i, j - 1]]
                + u[[i, j + 1]]
                + u[[i - 1, j - 1]]
                + u[[i + 1, j + 1]]
                + w * f[[i, j]])
                / 6.5;
            by_hand[[i, j]] = v;
        }
    }
    let mut swept = u0.clone();
    run(Diag2, &mut swept, &f, &[("w", w)], Schedule::Plain, 1);
    assert!(swept.as_slice() == by_hand.as_slice());
}

#[test]
fn gauss_seidel_converges_faster_than_jacobi() {
    use stencil::builtin::Jacobi5;
    let n = 33;
    let f = Grid::<f64, 2>::filled([n, n], 1.0).unwrap();
    let h2 = 1.0 / ((n - 1) * (n - 1)) as f64;
    let tol = Tolerance::Absolute { norm: Norm::Max, eps: 1e-8 };
    let mut u = Grid::<f64, 2>::zeros([n, n]).unwrap();
    let gs = Solver::new(Gs5).input("f", &f).param("h2", h2).tolerance(tol).check_every(1).run(&mut u).unwrap();
    let mut v = Grid::<f64, 2>::zeros([n, n]).unwrap();
    let jac = Solver::new(Jacobi5).input("f", &f).param("h2", h2).tolerance(tol).check_every(1).run(&mut v).unwrap();
    assert_eq!(gs.stop, StopReason::Converged);
    // Gauss–Seidel's spectral radius is Jacobi's squared: about half the iterations.
    let ratio = jac.iterations as f64 / gs.iterations as f64;
    assert!((1.7..2.3).contains(&ratio), "Jacobi {} vs Gauss–Seidel {} iterations", jac.iterations, gs.iterations);
    let diff = u.as_slice().iter().zip(v.as_slice()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(diff < 1e-5, "both reach the same fixed point, differ by {diff}");
}
