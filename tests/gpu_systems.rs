//! Stencils of several unknowns on the GPU: the plain, tiled and hierarchical kernels write
//! every unknown in one launch and equal the CPU twin bit for bit in exact mode, for two and
//! three unknowns, 1-D to 3-D, f32 and f64, every combination of boundary conditions (for
//! hierarchical cycles too, exact and inexact, and out-of-core slabs); the residual over all
//! unknowns is the CPU's; an observer sees every unknown, and a checkpoint holds and resumes
//! every one. Needs a GPU: the tests are ignored unless asked for
//! (`cargo test -- --include-ignored`, as `.gpu/run-tests` does), and then fail without one.

use stencil::builtin::{GrayScott, GrayScottParams};
use stencil::cuda::Mode;
use stencil::prelude::*;

mod common;
use common::{boundary_combinations, differing, random, require_gpu};

stencil! {
    /// The wave equation as a first-order system in 3-D, with a corner read and a source.
    fn wave(mut p: Field3, s: Field3, mut q: Field3, c: Real) -> (Real, Real) {
        let lap = p[-1, 0, 0] + p[1, 0, 0] + p[0, -1, 0] + p[0, 1, 0] + p[0, 0, -1] + p[0, 0, 1] - 6.0 * p[0, 0, 0];
        (p[0, 0, 0] + c * q[0, 0, 0], q[0, 0, 0] + c * (lap + 0.125 * p[1, 1, -1]) + s[0, 0, 0])
    }

    /// Three unknowns, radius 2, each reading the others.
    fn three(mut a: Field1, mut b: Field1, mut c: Field1, k: Real) -> (Real, Real, Real) {
        (
            a[0] + k * (b[-2] - 2.0 * a[0] + c[2]),
            b[0] + k * (a[-1] + a[1] - 2.0 * b[0]),
            0.5 * (c[-2] + c[1]) * k - a[0] * b[0] * 0.01,
        )
    }
}

/// A run of `iterations` of system `S` on `backend` from `unknowns`, in exact mode; the
/// unknowns after it and the report.
fn run<S: Stencil<N>, T: Real, const N: usize>(
    solver: Solver<'_, S, T, N>,
    backend: Backend,
    unknowns: &[Grid<T, N>],
    iterations: usize,
) -> (Vec<Grid<T, N>>, Report) {
    let mut grids = unknowns.to_vec();
    let mut refs: Vec<&mut Grid<T, N>> = grids.iter_mut().collect();
    let report = solver.backend(backend).mode(Mode::Exact).max_iterations(iterations).run_system(&mut refs).unwrap();
    (grids, report)
}

/// The in-core schedules compared: plain, tiled, and hierarchical cycles, exact (halo ≥
/// sub · radius, radius ≤ 2 here) and inexact; every unknown's working region twice fits a
/// block's shared memory in 3-D and f64.
fn in_core() -> Vec<Schedule> {
    let hierarchical = [(6, 6, 3), (6, 2, 3)].map(|(tile, halo, sub)| Schedule::Hierarchical { tile, halo, sub });
    [Schedule::Plain, Schedule::Tiled].into_iter().chain(hierarchical).collect()
}

/// Out-of-core slabs of every inner kind, several per grid: pyramids of plain iterations,
/// skewed slabs, slabs of exact cycles (hierarchical and streaming).
fn out_of_core() -> Vec<Schedule> {
    let slabs = |inner| Schedule::OutOfCore { slab: Some(4), height: 3, inner, device_memory: None };
    let (hierarchical, streaming) =
        (Inner::Hierarchical { tile: 6, halo: 6, sub: 3 }, Inner::Streaming { tile: 6, sub: 3 });
    vec![slabs(Inner::Plain), slabs(Inner::Skewed), slabs(hierarchical), slabs(streaming)]
}

/// The combinations of conditions and `schedules` under which the GPU's unknowns differ from
/// the CPU's; `solver` builds the run.
fn compare<'s, S: Stencil<N>, T: Real, const N: usize>(
    solver: impl Fn() -> Solver<'s, S, T, N>,
    unknowns: &[Grid<T, N>],
    iterations: usize,
    schedules: &[Schedule],
) -> Vec<String> {
    let mut wrong = Vec::new();
    let runs = schedules.iter().flat_map(|&s| boundary_combinations::<N>().into_iter().map(move |b| (s, b)));
    for (schedule, b) in runs {
        {
            let on = |backend| run(solver().schedule(schedule).boundaries(b), backend, unknowns, iterations);
            let ((cpu, cpu_report), (gpu, gpu_report)) = (on(Backend::Cpu), on(Backend::Cuda { device: 0 }));
            for (k, (c, g)) in cpu.iter().zip(&gpu).enumerate() {
                let differ = differing(c, g);
                if differ > 0 {
                    wrong.push(format!("{} {b} {schedule} {}: unknown {k}, {differ} points", S::META.name, T::NAME));
                }
            }
            // L∞ is a maximum, the same on both; L2 a sum whose order differs (per block on
            // the GPU), equal to rounding.
            let same = |c: &stencil::ResidualSample, g: &stencil::ResidualSample| {
                c.iteration == g.iteration && c.max == g.max && (c.l2 - g.l2).abs() <= 1e-12 * c.l2
            };
            let (c, g) = (&cpu_report.residuals, &gpu_report.residuals);
            if c.len() != g.len() || !c.iter().zip(g).all(|(c, g)| same(c, g)) {
                wrong.push(format!(
                    "{} {b} {schedule}: residuals {:?} and {:?}",
                    S::META.name,
                    cpu_report.residuals,
                    gpu_report.residuals
                ));
            }
        }
    }
    wrong
}

