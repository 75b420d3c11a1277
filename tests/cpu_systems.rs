//! Stencils of several unknowns on the CPU: every unknown updated from the previous iterate
//! of all of them. Gray–Scott equals a loop written out by hand, bit for bit; two and three
//! unknowns in 1-D to 3-D equal a loop that reads the outer layers through each axis's wrap
//! or mirror, for every boundary combination and for random sizes; the residual is taken
//! over all unknowns; an observer sees every one; and what a system cannot run is an error
//! before the run.

use proptest::prelude::*;
use stencil::prelude::*;
use stencil::{Boundaries, Boundary, Error};

mod common;
use common::{boundary_combinations, random};

stencil! {
    /// Gray–Scott reaction–diffusion, explicit Euler with a 5-point Laplacian.
    fn gray_scott(mut u: Field2, mut v: Field2, du: Real, dv: Real, feed: Real, kill: Real, dt: Real) -> (Real, Real) {
        let lu = u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4.0 * u[0, 0];
        let lv = v[-1, 0] + v[1, 0] + v[0, -1] + v[0, 1] - 4.0 * v[0, 0];
        let uvv = u[0, 0] * v[0, 0] * v[0, 0];
        (u[0, 0] + dt * (du * lu - uvv + feed * (1.0 - u[0, 0])), v[0, 0] + dt * (dv * lv + uvv - (feed + kill) * v[0, 0]))
    }

    /// The wave equation as a first-order system in 3-D, with a corner read.
    fn wave(mut p: Field3, mut q: Field3, c: Real) -> (Real, Real) {
        let lap = p[-1, 0, 0] + p[1, 0, 0] + p[0, -1, 0] + p[0, 1, 0] + p[0, 0, -1] + p[0, 0, 1] - 6.0 * p[0, 0, 0];
        (p[0, 0, 0] + c * q[0, 0, 0], q[0, 0, 0] + c * (lap + 0.125 * p[1, 1, -1]))
    }

    /// Two heat equations that never meet, to compare with each alone.
    fn apart(mut u: Field2, f: Field2, mut v: Field2, k: Real) -> (Real, Real) {
        (
            u[0, 0] + k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4.0 * u[0, 0]) + f[0, 1],
            v[0, 0] + k * (v[-1, 0] + v[1, 0] + v[0, -1] + v[0, 1] - 4.0 * v[0, 0]),
        )
    }

    /// `apart`'s first unknown alone.
    fn alone_u(mut u: Field2, f: Field2, k: Real) -> Real {
        u[0, 0] + k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4.0 * u[0, 0]) + f[0, 1]
    }

    /// `apart`'s second unknown alone.
    fn alone_v(mut v: Field2, k: Real) -> Real {
        v[0, 0] + k * (v[-1, 0] + v[1, 0] + v[0, -1] + v[0, 1] - 4.0 * v[0, 0])
    }

    /// Three unknowns around a read-only field, radius 2, each reading the others.
    fn three(mut a: Field1, f: Field1, mut b: Field1, mut c: Field1, k: Real) -> (Real, Real, Real) {
        (
            a[0] + k * (b[-2] - 2.0 * a[0] + c[2]) + f[0],
            b[0] + k * (a[-1] + a[1] - 2.0 * b[0]),
            0.5 * (c[-2] + c[1]) * k - a[0] * b[0] * 0.01,
        )
    }
}

fn bits<T: Real>(values: &[T]) -> Vec<u64> {
    values.iter().map(|v| v.to_f64().to_bits()).collect()
}

fn flat<const N: usize>(index: [usize; N], shape: [usize; N]) -> usize {
    index.iter().zip(shape).fold(0, |at, (&i, n)| at * n + i)
}

fn unflat<const N: usize>(mut at: usize, shape: [usize; N]) -> [usize; N] {
    let mut index = [0; N];
    for a in (0..N).rev() {
        index[a] = at % shape[a];
        at /= shape[a];
    }
    index
}

