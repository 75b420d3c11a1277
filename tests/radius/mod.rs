//! Offsets of the largest radius, 8, in 1-D, 2-D and 3-D, and in a sweep whose diagonal
//! reads need a steep wavefront and a skew: every schedule computes the plain iteration's
//! values bit for bit (in exact mode on the GPU). Used by `cpu_plain.rs` and `gpu_plain.rs`.
//! The first 3-D stencil reads four fields across the plane, whose planes do not all fit the
//! tiled kernel's shared memory in double (nor its working regions the hierarchical
//! kernel's: that schedule runs on the second, which reads only its unknown).

use stencil::cuda::Mode;
use stencil::prelude::*;

stencil! {
    pub fn wide3(mut u: Field3, a: Field3, b: Field3, c: Field3, d: Field3) -> Real {
        (u[-8, 0, 0] + u[8, 0, 0] + u[0, -8, 0] + u[0, 8, 0] + u[0, 0, -8] + u[0, 0, 8] + u[0, 0, 0]
            + a[0, 8, 0] + b[0, 0, -8] + c[0, -8, 8] + d[0, 8, -8]) / 11.0
    }

    /// The unknown alone: its working regions fit the GPU's shared memory.
    pub fn alone3(mut u: Field3) -> Real {
        (u[-8, 0, 0] + u[8, 0, 0] + u[0, -8, 8] + u[0, 8, -8] + u[-1, 1, 1] + u[0, 0, 0]) / 6.0
    }

    pub fn wide2(mut u: Field2, f: Field2) -> Real {
        (u[-8, 0] + u[8, 0] + u[0, -8] + u[0, 8] + u[-1, 1] + f[8, -8]) / 6.0
    }

    pub fn wide1(mut u: Field1, f: Field1) -> Real {
        (u[-8] + u[8] + u[-1] + u[1] + f[-8]) / 5.0
    }

    /// A sweep along axis 0 ascending and axis 1 descending, radius 8 on both.
    pub sweep(+, -) fn sweep8(mut u: Field2, f: Field2) -> Real {
        (u[-8, 0] + u[8, 0] + u[0, -8] + u[0, 8] + u[-1, -1] + f[8, -8]) / 6.0
    }

    /// Earlier reads (−1, 8) and (0, −8), later ones (1, −8) and (0, 8): the wavefront is
    /// t = 9·x₀ + x₁ and tiles are skewed by 8.
    pub sweep(+, +) fn steep(mut u: Field2, f: Field2) -> Real {
        (u[-1, 8] + u[1, -8] + u[0, -8] + u[0, 8] + f[0, 0]) / 5.0
    }
}

/// `iterations` iterations of `stencil` with `schedule` on `backend`, every read-only field
/// given by `inputs`.
fn run<S: Stencil<N>, const N: usize>(
    stencil: S,
    u0: &Grid<f64, N>,
    inputs: &[(&str, &Grid<f64, N>)],
    schedule: Schedule,
    backend: Backend,
) -> Grid<f64, N> {
    let mut u = u0.clone();
    let mut solver = Solver::new(stencil).backend(backend).schedule(schedule).mode(Mode::Exact).max_iterations(3);
    for &(name, grid) in inputs {
        solver = solver.input(name, grid);
    }
    solver.run(&mut u).unwrap_or_else(|e| panic!("{} with {schedule:?} on {backend:?}: {e}", S::META.name));
    u
}

/// Every schedule of `schedules` gives the plain CPU iteration's values on `backend`.
fn same<S: Stencil<N>, const N: usize>(
    stencil: S,
    shape: [usize; N],
    inputs: &[&str],
    schedules: &[Schedule],
    backend: Backend,
) {
    let u0 = Grid::<f64, N>::random_uniform(shape, -1.0, 1.0, 1).unwrap();
    let grids: Vec<Grid<f64, N>> =
        (0..inputs.len()).map(|k| Grid::random_uniform(shape, -1.0, 1.0, 2 + k as u64).unwrap()).collect();
    let inputs: Vec<(&str, &Grid<f64, N>)> = inputs.iter().copied().zip(&grids).collect();
    let plain = run(stencil, &u0, &inputs, Schedule::Plain, Backend::Cpu);
    assert_ne!(plain, u0);
    for &schedule in schedules {
        let u = run(stencil, &u0, &inputs, schedule, backend);
        assert!(u == plain, "{}: {schedule:?} on {backend:?} differs from the plain iteration", S::META.name);
    }
}

/// Every stencil above on every schedule that runs it, on `backend`, against the plain
/// iteration on the CPU.
pub fn every_schedule_equals_plain(backend: Backend) {
    assert_eq!(<Wide3 as Stencil<3>>::META.radius, &[8, 8, 8]);
    let steep = <Steep as Stencil<2>>::META.sweep.unwrap();
    assert_eq!((steep.hyperplane, steep.skew), (&[9, 1][..], &[0, 8][..]));
    let out_of_core = |height| Schedule::OutOfCore { slab: Some(4), height, inner: Inner::Plain, device_memory: None };
    same(Wide3, [20, 19, 40], &["a", "b", "c", "d"], &[Schedule::Plain, Schedule::Tiled, out_of_core(2)], backend);
    same(
        Alone3,
        [20, 19, 40],
        &[],
        &[Schedule::Plain, Schedule::Tiled, Schedule::Hierarchical { tile: 8, halo: 8, sub: 1 }, out_of_core(2)],
        backend,
    );
    same(
        Wide2,
        [41, 37],
        &["f"],
        &[
            Schedule::Plain,
            Schedule::Tiled,
            // A working region of 16 + 2 · 8 columns: the register kernel on the GPU.
            Schedule::Hierarchical { tile: 16, halo: 8, sub: 1 },
            Schedule::Hierarchical { tile: 12, halo: 16, sub: 2 },
            out_of_core(3),
        ],
        backend,
    );
    same(
        Wide1,
        [67],
        &["f"],
        &[Schedule::Plain, Schedule::Tiled, Schedule::Hierarchical { tile: 16, halo: 8, sub: 1 }],
        backend,
    );
    let wavefronts = [Schedule::Plain, Schedule::Wavefront { tile: 4 }, Schedule::Wavefront { tile: 16 }];
    same(Sweep8, [40, 45], &["f"], &wavefronts, backend);
    same(Steep, [23, 45], &["f"], &wavefronts, backend);
}
