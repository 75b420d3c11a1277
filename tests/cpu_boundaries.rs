//! Periodic and Neumann boundaries on the CPU: every schedule (of one iteration at a time,
//! and exact hierarchical cycles, whose working regions wrap and mirror) equals a hand-written
//! loop that reads the outer layer through each axis's wrap or mirror
//! (not through the fill the runtime does), bit for bit, for Jacobi stencils and sweeps, in
//! 1-D to 3-D, radius 1 and 2, every combination of conditions; the outer layer of the
//! result holds the last iterate's; and conditions that cannot hold are errors before the
//! run.

use proptest::prelude::*;
use stencil::prelude::*;
use stencil::{Boundaries, Boundary, Error, Side};

mod common;
use common::{boundary_combinations, random};

stencil! {
    /// A 5-point Poisson update with a diagonal read, radius 1.
    fn diag5(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + 0.5 * u[1, -1] + h2 * f[0, 0]) / 4.5
    }

    /// Radius 2 on axis 1, 1 on axis 0, an asymmetric (upwind) update.
    fn upwind(mut u: Field2, c: Real) -> Real {
        u[0, 0] - c * (3.0 * u[0, 0] - 4.0 * u[0, -1] + u[0, -2]) + 0.1 * (u[-1, 0] - 2.0 * u[0, 0] + u[1, 0])
    }

    /// 3-D, corner reads.
    fn corner7(mut u: Field3, f: Field3) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1]
            + 0.25 * (u[1, 1, 1] + u[-1, -1, -1]) + f[0, 0, 0]) / 6.5
    }

    /// 3-D, radius 2 along axis 0, a corner read.
    fn far3(mut u: Field3) -> Real {
        (u[-2, 0, 0] + u[2, 0, 0] + u[-1, 0, 0] + u[0, 1, 0] + u[0, -1, 0] + u[0, 0, 1] + u[1, -1, 1]) / 7.25
    }

    /// 1-D, radius 2.
    fn line2(mut u: Field1) -> Real {
        0.2 * (u[-2] + u[-1] + u[0] + u[1] + u[2])
    }

    /// Gauss–Seidel, both axes ascending.
    sweep(+, +) fn gs5(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
    }

    /// A descending sweep with a diagonal read.
    sweep(-, +) fn back(mut u: Field2) -> Real {
        (u[1, 0] + u[-1, 0] + u[0, -1] + 0.5 * u[1, -1] + u[0, 1]) / 4.5
    }
}