/// The index an index `x` of an axis of `n` points and radius `r` is read from: itself in
/// the interior and on a Dirichlet side, the wrapped interior index on a periodic side, the
/// mirrored one on a Neumann side.
fn source(x: usize, n: usize, r: usize, low: Boundary, high: Boundary) -> usize {
    let side = if x < r {
        low
    } else if x >= n - r {
        high
    } else {
        Boundary::Dirichlet
    };
    match (side, x < r) {
        (Boundary::Periodic, true) => x + n - 2 * r,
        (Boundary::Periodic, false) => x - (n - 2 * r),
        (Boundary::Neumann, true) => 2 * r - 1 - x,
        (Boundary::Neumann, false) => 2 * (n - r) - 1 - x,
        _ => x,
    }
}

fn mapped<const N: usize>(index: [usize; N], shape: [usize; N], radius: &[usize], b: &Boundaries<N>) -> [usize; N] {
    std::array::from_fn(|a| source(index[a], shape[a], radius[a], b.low[a], b.high[a]))
}

fn interior<const N: usize>(index: [usize; N], shape: [usize; N], radius: &[usize]) -> bool {
    (0..N).all(|a| index[a] >= radius[a] && index[a] < shape[a] - radius[a])
}

/// `iterations` Jacobi steps of system `S` by hand from `unknowns` (declaration order), the
/// read-only fields at their places in `inputs` (`None` at the unknowns'): every outer-layer
/// read goes through the conditions, and so does the result's outer layer.
fn reference<S: Stencil<N>, T: Real, const N: usize>(
    unknowns: &[&Grid<T, N>],
    inputs: &[Option<&Grid<T, N>>],
    params: &S::Params<T>,
    b: &Boundaries<N>,
    iterations: usize,
) -> Vec<Vec<T>> {
    let meta = S::META;
    let shape = unknowns[0].shape();
    let mut u: Vec<Vec<T>> = unknowns.iter().map(|g| g.as_slice().to_vec()).collect();
    let points: Vec<[usize; N]> = (0..u[0].len()).map(|at| unflat(at, shape)).collect();
    for _ in 0..iterations {
        let old = u.clone();
        for &p in points.iter().filter(|&&p| interior(p, shape, meta.radius)) {
            let load = |slot: usize| {
                let read = meta.reads[slot];
                let at: [usize; N] = std::array::from_fn(|a| (p[a] as i64 + read.offset[a] as i64) as usize);
                match inputs[read.field] {
                    Some(field) => field.as_slice()[flat(at, shape)],
                    None => {
                        let k = meta.unknowns.iter().position(|&f| f == read.field).unwrap();
                        old[k][flat(mapped(at, shape, meta.radius, b), shape)]
                    }
                }
            };
            let mut values = vec![T::from_f64(0.0); meta.unknowns.len()];
            S::point_all(load, params, &mut values);
            for (k, value) in values.into_iter().enumerate() {
                u[k][flat(p, shape)] = value;
            }
        }
    }
    u.iter().map(|u| points.iter().map(|&p| u[flat(mapped(p, shape, meta.radius, b), shape)]).collect()).collect()
}

/// `iterations` of system `S` with `schedule` on the CPU under `b`, from `unknowns`.
fn run<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    unknowns: &[&Grid<T, N>],
    inputs: &[(&str, &Grid<T, N>)],
    params: S::Params<T>,
    b: Boundaries<N>,
    schedule: Schedule,
    iterations: usize,
) -> Result<Vec<Vec<T>>, Error> {
    let mut grids: Vec<Grid<T, N>> = unknowns.iter().map(|g| (*g).clone()).collect();
    let mut solver = Solver::new(stencil).params(params).boundaries(b).schedule(schedule).max_iterations(iterations);
    for &(name, grid) in inputs {
        solver = solver.input(name, grid);
    }
    let mut refs: Vec<&mut Grid<T, N>> = grids.iter_mut().collect();
    let report = solver.run_system(&mut refs)?;
    assert_eq!(report.iterations, iterations);
    Ok(grids.iter().map(|g| g.as_slice().to_vec()).collect())
}

fn gray_scott_params<T: Real>() -> GrayScottParams<T> {
    let t = T::from_f64;
    GrayScottParams { du: t(0.16), dv: t(0.08), feed: t(0.035), kill: t(0.065), dt: t(1.0) }
}

