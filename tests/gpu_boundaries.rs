//! Periodic and Neumann boundaries on the GPU: the boundary fill kernel and the plain, tiled,
//! hierarchical (exact and inexact, working regions that wrap and mirror) and wavefront runs
//! equal the CPU twin bit for bit in exact mode, for every combination of
//! conditions, in 1-D to 3-D, f32 and f64. Needs a GPU: the tests are ignored unless asked
//! for (`cargo test -- --include-ignored`, as `.gpu/run-tests` does), and then fail without
//! one.

use stencil::Boundary;
use stencil::cuda::{CudaOptions, Mode};
use stencil::prelude::*;

mod common;
use common::{boundary_combinations, differing, random, require_gpu};

stencil! {
    /// Radius 2 on axis 1, an asymmetric update with a diagonal read.
    fn skew2(mut u: Field2, f: Field2) -> Real {
        (u[0, -2] + 2.0 * u[0, -1] + u[0, 1] + u[-1, 0] + u[1, 0] + 0.5 * u[1, -1] + f[0, 0]) / 6.5
    }

    /// 3-D, corner reads.
    fn corner7(mut u: Field3, f: Field3) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1]
            + 0.25 * (u[1, 1, 1] + u[-1, -1, -1]) + f[0, 0, 0]) / 6.5
    }

    /// 1-D, radius 2.
    fn line2(mut u: Field1, f: Field1) -> Real {
        0.2 * (u[-2] + u[-1] + u[0] + u[1] + u[2]) + f[0]
    }

    /// Gauss–Seidel, one axis descending.
    sweep(+, -) fn gs5(mut u: Field2, f: Field2) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + f[0, 0]) / 4.0
    }
}

/// `iterations` from the same start on the CPU and on the GPU with `schedule` under every
/// combination of conditions, exact mode; returns the combinations whose grids differ.
fn compare<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    schedule: Schedule,
    iterations: usize,
) -> Vec<String> {
    let options = CudaOptions { mode: Mode::Exact, ..CudaOptions::default() };
    compare_with::<S, T, N>(stencil, shape, schedule, iterations, options)
}