/// The index an outer-layer index `x` of an axis of `n` points and radius `r` is read from:
/// itself for the interior and a Dirichlet side, the wrapped interior index for a periodic
/// side, the mirrored one for Neumann.
fn source(x: usize, n: usize, r: usize, low: Boundary, high: Boundary) -> usize {
    if x < r {
        match low {
            Boundary::Dirichlet => x,
            Boundary::Periodic => x + n - 2 * r,
            Boundary::Neumann => 2 * r - 1 - x,
        }
    } else if x >= n - r {
        match high {
            Boundary::Dirichlet => x,
            Boundary::Periodic => x - (n - 2 * r),
            Boundary::Neumann => 2 * (n - r) - 1 - x,
        }
    } else {
        x
    }
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

/// Where point `index` (anywhere in the grid) is read from under `b`.
fn mapped<const N: usize>(index: [usize; N], shape: [usize; N], radius: &[usize], b: &Boundaries<N>) -> [usize; N] {
    std::array::from_fn(|a| source(index[a], shape[a], radius[a], b.low[a], b.high[a]))
}

fn interior<const N: usize>(index: [usize; N], shape: [usize; N], radius: &[usize]) -> bool {
    (0..N).all(|a| index[a] >= radius[a] && index[a] < shape[a] - radius[a])
}

/// `iterations` of `S` by hand from `u0`: Jacobi steps, or for a sweep stencil sweeps in
/// its declared order whose outer-layer reads see the values from before the sweep. The
/// result's outer layer is read through the conditions too, as a run leaves it.
fn reference<S: Stencil<N>, T: Real, const N: usize>(
    u0: &Grid<T, N>,
    fields: &[Option<&Grid<T, N>>],
    params: &S::Params<T>,
    b: &Boundaries<N>,
    iterations: usize,
) -> Vec<T> {
    let meta = S::META;
    let shape = u0.shape();
    let mut u = u0.as_slice().to_vec();
    let points: Vec<[usize; N]> = (0..u.len()).map(|at| unflat(at, shape)).collect();
    // Visiting order: row-major, each axis in the sweep's direction.
    let mut order: Vec<[usize; N]> = points.iter().copied().filter(|&p| interior(p, shape, meta.radius)).collect();
    if let Some(sweep) = meta.sweep {
        order.sort_by_key(|p| {
            let key: Vec<i64> = (0..N).map(|a| sweep.directions[a].sign() * p[a] as i64).collect();
            key
        });
    }
    for _ in 0..iterations {
        let old = u.clone();
        for &p in &order {
            let load = |slot: usize| {
                let read = meta.reads[slot];
                let at: [usize; N] = std::array::from_fn(|a| (p[a] as i64 + read.offset[a] as i64) as usize);
                match fields[read.field] {
                    Some(field) => field.as_slice()[flat(at, shape)],
                    // Jacobi reads the old iterate; a sweep the current one inside, the old
                    // one in the outer layer (filled before the sweep).
                    None if meta.sweep.is_some() && interior(at, shape, meta.radius) => u[flat(at, shape)],
                    None => old[flat(mapped(at, shape, meta.radius, b), shape)],
                }
            };
            let value = S::point(load, params);
            u[flat(p, shape)] = value;
        }
    }
    points.iter().map(|&p| u[flat(mapped(p, shape, meta.radius, b), shape)]).collect()
}

/// `iterations` of `S` with `schedule` on the CPU under `b`.
fn run<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    u0: &Grid<T, N>,
    inputs: &[(&str, &Grid<T, N>)],
    params: S::Params<T>,
    b: Boundaries<N>,
    schedule: Schedule,
    iterations: usize,
) -> std::result::Result<Vec<T>, Error> {
    let mut u = u0.clone();
    let mut solver = Solver::new(stencil).params(params).boundaries(b).schedule(schedule).max_iterations(iterations);
    for &(name, grid) in inputs {
        solver = solver.input(name, grid);
    }
    let report = solver.run(&mut u)?;
    assert_eq!(report.iterations, iterations);
    Ok(u.as_slice().to_vec())
}

fn bits<T: Real>(values: &[T]) -> Vec<u64> {
    values.iter().map(|v| v.to_f64().to_bits()).collect()
}

const KINDS: [Boundary; 3] = [Boundary::Dirichlet, Boundary::Periodic, Boundary::Neumann];

#[test]
fn jacobi_runs_equal_the_hand_written_loop_for_every_combination() {
    let (u0, f) = (random::<f64, 2>([9, 11], 1), random::<f64, 2>([9, 11], 2));
    let fields = [None, Some(&f)];
    let params = Diag5Params { h2: 0.01 };
    for b in boundary_combinations::<2>() {
        let expected = reference::<Diag5, f64, 2>(&u0, &fields, &params, &b, 5);
        for schedule in [Schedule::Plain, Schedule::Tiled, Schedule::Auto] {
            let got = run(Diag5, &u0, &[("f", &f)], params, b, schedule, 5).unwrap();
            assert_eq!(bits(&got), bits(&expected), "{b} {schedule}");
        }
    }
    let u0 = random::<f32, 2>([8, 13], 3);
    for b in boundary_combinations::<2>() {
        let expected = reference::<Upwind, f32, 2>(&u0, &[None], &UpwindParams { c: 0.3 }, &b, 4);
        let got = run(Upwind, &u0, &[], UpwindParams { c: 0.3 }, b, Schedule::Plain, 4).unwrap();
        assert_eq!(bits(&got), bits(&expected), "{b}");
    }
}