/// Gray–Scott on a periodic grid written out by hand: the same operations in the same order
/// as the stencil's body, with the wrap done by index arithmetic.
fn gray_scott_by_hand(u: &mut Vec<f64>, v: &mut Vec<f64>, [n0, n1]: [usize; 2], steps: usize) {
    let (du, dv, feed, kill, dt) = (0.16, 0.08, 0.035, 0.065, 1.0);
    // The interior is [1, n − 1) on each axis, and wraps onto itself.
    let wrap = |i: usize, n: usize| 1 + (i + n - 3) % (n - 2);
    for _ in 0..steps {
        let (u0, v0) = (u.clone(), v.clone());
        let at = |g: &Vec<f64>, i: usize, j: usize| g[wrap(i, n0) * n1 + wrap(j, n1)];
        for i in 1..n0 - 1 {
            for j in 1..n1 - 1 {
                let (uc, vc) = (at(&u0, i, j), at(&v0, i, j));
                let lu = at(&u0, i - 1, j) + at(&u0, i + 1, j) + at(&u0, i, j - 1) + at(&u0, i, j + 1) - 4.0 * uc;
                let lv = at(&v0, i - 1, j) + at(&v0, i + 1, j) + at(&v0, i, j - 1) + at(&v0, i, j + 1) - 4.0 * vc;
                let uvv = uc * vc * vc;
                u[i * n1 + j] = uc + dt * (du * lu - uvv + feed * (1.0 - uc));
                v[i * n1 + j] = vc + dt * (dv * lv + uvv - (feed + kill) * vc);
            }
        }
    }
    // The outer layer holds the wrapped interior, as the run leaves it.
    for g in [u, v] {
        let filled: Vec<f64> = (0..n0 * n1).map(|at| g[wrap(at / n1, n0) * n1 + wrap(at % n1, n1)]).collect();
        *g = filled;
    }
}

#[test]
fn gray_scott_equals_the_loop_written_by_hand() {
    let shape = [14, 19];
    let u0 = Grid::<f64, 2>::from_fn(shape, |[i, j]| 1.0 - 0.02 * ((i * 7 + j * 3) % 11) as f64).unwrap();
    let v0 = Grid::<f64, 2>::from_fn(shape, |[i, j]| 0.03 * ((i * 5 + j * 2) % 7) as f64).unwrap();
    let (mut u, mut v) = (u0.as_slice().to_vec(), v0.as_slice().to_vec());
    gray_scott_by_hand(&mut u, &mut v, shape, 25);
    for schedule in [Schedule::Plain, Schedule::Tiled, Schedule::Auto] {
        let got =
            run(GrayScott, &[&u0, &v0], &[], gray_scott_params(), Boundary::Periodic.into(), schedule, 25).unwrap();
        assert_eq!(bits(&got[0]), bits(&u), "{schedule}");
        assert_eq!(bits(&got[1]), bits(&v), "{schedule}");
    }
}

#[test]
fn two_and_three_unknowns_equal_the_reference_for_every_combination() {
    let (u0, v0) = (random::<f32, 2>([9, 12], 1), random::<f32, 2>([9, 12], 2));
    let params = gray_scott_params::<f32>();
    for b in boundary_combinations::<2>() {
        let expected = reference::<GrayScott, f32, 2>(&[&u0, &v0], &[None, None], &params, &b, 4);
        for schedule in [Schedule::Plain, Schedule::Tiled] {
            let got = run(GrayScott, &[&u0, &v0], &[], params, b, schedule, 4).unwrap();
            assert_eq!(bits(&got[0]), bits(&expected[0]), "{b} {schedule}");
            assert_eq!(bits(&got[1]), bits(&expected[1]), "{b} {schedule}");
        }
    }
    let (p0, q0) = (random::<f64, 3>([6, 7, 5], 3), random::<f64, 3>([6, 7, 5], 4));
    for b in boundary_combinations::<3>() {
        let expected = reference::<Wave, f64, 3>(&[&p0, &q0], &[None, None], &WaveParams { c: 0.1 }, &b, 3);
        let got = run(Wave, &[&p0, &q0], &[], WaveParams { c: 0.1 }, b, Schedule::Plain, 3).unwrap();
        assert_eq!(got, expected, "{b}");
    }
    let [a0, f, b0, c0] = [5, 6, 7, 8].map(|seed| random::<f64, 1>([13], seed));
    for b in boundary_combinations::<1>() {
        let fields = [None, Some(&f), None, None];
        let expected = reference::<Three, f64, 1>(&[&a0, &b0, &c0], &fields, &ThreeParams { k: 0.3 }, &b, 6);
        let got = run(Three, &[&a0, &b0, &c0], &[("f", &f)], ThreeParams { k: 0.3 }, b, Schedule::Plain, 6).unwrap();
        assert_eq!(got, expected, "{b}");
    }
}