/// [`compare`] with the GPU's `options` (in exact mode).
fn compare_with<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    schedule: Schedule,
    iterations: usize,
    options: CudaOptions,
) -> Vec<String> {
    let f = random::<T, N>(shape, 2);
    let u0 = random::<T, N>(shape, 1);
    let run = |backend, b: Boundaries<N>| {
        let mut u = u0.clone();
        Solver::new(stencil)
            .input("f", &f)
            .backend(backend)
            .schedule(schedule)
            .boundaries(b)
            .cuda(options)
            .max_iterations(iterations)
            .run(&mut u)
            .unwrap();
        u
    };
    boundary_combinations::<N>()
        .into_iter()
        .filter_map(|b| {
            let (cpu, gpu) = (run(Backend::Cpu, b), run(Backend::Cuda { device: 0 }, b));
            let wrong = differing(&cpu, &gpu);
            (wrong > 0).then(|| {
                let width = options.plain_vector.map_or("default".into(), |w| w.to_string());
                format!("{b} {schedule} {} (vector width {width}): {wrong} points differ", T::NAME)
            })
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn plain_and_tiled_runs_equal_the_cpu_twin_for_every_combination() {
    require_gpu();
    let mut wrong = Vec::new();
    for schedule in [Schedule::Plain, Schedule::Tiled] {
        wrong.extend(compare::<Skew2, f64, 2>(Skew2, [37, 29], schedule, 6));
        wrong.extend(compare::<Skew2, f32, 2>(Skew2, [8, 131], schedule, 5));
        wrong.extend(compare::<Corner7, f64, 3>(Corner7, [11, 9, 35], schedule, 4));
        wrong.extend(compare::<Corner7, f32, 3>(Corner7, [5, 17, 6], schedule, 3));
    }
    wrong.extend(compare::<Line2, f64, 1>(Line2, [1031], Schedule::Plain, 9));
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The plain pass at every vector width, on grids whose contiguous extent each width divides,
/// so that the outer layers' images and the reads past a thread's vector run at widths 2
/// and 4 (the shapes above have odd rows, where every width runs as 1).
#[test]
#[ignore = "needs a CUDA GPU"]
fn plain_passes_of_every_vector_width_equal_the_cpu_twin() {
    require_gpu();
    let mut wrong = Vec::new();
    for width in [1, 2, 4] {
        let options = CudaOptions { mode: Mode::Exact, plain_vector: Some(width), ..CudaOptions::default() };
        wrong.extend(compare_with::<Skew2, f32, 2>(Skew2, [9, 132], Schedule::Plain, 5, options));
        wrong.extend(compare_with::<Corner7, f32, 3>(Corner7, [7, 9, 36], Schedule::Plain, 3, options));
        // Two doubles at most per vector: width 4 runs as 2.
        wrong.extend(compare_with::<Skew2, f64, 2>(Skew2, [11, 68], Schedule::Plain, 4, options));
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn hierarchical_cycles_equal_the_cpu_twin_for_every_combination() {
    require_gpu();
    let hier = |tile, halo, sub| Schedule::Hierarchical { tile, halo, sub };
    let mut wrong = Vec::new();
    // Exact (halo ≥ sub · radius; radius 2 on Skew2's axis 1) and inexact, with partial
    // tiles at the edges, and in 2-D regions that wrap more than once around a narrow axis
    // (on a periodic axis a region is not clipped at the grid: a 3-D one that large would
    // not fit a block's shared memory).
    for schedule in [hier(8, 6, 3), hier(8, 2, 3), hier(40, 9, 4)] {
        wrong.extend(compare::<Skew2, f64, 2>(Skew2, [37, 29], schedule, 7));
        wrong.extend(compare::<Skew2, f32, 2>(Skew2, [8, 131], schedule, 6));
        wrong.extend(compare::<Line2, f64, 1>(Line2, [301], schedule, 9));
    }
    for schedule in [hier(8, 6, 3), hier(8, 2, 3)] {
        wrong.extend(compare::<Corner7, f32, 3>(Corner7, [11, 9, 35], schedule, 4));
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn out_of_core_passes_equal_the_cpu_twin_for_every_combination() {
    require_gpu();
    let slabs = |slab, height, inner| Schedule::OutOfCore { slab: Some(slab), height, inner, device_memory: None };
    let mut wrong = Vec::new();
    let cycles = Inner::Hierarchical { tile: 8, halo: 6, sub: 3 };
    let streaming = Inner::Streaming { tile: 8, sub: 3 };
    for schedule in [slabs(5, 3, Inner::Plain), slabs(4, 4, Inner::Skewed), slabs(6, 5, cycles), slabs(6, 7, streaming)]
    {
        wrong.extend(compare::<Skew2, f64, 2>(Skew2, [37, 29], schedule, 7));
        wrong.extend(compare::<Corner7, f32, 3>(Corner7, [17, 9, 35], schedule, 5));
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wavefront_sweeps_equal_the_cpu_twin_for_every_combination() {
    require_gpu();
    let mut wrong = compare::<Gs5, f64, 2>(Gs5, [41, 23], Schedule::Wavefront { tile: 8 }, 4);
    wrong.extend(compare::<Gs5, f32, 2>(Gs5, [9, 67], Schedule::Plain, 3));
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Every 5th iterate of a GPU run, as its observer sees it (copied from the device at those
/// iterations only, outer layers filled), equals the CPU twin's, on the schedules whose
/// cycles end at checked iterations.
#[test]
#[ignore = "needs a CUDA GPU"]
fn observed_iterates_equal_the_cpu_twins() {
    require_gpu();
    let (f, u0) = (random::<f64, 2>([37, 29], 2), random::<f64, 2>([37, 29], 1));
    let periodic = Boundaries::<2>::default().axis(1, Boundary::Periodic);
    let watch = |backend, schedule: Schedule, boundaries: Boundaries<2>| {
        let (mut u, mut seen) = (u0.clone(), Vec::new());
        Solver::new(Skew2)
            .input("f", &f)
            .backend(backend)
            .schedule(schedule)
            .boundaries(boundaries)
            .mode(Mode::Exact)
            .max_iterations(17)
            .observe(5, |k, v: &Grid<f64, 2>| seen.push((k, v.clone())))
            .run(&mut u)
            .unwrap();
        seen.push((17, u));
        seen
    };
    let cases = [
        (Schedule::Plain, periodic),
        (Schedule::Tiled, periodic),
        (Schedule::Hierarchical { tile: 8, halo: 6, sub: 3 }, Boundaries::default()),
        (Schedule::Hierarchical { tile: 8, halo: 6, sub: 3 }, periodic.axis(0, Boundary::Neumann)),
        (Schedule::OutOfCore { slab: Some(5), height: 4, inner: Inner::Skewed, device_memory: None }, periodic),
    ];
    for (schedule, boundaries) in cases {
        let cpu = watch(Backend::Cpu, schedule, boundaries);
        let gpu = watch(Backend::Cuda { device: 0 }, schedule, boundaries);
        assert_eq!(gpu.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [5, 10, 15, 17], "{schedule}");
        for ((k, c), (_, g)) in cpu.iter().zip(&gpu) {
            assert_eq!(differing(c, g), 0, "{schedule} {boundaries}: iterate {k}");
        }
    }
}
