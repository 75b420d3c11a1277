//! Sweep stencils drawn at random (offsets within radius 2 on every axis, a random direction
//! per axis, random weights; one fixed draw, so that a failure reproduces): the sequential
//! sweep is the Gauss–Seidel order each declares, written out by a generic loop from the
//! same offsets and weights, and the rayon wavefront equals it bit for bit, for any shape,
//! tile and number of sweeps (property-tested).

use proptest::prelude::*;
use stencil::prelude::*;

stencil! {
    sweep(-) fn random0(mut u: Field1, f: Field1) -> Real {
        (0.25 * u[-2] + 1.46 * u[1] + 1.49 * u[-1] + 0.33 * f[0]) / 4.25
    }

    sweep(+, -) fn random1(mut u: Field2, f: Field2) -> Real {
        (0.89 * u[-1, -1] + 1.13 * u[1, 0] + 0.24 * u[-1, 0] + 0.51 * u[1, -1] + 0.35 * u[0, 1] + 0.81 * f[0, 0]) / 4.0
    }

    sweep(+, +) fn random2(mut u: Field2, f: Field2) -> Real {
        (0.96 * u[0, -1] + 1.24 * u[0, -2] + 1.12 * u[0, 1] + 0.89 * u[1, 1] + 0.28 * u[2, 0] + 0.47 * u[-1, 1] + 0.66 * f[0, 0]) / 6.63
    }

    sweep(+, +) fn random3(mut u: Field2, f: Field2) -> Real {
        (0.5 * u[-1, 0] + 0.4 * u[1, 0] + 0.83 * u[-1, -1] + 0.5 * u[0, -1] + 0.7 * u[1, -1] + 0.32 * u[0, 1] + 1.37 * u[1, 1] + 0.91 * u[-1, 1] + 0.32 * f[0, 0]) / 6.65
    }

    sweep(+, +) fn random4(mut u: Field2, f: Field2) -> Real {
        (1.01 * u[1, -1] + 0.75 * u[0, -1] + 0.71 * u[1, 1] + 1.04 * u[-1, 1] + 0.26 * f[0, 0]) / 4.19
    }

    sweep(+, +, -) fn random5(mut u: Field3, f: Field3) -> Real {
        (0.22 * u[-2, 0, 0] + 0.16 * u[-1, 2, 0] + 0.24 * u[1, 2, 1] + 1.11 * u[1, 1, 1] + 0.82 * u[0, 1, 0] + 1.29 * u[-1, -1, 1] + 0.53 * f[0, 0, 0]) / 4.89
    }

    sweep(+, -, +) fn random6(mut u: Field3, f: Field3) -> Real {
        (0.79 * u[1, 0, 0] + 1.42 * u[1, 1, -1] + 0.83 * u[1, -1, 1] + 1.24 * u[1, -2, 1] + 0.55 * u[2, 1, -1] + 0.44 * u[1, 0, 1] + 0.16 * u[-2, 1, 0] + 1.08 * u[-1, 2, -2] + 0.76 * f[0, 0, 0]) / 8.41
    }

    sweep(-, +, -) fn random7(mut u: Field3, f: Field3) -> Real {
        (1.3 * u[1, -1, 1] + 1.2 * u[-1, 2, 1] + 0.84 * u[1, 0, 2] + 0.16 * u[-1, -1, -1] + 0.15 * u[1, 0, -1] + 0.41 * u[0, 0, -2] + 0.46 * u[-1, -1, 2] + 0.33 * f[0, 0, 0]) / 6.18
    }
}

/// A stencil of the form (Σ wₖ·u[oₖ] + source·f[0]) / denominator, sweeping each axis
/// `ascending` or not: the same numbers as the macro's declaration above.
struct Spec<const N: usize> {
    ascending: [bool; N],
    reads: &'static [([isize; N], f64)],
    source: f64,
    denominator: f64,
}

const RANDOM0: Spec<1> =
    Spec { ascending: [false], reads: &[([-2], 0.25), ([1], 1.46), ([-1], 1.49)], source: 0.33, denominator: 4.25 };