#[test]
fn exact_hierarchical_cycles_of_a_system_equal_the_reference() {
    // Every combination of conditions: working regions wrap past periodic edges and mirror
    // Neumann ones, for every unknown.
    let (u0, v0) = (random::<f64, 2>([17, 23], 41), random::<f64, 2>([17, 23], 42));
    let params = gray_scott_params::<f64>();
    for b in boundary_combinations::<2>() {
        let expected = reference::<GrayScott, f64, 2>(&[&u0, &v0], &[None, None], &params, &b, 7);
        for (tile, halo, sub) in [(4, 3, 3), (5, 2, 2), (8, 4, 4), (3, 1, 1)] {
            let schedule = Schedule::Hierarchical { tile, halo, sub };
            let got = run(GrayScott, &[&u0, &v0], &[], params, b, schedule, 7).unwrap();
            assert_eq!(got, expected, "{b} {schedule}");
        }
    }
    let (p0, q0) = (random::<f32, 3>([9, 8, 10], 43), random::<f32, 3>([9, 8, 10], 44));
    let schedule = Schedule::Hierarchical { tile: 4, halo: 2, sub: 2 };
    for b in boundary_combinations::<3>() {
        let expected = reference::<Wave, f32, 3>(&[&p0, &q0], &[None, None], &WaveParams { c: 0.1 }, &b, 5);
        let got = run(Wave, &[&p0, &q0], &[], WaveParams { c: 0.1 }, b, schedule, 5).unwrap();
        assert_eq!(bits(&got[0]), bits(&expected[0]), "{b}");
        assert_eq!(bits(&got[1]), bits(&expected[1]), "{b}");
    }
    let [a0, f, b0, c0] = [45, 46, 47, 48].map(|seed| random::<f64, 1>([40], seed));
    let fields = [None, Some(&f), None, None];
    let schedule = Schedule::Hierarchical { tile: 6, halo: 8, sub: 4 };
    for b in boundary_combinations::<1>() {
        let expected = reference::<Three, f64, 1>(&[&a0, &b0, &c0], &fields, &ThreeParams { k: 0.3 }, &b, 9);
        let got = run(Three, &[&a0, &b0, &c0], &[("f", &f)], ThreeParams { k: 0.3 }, b, schedule, 9).unwrap();
        assert_eq!(got, expected, "{b}");
    }
}

/// Out-of-core schedules of every inner kind: pyramids of plain iterations, skewed slabs and
/// slabs of exact cycles (hierarchical and streaming), of `slab` planes and `height`
/// iterations a pass.
fn out_of_core(slab: usize, height: usize) -> [Schedule; 4] {
    let of = |inner| Schedule::OutOfCore { slab: Some(slab), height, inner, device_memory: None };
    let (hierarchical, streaming) =
        (Inner::Hierarchical { tile: 4, halo: 4, sub: 2 }, Inner::Streaming { tile: 4, sub: 2 });
    [of(Inner::Plain), of(Inner::Skewed), of(hierarchical), of(streaming)]
}