#[test]
fn three_and_one_dimensional_runs_equal_the_hand_written_loop() {
    let (u0, f) = (random::<f64, 3>([6, 7, 5], 4), random::<f64, 3>([6, 7, 5], 5));
    for b in boundary_combinations::<3>() {
        let expected = reference::<Corner7, f64, 3>(&u0, &[None, Some(&f)], &Corner7Params, &b, 3);
        let got = run(Corner7, &u0, &[("f", &f)], Corner7Params, b, Schedule::Plain, 3).unwrap();
        assert_eq!(bits(&got), bits(&expected), "{b}");
    }
    let u0 = random::<f64, 1>([11], 6);
    for b in boundary_combinations::<1>() {
        let expected = reference::<Line2, f64, 1>(&u0, &[None], &Line2Params, &b, 7);
        let got = run(Line2, &u0, &[], Line2Params, b, Schedule::Plain, 7).unwrap();
        assert_eq!(bits(&got), bits(&expected), "{b}");
    }
}

#[test]
fn sweeps_equal_the_hand_written_sweep_sequentially_and_by_wavefront() {
    let (u0, f) = (random::<f64, 2>([10, 9], 7), random::<f64, 2>([10, 9], 8));
    let params = Gs5Params { h2: 0.02 };
    for b in boundary_combinations::<2>() {
        let expected = reference::<Gs5, f64, 2>(&u0, &[None, Some(&f)], &params, &b, 4);
        for schedule in [Schedule::Plain, Schedule::Wavefront { tile: 3 }, Schedule::Auto] {
            let got = run(Gs5, &u0, &[("f", &f)], params, b, schedule, 4).unwrap();
            assert_eq!(bits(&got), bits(&expected), "{b} {schedule}");
        }
        let expected = reference::<Back, f64, 2>(&u0, &[None], &BackParams, &b, 3);
        let got = run(Back, &u0, &[], BackParams, b, Schedule::Wavefront { tile: 2 }, 3).unwrap();
        assert_eq!(bits(&got), bits(&expected), "{b}");
    }
}

#[test]
fn out_of_core_passes_equal_the_hand_written_loop_for_every_combination() {
    // Pyramids, skewed slabs and slabs of cycles of several widths and heights; checks every
    // pass. A periodic axis 0 runs passes of one iteration.
    let (u0, f) = (random::<f64, 2>([13, 11], 1), random::<f64, 2>([13, 11], 2));
    let params = Diag5Params { h2: 0.01 };
    let slabs = |slab, height, inner| Schedule::OutOfCore { slab: Some(slab), height, inner, device_memory: None };
    for b in boundary_combinations::<2>() {
        let expected = reference::<Diag5, f64, 2>(&u0, &[None, Some(&f)], &params, &b, 7);
        for schedule in [
            slabs(2, 3, Inner::Plain),
            slabs(5, 4, Inner::Plain),
            slabs(1, 7, Inner::Plain),
            slabs(3, 2, Inner::Skewed),
            slabs(4, 7, Inner::Skewed),
            slabs(3, 5, Inner::Hierarchical { tile: 4, halo: 2, sub: 2 }),
            slabs(4, 6, Inner::Hierarchical { tile: 3, halo: 3, sub: 3 }),
            slabs(3, 5, Inner::Streaming { tile: 4, sub: 2 }),
        ] {
            let got = run(Diag5, &u0, &[("f", &f)], params, b, schedule, 7).unwrap();
            assert_eq!(bits(&got), bits(&expected), "{b} {schedule}");
        }
    }
    // 3-D, radius 2 along the slab axis.
    let u0 = random::<f32, 3>([12, 5, 6], 3);
    for b in boundary_combinations::<3>() {
        let expected = reference::<Far3, f32, 3>(&u0, &[None], &Far3Params, &b, 5);
        let cycles = Inner::Hierarchical { tile: 3, halo: 4, sub: 2 };
        for schedule in [slabs(3, 2, Inner::Plain), slabs(2, 5, Inner::Skewed), slabs(4, 5, cycles)] {
            let got = run(Far3, &u0, &[], Far3Params, b, schedule, 5).unwrap();
            assert_eq!(bits(&got), bits(&expected), "{b} {schedule}");
        }
    }
}