fn gray_scott<T: Real>() -> GrayScottParams<T> {
    let t = T::from_f64;
    GrayScottParams { du: t(0.16), dv: t(0.08), feed: t(0.035), kill: t(0.065), dt: t(1.0) }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn systems_equal_the_cpu_twin_for_every_combination() {
    require_gpu();
    let mut wrong = Vec::new();
    let gs = |shape, seed| [random::<f32, 2>(shape, seed), random::<f32, 2>(shape, seed + 1)];
    let solver = || Solver::new(GrayScott).params(gray_scott::<f32>()).check_every(2);
    wrong.extend(compare(solver, &gs([37, 131], 1), 5, &in_core()));
    let solver = || Solver::new(GrayScott).params(gray_scott::<f64>()).check_every(3);
    let unknowns = [random::<f64, 2>([29, 70], 3), random::<f64, 2>([29, 70], 4)];
    wrong.extend(compare(solver, &unknowns, 6, &in_core()));
    let s = random::<f64, 3>([11, 9, 35], 5);
    let solver = || Solver::new(Wave).input("s", &s).params(WaveParams { c: 0.1 }).check_every(2);
    let unknowns = [random::<f64, 3>([11, 9, 35], 6), random::<f64, 3>([11, 9, 35], 7)];
    wrong.extend(compare(solver, &unknowns, 4, &in_core()));
    let s = random::<f32, 3>([7, 12, 40], 8);
    let solver = || Solver::new(Wave).input("s", &s).params(WaveParams { c: 0.1 });
    let unknowns = [random::<f32, 3>([7, 12, 40], 9), random::<f32, 3>([7, 12, 40], 10)];
    wrong.extend(compare(solver, &unknowns, 3, &in_core()));
    let solver = || Solver::new(Three).params(ThreeParams { k: 0.3 }).check_every(2);
    let unknowns = [11, 12, 13].map(|seed| random::<f64, 1>([300], seed));
    wrong.extend(compare(solver, &unknowns, 7, &in_core()));
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Out-of-core slabs of systems: every unknown's chunks, carries and write-backs, with a
/// read-only field between two unknowns (`wave`), for every combination of conditions.
#[test]
#[ignore = "needs a CUDA GPU"]
fn out_of_core_systems_equal_the_cpu_twin() {
    require_gpu();
    let mut wrong = Vec::new();
    let solver = || Solver::new(GrayScott).params(gray_scott::<f32>()).check_every(2);
    // As in core: random starts stay finite for 5 iterations.
    let unknowns = [random::<f32, 2>([37, 131], 1), random::<f32, 2>([37, 131], 2)];
    wrong.extend(compare(solver, &unknowns, 5, &out_of_core()));
    let s = random::<f64, 3>([17, 9, 35], 43);
    let solver = || Solver::new(Wave).input("s", &s).params(WaveParams { c: 0.1 }).check_every(3);
    let unknowns = [random::<f64, 3>([17, 9, 35], 44), random::<f64, 3>([17, 9, 35], 45)];
    wrong.extend(compare(solver, &unknowns, 5, &out_of_core()));
    let solver = || Solver::new(Three).params(ThreeParams { k: 0.3 }).check_every(2);
    let unknowns = [46, 47, 48].map(|seed| random::<f64, 1>([300], seed));
    wrong.extend(compare(solver, &unknowns, 7, &out_of_core()));
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// A small case of the cycle kernel alone (for the sanitizers): Gray–Scott with tiles that
/// leave partial tiles at the grid's edges, exact and inexact, periodic across one axis and
/// between Neumann walls on the other; and exact cycles in out-of-core slabs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn hierarchical_system_cycles_equal_the_cpu_twin() {
    require_gpu();
    let unknowns = [random::<f32, 2>([21, 45], 31), random::<f32, 2>([21, 45], 32)];
    let mut wrong = Vec::new();
    let walls = stencil::Boundaries::all(stencil::Boundary::Periodic).axis(0, stencil::Boundary::Neumann);
    let in_slabs = Inner::Hierarchical { tile: 8, halo: 3, sub: 3 };
    let slabs = Schedule::OutOfCore { slab: Some(5), height: 4, inner: in_slabs, device_memory: None };
    let cycles = [(8, 3, 3), (8, 1, 3), (5, 2, 2)].map(|(tile, halo, sub)| Schedule::Hierarchical { tile, halo, sub });
    for schedule in cycles.into_iter().chain([slabs]) {
        let on = |backend| {
            let solver = Solver::new(GrayScott).params(gray_scott::<f32>()).schedule(schedule).boundaries(walls);
            run(solver, backend, &unknowns, 7).0
        };
        let (cpu, gpu) = (on(Backend::Cpu), on(Backend::Cuda { device: 0 }));
        for (k, (c, g)) in cpu.iter().zip(&gpu).enumerate() {
            if differing(c, g) > 0 {
                wrong.push(format!("{schedule}: unknown {k}, {} points", differing(c, g)));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_gpu_observer_sees_every_unknown_as_the_cpu_does() {
    require_gpu();
    // Near u = 1, v = 0, where the reaction stays bounded.
    let noise = random::<f64, 2>([40, 50], 21);
    let u0 = Grid::from_fn([40, 50], |[i, j]| 1.0 - 0.25 * noise[[i, j]].abs()).unwrap();
    let v0 = Grid::from_fn([40, 50], |[i, j]| 0.25 * noise[[j % 40, i]].abs()).unwrap();
    let unknowns = [u0, v0];
    let watch = |backend| {
        let mut seen = Vec::new();
        let mut grids = unknowns.clone();
        let [u, v] = &mut grids;
        Solver::new(GrayScott)
            .params(gray_scott())
            .boundaries(stencil::Boundary::Periodic)
            .backend(backend)
            .schedule(Schedule::Tiled)
            .mode(Mode::Exact)
            .max_iterations(9)
            .observe_all(4, |iteration, grids| seen.push((iteration, grids[0].clone(), grids[1].clone())))
            .run_system(&mut [u, v])
            .unwrap();
        (seen, grids)
    };
    let (cpu, gpu) = (watch(Backend::Cpu), watch(Backend::Cuda { device: 0 }));
    assert_eq!(gpu.0.iter().map(|s| s.0).collect::<Vec<_>>(), [4, 8]);
    assert_eq!(cpu.0, gpu.0);
    assert_eq!(cpu.1, gpu.1);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_gpu_checkpoint_of_a_system_resumes_to_the_cpu_result() {
    require_gpu();
    let noise = random::<f64, 2>([30, 36], 22);
    let u0 = Grid::from_fn([30, 36], |[i, j]| 1.0 - 0.25 * noise[[i, j]].abs()).unwrap();
    let v0 = Grid::from_fn([30, 36], |[i, j]| 0.25 * noise[[29 - i, j]].abs()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gray-scott.npz");
    let slabs = Schedule::OutOfCore { slab: Some(5), height: 3, inner: Inner::Plain, device_memory: None };
    for schedule in [Schedule::Plain, Schedule::Hierarchical { tile: 8, halo: 4, sub: 4 }, slabs] {
        let solver = |backend, limit| {
            Solver::new(GrayScott)
                .params(gray_scott())
                .boundaries(stencil::Boundary::Neumann)
                .backend(backend)
                .schedule(schedule)
                .mode(Mode::Exact)
                .max_iterations(limit)
                .checkpoint(Checkpoint::every(4, &path).resume())
        };
        let _ = std::fs::remove_file(&path);
        let gpu = Backend::Cuda { device: 0 };
        let (mut u, mut v) = (u0.clone(), v0.clone());
        // Stopped after 10 iterations, the GPU run has written iterate 8 of both unknowns.
        solver(gpu, 10).run_system(&mut [&mut u, &mut v]).unwrap();
        let saved = Checkpoint::read::<f64, 2>(&path).unwrap();
        assert_eq!((saved.iteration, saved.more.len()), (8, 1), "{schedule}");
        let (mut u, mut v) = (u0.clone(), v0.clone());
        let report = solver(gpu, 16).run_system(&mut [&mut u, &mut v]).unwrap();
        assert_eq!(report.resumed_at, Some(8), "{schedule}");
        let _ = std::fs::remove_file(&path);
        let (mut x, mut y) = (u0.clone(), v0.clone());
        solver(Backend::Cpu, 16).run_system(&mut [&mut x, &mut y]).unwrap();
        assert_eq!((differing(&u, &x), differing(&v, &y)), (0, 0), "{schedule}");
    }
}