#[test]
fn out_of_core_slabs_of_a_system_equal_the_reference() {
    // Each unknown has its chunk buffers and carries; a read-only field sits between them.
    let (u0, v0) = (random::<f64, 2>([19, 9], 51), random::<f64, 2>([19, 9], 52));
    let params = gray_scott_params::<f64>();
    for b in boundary_combinations::<2>() {
        let expected = reference::<GrayScott, f64, 2>(&[&u0, &v0], &[None, None], &params, &b, 7);
        for (slab, height) in [(3, 2), (5, 3), (17, 7)] {
            for schedule in out_of_core(slab, height) {
                let got = run(GrayScott, &[&u0, &v0], &[], params, b, schedule, 7).unwrap();
                assert_eq!(got, expected, "{b} {schedule}");
            }
        }
    }
    let (p0, q0) = (random::<f32, 3>([12, 7, 6], 53), random::<f32, 3>([12, 7, 6], 54));
    for b in boundary_combinations::<3>() {
        let expected = reference::<Wave, f32, 3>(&[&p0, &q0], &[None, None], &WaveParams { c: 0.1 }, &b, 5);
        for schedule in out_of_core(4, 3) {
            let got = run(Wave, &[&p0, &q0], &[], WaveParams { c: 0.1 }, b, schedule, 5).unwrap();
            assert_eq!(bits(&got[0]), bits(&expected[0]), "{b} {schedule}");
            assert_eq!(bits(&got[1]), bits(&expected[1]), "{b} {schedule}");
        }
    }
    let [a0, f, b0, c0] = [55, 56, 57, 58].map(|seed| random::<f64, 1>([30], seed));
    let fields = [None, Some(&f), None, None];
    for b in boundary_combinations::<1>() {
        let expected = reference::<Three, f64, 1>(&[&a0, &b0, &c0], &fields, &ThreeParams { k: 0.3 }, &b, 9);
        for schedule in out_of_core(6, 4) {
            let got = run(Three, &[&a0, &b0, &c0], &[("f", &f)], ThreeParams { k: 0.3 }, b, schedule, 9).unwrap();
            assert_eq!(got, expected, "{b} {schedule}");
        }
    }
}

#[test]
fn inexact_cycles_of_a_system_equal_each_unknown_run_alone() {
    // Paper 003's iteration (halo < sub · radius) is defined by its tiles; with unknowns
    // that never meet, each must follow the same tiles as a single-unknown run.
    let (u0, f, v0) = (random::<f64, 2>([21, 26], 51), random::<f64, 2>([21, 26], 52), random::<f64, 2>([21, 26], 53));
    for (tile, halo, sub) in [(6, 1, 4), (5, 2, 3), (8, 1, 2)] {
        let schedule = Schedule::Hierarchical { tile, halo, sub };
        let k = 0.2;
        let got =
            run(Apart, &[&u0, &v0], &[("f", &f)], ApartParams { k }, Boundary::Dirichlet.into(), schedule, 11).unwrap();
        let (mut u, mut v) = (u0.clone(), v0.clone());
        let alone = |s| Solver::new(AloneU).input("f", &f).params(AloneUParams { k }).schedule(s).max_iterations(11);
        alone(schedule).run(&mut u).unwrap();
        Solver::new(AloneV).params(AloneVParams { k }).schedule(schedule).max_iterations(11).run(&mut v).unwrap();
        assert_eq!(got[0], u.as_slice(), "{schedule}");
        assert_eq!(got[1], v.as_slice(), "{schedule}");
        // Inexact: not the plain iterates.
        let plain =
            run(Apart, &[&u0, &v0], &[("f", &f)], ApartParams { k }, Boundary::Dirichlet.into(), Schedule::Plain, 11);
        assert_ne!(plain.unwrap()[0], got[0], "{schedule}");
    }
}

#[test]
fn the_residual_is_taken_over_every_unknown() {
    let (u0, v0) = (random::<f64, 2>([10, 9], 11), random::<f64, 2>([10, 9], 12));
    let params = gray_scott_params::<f64>();
    let (mut u, mut v) = (u0.clone(), v0.clone());
    let report = Solver::new(GrayScott)
        .params(params)
        .max_iterations(1)
        .tolerance(Tolerance::Absolute { norm: Norm::L2, eps: 1e-300 })
        .run_system(&mut [&mut u, &mut v])
        .unwrap();
    let (mut max, mut sum) = (0f64, 0f64);
    for (new, old) in [(&u, &u0), (&v, &v0)] {
        for (n, o) in new.as_slice().iter().zip(old.as_slice()) {
            let d = n - o;
            max = max.max(d.abs());
            sum += d * d;
        }
    }
    let sample = report.residuals.last().unwrap();
    assert_eq!(sample.max, max);
    assert!((sample.l2 - sum.sqrt()).abs() <= 1e-12 * sum.sqrt(), "{} {}", sample.l2, sum.sqrt());
    // The largest change is v's in one grid and u's in the other: neither alone gives it.
    let only_u: f64 = u.as_slice().iter().zip(u0.as_slice()).map(|(n, o)| (n - o).abs()).fold(0.0, f64::max);
    let only_v: f64 = v.as_slice().iter().zip(v0.as_slice()).map(|(n, o)| (n - o).abs()).fold(0.0, f64::max);
    assert_eq!(max, only_u.max(only_v));
}