const RANDOM1: Spec<2> = Spec {
    ascending: [true, false],
    reads: &[([-1, -1], 0.89), ([1, 0], 1.13), ([-1, 0], 0.24), ([1, -1], 0.51), ([0, 1], 0.35)],
    source: 0.81,
    denominator: 4.0,
};
const RANDOM2: Spec<2> = Spec {
    ascending: [true, true],
    reads: &[([0, -1], 0.96), ([0, -2], 1.24), ([0, 1], 1.12), ([1, 1], 0.89), ([2, 0], 0.28), ([-1, 1], 0.47)],
    source: 0.66,
    denominator: 6.63,
};
const RANDOM3: Spec<2> = Spec {
    ascending: [true, true],
    reads: &[
        ([-1, 0], 0.5),
        ([1, 0], 0.4),
        ([-1, -1], 0.83),
        ([0, -1], 0.5),
        ([1, -1], 0.7),
        ([0, 1], 0.32),
        ([1, 1], 1.37),
        ([-1, 1], 0.91),
    ],
    source: 0.32,
    denominator: 6.65,
};
const RANDOM4: Spec<2> = Spec {
    ascending: [true, true],
    reads: &[([1, -1], 1.01), ([0, -1], 0.75), ([1, 1], 0.71), ([-1, 1], 1.04)],
    source: 0.26,
    denominator: 4.19,
};
const RANDOM5: Spec<3> = Spec {
    ascending: [true, true, false],
    reads: &[
        ([-2, 0, 0], 0.22),
        ([-1, 2, 0], 0.16),
        ([1, 2, 1], 0.24),
        ([1, 1, 1], 1.11),
        ([0, 1, 0], 0.82),
        ([-1, -1, 1], 1.29),
    ],
    source: 0.53,
    denominator: 4.89,
};
const RANDOM6: Spec<3> = Spec {
    ascending: [true, false, true],
    reads: &[
        ([1, 0, 0], 0.79),
        ([1, 1, -1], 1.42),
        ([1, -1, 1], 0.83),
        ([1, -2, 1], 1.24),
        ([2, 1, -1], 0.55),
        ([1, 0, 1], 0.44),
        ([-2, 1, 0], 0.16),
        ([-1, 2, -2], 1.08),
    ],
    source: 0.76,
    denominator: 8.41,
};
const RANDOM7: Spec<3> = Spec {
    ascending: [false, true, false],
    reads: &[
        ([1, -1, 1], 1.3),
        ([-1, 2, 1], 1.2),
        ([1, 0, 2], 0.84),
        ([-1, -1, -1], 0.16),
        ([1, 0, -1], 0.15),
        ([0, 0, -2], 0.41),
        ([-1, -1, 2], 0.46),
    ],
    source: 0.33,
    denominator: 6.18,
};

/// `sweeps` sweeps of `spec` over the interior (`radius` points from every edge kept fixed),
/// in place, axis 0 outermost, each axis in its direction; the terms summed left to right as
/// the declaration writes them.
fn by_hand<const N: usize>(spec: &Spec<N>, radius: [usize; N], u: &mut Grid<f64, N>, f: &Grid<f64, N>, sweeps: usize) {
    let shape = u.shape();
    let lens: [usize; N] = std::array::from_fn(|a| shape[a] - 2 * radius[a]);
    let count: usize = lens.iter().product();
    for _ in 0..sweeps {
        for flat in 0..count {
            let mut rest = flat;
            let mut at = [0usize; N];
            for a in (0..N).rev() {
                let step = rest % lens[a];
                rest /= lens[a];
                at[a] = radius[a] + if spec.ascending[a] { step } else { lens[a] - 1 - step };
            }
            let read = |offset: &[isize; N]| u[std::array::from_fn(|a| (at[a] as isize + offset[a]) as usize)];
            let mut terms = spec.reads.iter().map(|(offset, weight)| weight * read(offset));
            let first = terms.next().unwrap();
            let sum = terms.fold(first, |acc, term| acc + term) + spec.source * f[at];
            u[at] = sum / spec.denominator;
        }
    }
}

/// The sequential sweep against the loop, and the wavefront of `tile` against the
/// sequential sweep, on random data of `shape`.
fn check<S: Stencil<N>, const N: usize>(stencil: S, spec: &Spec<N>, shape: [usize; N], tile: usize, sweeps: usize) {
    let radius: [usize; N] = std::array::from_fn(|a| S::META.radius[a]);
    let u0 = Grid::<f64, N>::random_uniform(shape, -1.0, 1.0, 3).unwrap();
    let f = Grid::<f64, N>::random_uniform(shape, -1.0, 1.0, 4).unwrap();
    let run = |schedule| {
        let mut u = u0.clone();
        Solver::new(stencil).input("f", &f).schedule(schedule).max_iterations(sweeps).run(&mut u).unwrap();
        u
    };
    let mut expected = u0.clone();
    by_hand(spec, radius, &mut expected, &f, sweeps);
    let sequential = run(Schedule::Plain);
    assert!(
        sequential.as_slice() == expected.as_slice(),
        "{}: the sequential sweep is not the declared order",
        S::META.name
    );
    let tiled = run(Schedule::Wavefront { tile });
    assert!(tiled.as_slice() == sequential.as_slice(), "{}: the wavefront of tile {tile} differs", S::META.name);
}

/// A side of `radius` outer points each way and 1 to 12 interior points.
fn side(radius: usize) -> impl Strategy<Value = usize> {
    (1usize..=12).prop_map(move |interior| interior + 2 * radius)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_1d_sweeps(n in side(2), tile in 1usize..10, sweeps in 1usize..4) {
        check(Random0, &RANDOM0, [n], tile, sweeps);
    }

    #[test]
    fn random_2d_sweeps(a in side(2), b in side(2), tile in 1usize..10, sweeps in 1usize..4) {
        check(Random1, &RANDOM1, [a, b], tile, sweeps);
        check(Random2, &RANDOM2, [a, b], tile, sweeps);
        check(Random3, &RANDOM3, [a, b], tile, sweeps);
        check(Random4, &RANDOM4, [a, b], tile, sweeps);
    }

    #[test]
    fn random_3d_sweeps(a in side(2), b in side(2), c in side(2), tile in 1usize..8, sweeps in 1usize..3) {
        check(Random5, &RANDOM5, [a, b, c], tile, sweeps);
        check(Random6, &RANDOM6, [a, b, c], tile, sweeps);
        check(Random7, &RANDOM7, [a, b, c], tile, sweeps);
    }
}