#[test]
fn exact_hierarchical_cycles_equal_the_hand_written_loop_for_every_combination() {
    // Working regions wrap past a periodic edge and mirror a Neumann one after every
    // subiteration; tiles of several sizes leave partial tiles at the edges, and a tile
    // larger than the grid wraps its region more than once around a narrow axis.
    let (u0, f) = (random::<f64, 2>([11, 13], 11), random::<f64, 2>([11, 13], 12));
    let params = Diag5Params { h2: 0.01 };
    let hier = |tile, halo, sub| Schedule::Hierarchical { tile, halo, sub };
    for b in boundary_combinations::<2>() {
        let expected = reference::<Diag5, f64, 2>(&u0, &[None, Some(&f)], &params, &b, 7);
        for schedule in [hier(4, 3, 3), hier(5, 2, 2), hier(3, 4, 4), hier(20, 7, 7)] {
            let got = run(Diag5, &u0, &[("f", &f)], params, b, schedule, 7).unwrap();
            assert_eq!(bits(&got), bits(&expected), "{b} {schedule}");
        }
    }
    // Radius 2 on one axis, f32.
    let u0 = random::<f32, 2>([9, 14], 13);
    for b in boundary_combinations::<2>() {
        let expected = reference::<Upwind, f32, 2>(&u0, &[None], &UpwindParams { c: 0.3 }, &b, 6);
        let got = run(Upwind, &u0, &[], UpwindParams { c: 0.3 }, b, hier(4, 6, 3), 6).unwrap();
        assert_eq!(bits(&got), bits(&expected), "{b}");
    }
    // 3-D with corner reads, and 1-D of radius 2.
    let (u0, f) = (random::<f64, 3>([8, 7, 9], 14), random::<f64, 3>([8, 7, 9], 15));
    for b in boundary_combinations::<3>() {
        let expected = reference::<Corner7, f64, 3>(&u0, &[None, Some(&f)], &Corner7Params, &b, 4);
        let got = run(Corner7, &u0, &[("f", &f)], Corner7Params, b, hier(3, 2, 2), 4).unwrap();
        assert_eq!(bits(&got), bits(&expected), "{b}");
    }
    let u0 = random::<f64, 1>([23], 16);
    for b in boundary_combinations::<1>() {
        let expected = reference::<Line2, f64, 1>(&u0, &[None], &Line2Params, &b, 9);
        let got = run(Line2, &u0, &[], Line2Params, b, hier(5, 6, 3), 9).unwrap();
        assert_eq!(bits(&got), bits(&expected), "{b}");
    }
}

#[test]
fn inexact_cycles_with_one_tile_and_enough_halo_on_its_walls_equal_the_loop() {
    // Paper 003's cycle (halo < sub · radius) is exact where no tile meets another: one tile
    // over the whole interior of a grid whose every side is a wall (Dirichlet or Neumann)
    // has nothing stale in its region, so it equals the loop; with a periodic axis the
    // region wraps and its stale ring reaches the core, so it does not.
    let (u0, f) = (random::<f64, 2>([10, 12], 21), random::<f64, 2>([10, 12], 22));
    let params = Diag5Params { h2: 0.01 };
    let one_tile = Schedule::Hierarchical { tile: 12, halo: 1, sub: 3 };
    for b in boundary_combinations::<2>() {
        let expected = reference::<Diag5, f64, 2>(&u0, &[None, Some(&f)], &params, &b, 6);
        let got = run(Diag5, &u0, &[("f", &f)], params, b, one_tile, 6).unwrap();
        let walls = !b.is_periodic(0) && !b.is_periodic(1);
        assert_eq!(bits(&got) == bits(&expected), walls, "{b}");
    }
}

#[test]
fn a_periodic_run_conserves_what_the_stencil_conserves() {
    // The 1-D average of five neighbours conserves the sum on a periodic line (to rounding).
    let u0 = random::<f64, 1>([67], 9);
    let interior_sum = |u: &[f64]| u[2..65].iter().sum::<f64>();
    let got = run(Line2, &u0, &[], Line2Params, Boundary::Periodic.into(), Schedule::Plain, 200).unwrap();
    let (before, after) = (interior_sum(u0.as_slice()), interior_sum(&got));
    assert!((before - after).abs() < 1e-12 * before.abs().max(1.0), "{before} → {after}");
}