#[test]
fn an_observer_sees_every_unknown() {
    let (u0, v0) = (random::<f64, 2>([8, 8], 21), random::<f64, 2>([8, 8], 22));
    let mut seen = Vec::new();
    let (mut u, mut v) = (u0.clone(), v0.clone());
    Solver::new(GrayScott)
        .params(gray_scott_params())
        .boundaries(Boundary::Neumann)
        .max_iterations(6)
        .observe_all(3, |iteration, grids| seen.push((iteration, grids[0].clone(), grids[1].clone())))
        .run_system(&mut [&mut u, &mut v])
        .unwrap();
    assert_eq!(seen.len(), 2);
    let (iteration, u3, v3) = &seen[0];
    assert_eq!(*iteration, 3);
    let expected =
        reference::<GrayScott, f64, 2>(&[&u0, &v0], &[None, None], &gray_scott_params(), &Boundary::Neumann.into(), 3);
    assert_eq!(u3.as_slice(), &expected[0][..]);
    assert_eq!(v3.as_slice(), &expected[1][..]);
    assert_eq!((seen[1].1.as_slice(), seen[1].2.as_slice()), (u.as_slice(), v.as_slice()));
}

#[test]
fn a_resumed_system_ends_where_an_uninterrupted_run_does() {
    let (u0, v0) = (random::<f64, 2>([12, 10], 41), random::<f64, 2>([12, 10], 42));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gray-scott.npz");
    let hierarchical = Schedule::Hierarchical { tile: 4, halo: 3, sub: 3 };
    let [.., slabs] = out_of_core(4, 3);
    let runs = [(Schedule::Plain, Boundary::Periodic), (hierarchical, Boundary::Neumann), (slabs, Boundary::Dirichlet)];
    for (schedule, b) in runs {
        let solver = |limit| {
            Solver::new(GrayScott)
                .params(gray_scott_params())
                .boundaries(b)
                .schedule(schedule)
                .max_iterations(limit)
                .checkpoint(Checkpoint::every(3, &path).resume())
        };
        let _ = std::fs::remove_file(&path);
        let (mut u, mut v) = (u0.clone(), v0.clone());
        solver(7).run_system(&mut [&mut u, &mut v]).unwrap();
        let saved = Checkpoint::read::<f64, 2>(&path).unwrap();
        assert_eq!((saved.iteration, saved.more.len()), (6, 1), "{schedule}");
        let at6 = reference::<GrayScott, f64, 2>(&[&u0, &v0], &[None, None], &gray_scott_params(), &b.into(), 6);
        assert_eq!((bits(saved.grid.as_slice()), bits(saved.more[0].as_slice())), (bits(&at6[0]), bits(&at6[1])));
        // Resumed from iterate 6 with other grids: they are overwritten by the saved ones.
        let (mut w, mut z) = (random::<f64, 2>([12, 10], 43), random::<f64, 2>([12, 10], 44));
        let report = solver(12).run_system(&mut [&mut w, &mut z]).unwrap();
        assert_eq!(report.iterations, 12, "{schedule}");
        let at12 = reference::<GrayScott, f64, 2>(&[&u0, &v0], &[None, None], &gray_scott_params(), &b.into(), 12);
        assert_eq!((bits(w.as_slice()), bits(z.as_slice())), (bits(&at12[0]), bits(&at12[1])), "{schedule}");
    }
    // A checkpoint of one unknown does not resume a system.
    Checkpoint::write(&path, &u0, 3, None, "gray_scott").unwrap();
    let (mut u, mut v) = (u0.clone(), v0.clone());
    let e = Solver::new(GrayScott)
        .params(gray_scott_params())
        .max_iterations(5)
        .checkpoint(Checkpoint::every(3, &path).resume().allow_changed_inputs())
        .run_system(&mut [&mut u, &mut v])
        .unwrap_err();
    assert!(matches!(e, Error::ReadCheckpoint { .. }), "{e}");
    assert!(e.to_string().contains("it holds 1 unknown, and `gray_scott` updates 2"), "{e}");
    assert_eq!((u.as_slice(), v.as_slice()), (u0.as_slice(), v0.as_slice()));
}

#[test]
fn what_a_system_cannot_run_is_an_error_before_the_run() {
    let (u0, v0) = (random::<f64, 2>([8, 8], 31), random::<f64, 2>([8, 8], 32));
    let (mut u, v) = (u0.clone(), v0.clone());
    let solver = || Solver::new(GrayScott).params(gray_scott_params()).max_iterations(2);
    let e = solver().run(&mut u).unwrap_err();
    assert!(matches!(e, Error::WrongUnknowns { .. }), "{e}");
    assert!(e.to_string().contains("run_system(&mut [&mut u, &mut v])"), "{e}");
    let e = solver().run_system(&mut [&mut u]).unwrap_err();
    assert!(e.to_string().contains("updates 2 unknowns (`u`, `v`) and the run was given 1 grid"), "{e}");
    let mut small = random::<f64, 2>([8, 7], 33);
    let e = solver().run_system(&mut [&mut u, &mut small]).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { ref field, .. } if field == "v"), "{e}");
    // Nothing ran.
    assert_eq!((u.as_slice(), v.as_slice()), (u0.as_slice(), v0.as_slice()));
    // A single-unknown stencil also runs through `run_system`.
    let mut w = random::<f64, 1>([9], 34);
    stencil! { fn avg(mut w: Field1) -> Real { 0.5 * (w[-1] + w[1]) } }
    let mut x = w.clone();
    Solver::new(Avg).max_iterations(3).run_system(&mut [&mut w]).unwrap();
    Solver::new(Avg).max_iterations(3).run(&mut x).unwrap();
    assert_eq!(w.as_slice(), x.as_slice());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random sizes, boundary combinations and iteration counts: plain, tiled and out-of-core
    /// schedules equal the reference for two unknowns in 2-D, and plain for three in 1-D.
    #[test]
    fn random_systems_equal_the_reference(
        n0 in 5usize..12,
        n1 in 5usize..12,
        n in 9usize..30,
        combination in 0usize..25,
        iterations in 1usize..5,
        seed in 0u64..1000,
    ) {
        let (u0, v0) = (random::<f64, 2>([n0, n1], seed), random::<f64, 2>([n0, n1], seed + 1));
        let b2 = boundary_combinations::<2>()[combination % 16];
        let params = gray_scott_params::<f64>();
        let expected = reference::<GrayScott, f64, 2>(&[&u0, &v0], &[None, None], &params, &b2, iterations);
        let slabs = out_of_core(1 + seed as usize % n0, 1 + seed as usize % 4)[combination % 3];
        for schedule in [Schedule::Plain, Schedule::Tiled, slabs] {
            let got = run(GrayScott, &[&u0, &v0], &[], params, b2, schedule, iterations).unwrap();
            prop_assert_eq!(&got, &expected, "{}", schedule);
        }
        let [a0, f, b0, c0] = [2, 3, 4, 5].map(|k| random::<f64, 1>([n], seed + k));
        let b1 = boundary_combinations::<1>()[combination % 4];
        let fields = [None, Some(&f), None, None];
        let expected = reference::<Three, f64, 1>(&[&a0, &b0, &c0], &fields, &ThreeParams { k: 0.2 }, &b1, iterations);
        let got = run(Three, &[&a0, &b0, &c0], &[("f", &f)], ThreeParams { k: 0.2 }, b1, Schedule::Plain, iterations).unwrap();
        prop_assert_eq!(got, expected);
    }
}