#[test]
fn conditions_that_cannot_hold_are_errors_before_the_run() {
    let (u0, f) = (random::<f64, 2>([9, 11], 1), random::<f64, 2>([9, 11], 2));
    let solve = |b: Boundaries<2>, schedule: Schedule, u: &mut Grid<f64, 2>| {
        Solver::new(Diag5).input("f", &f).param("h2", 0.1).boundaries(b).schedule(schedule).max_iterations(3).run(u)
    };
    let one_side = Boundaries::default().side(1, Side::Low, Boundary::Periodic);
    let mut u = u0.clone();
    let e = solve(one_side, Schedule::Plain, &mut u).unwrap_err();
    assert!(matches!(e, Error::InvalidBoundary { axis: 1, .. }), "{e}");
    assert!(e.to_string().contains("both sides"), "{e}");
    assert_eq!(u, u0, "nothing ran");
    // Out-of-core passes over a periodic axis 0 run one iteration each, and the report says so.
    let slabs = Schedule::OutOfCore { slab: Some(3), height: 2, inner: Inner::Plain, device_memory: None };
    let report = solve(Boundaries::default().axis(0, Boundary::Periodic), slabs, &mut u).unwrap();
    assert!(matches!(report.schedule, Schedule::OutOfCore { height: 1, slab: Some(3), .. }), "{}", report.schedule);
    // Radius 2 along axis 1 fills 2 points a side from an interior of 1.
    let mut small = random::<f32, 2>([5, 5], 1);
    let e = Solver::new(Upwind).param("c", 0.1).boundaries(Boundary::Periodic).max_iterations(1).run(&mut small);
    let e = e.unwrap_err();
    assert!(matches!(e, Error::InvalidBoundary { axis: 1, .. }), "{e}");
    assert!(e.to_string().contains("at least 6 points"), "{e}");
    // `Auto` says why it runs plain.
    let mut u = u0.clone();
    let report = solve(Boundary::Periodic.into(), Schedule::Auto, &mut u).unwrap();
    assert_eq!(report.schedule, Schedule::Plain);
    assert!(report.schedule_choice.unwrap().contains("the plain pass"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Shapes, conditions, iteration counts and schedules drawn at random: every schedule
    /// equals the hand-written loop.
    #[test]
    fn random_shapes_and_conditions_equal_the_hand_written_loop(
        n0 in 3usize..12,
        n1 in 6usize..14,
        low in proptest::array::uniform2(0usize..3),
        high in proptest::array::uniform2(0usize..3),
        iterations in 1usize..6,
        seed in 0u64..1000,
        which in 0usize..6,
        width in 1usize..5,
        height in 1usize..4,
    ) {
        let mut b = Boundaries::<2>::default();
        for axis in 0..2 {
            let periodic = low[axis] == 1 || high[axis] == 1;
            let (l, h) = if periodic { (Boundary::Periodic, Boundary::Periodic) } else { (KINDS[low[axis]], KINDS[high[axis]]) };
            b = b.side(axis, Side::Low, l).side(axis, Side::High, h);
        }
        let u0 = random::<f64, 2>([n0, n1], seed);
        let expected = reference::<Upwind, f64, 2>(&u0, &[None], &UpwindParams { c: 0.2 }, &b, iterations);
        // Exact cycles: the halo covers `sub` iterations of radius 2 (axis 1).
        let cycles = Inner::Hierarchical { tile: width + 1, halo: 2 * height, sub: height };
        let slabs = |inner| Schedule::OutOfCore { slab: Some(width), height, inner, device_memory: None };
        let schedule = match which {
            0 => Schedule::Plain,
            1 => Schedule::Tiled,
            2 => Schedule::Hierarchical { tile: width + 1, halo: 2 * height, sub: height },
            3 => slabs(Inner::Plain),
            4 => slabs(Inner::Skewed),
            _ => slabs(cycles),
        };
        let got = run(Upwind, &u0, &[], UpwindParams { c: 0.2 }, b, schedule, iterations);
        // Every interior is at least as wide as the radius: no combination is refused.
        prop_assert_eq!(bits(&got.unwrap()), bits(&expected), "{} {}", b, schedule);
    }
}
