//! The GPU wavefront against the CPU's sequential sweep in declared order, bit for bit in
//! exact mode: the alternate-triangular half-steps, a 9-point sweep (hyperplane (2, 1),
//! skewed tiles), descending directions, 3-D with diagonal and radius-2 reads, and 1-D;
//! tiles of 1 lane to more than the grid, prime sizes, f32 and f64, pencils shifted onto
//! sectors, fields read only at the point staged without a halo, windows asked for; the lane
//! kernel (2-D sweeps on the antidiagonal) and the pencil kernel both. Needs a GPU: the tests
//! are ignored unless asked for (`cargo test -- --include-ignored`, as `.gpu/run-tests`
//! does), and then fail without one.

use stencil::builtin::{AtHalf1, AtHalf2, alternate_triangular};
use stencil::cuda::{CudaOptions, Mode, WavefrontKernel};
use stencil::prelude::*;
use stencil::{Norm, Report, Tolerance};

mod common;
use common::{differing, random, require_gpu};

stencil! {
    /// The 9-point Gauss–Seidel sweep: its reads (−1, +1) earlier and (+1, −1) later rule out
    /// the hyperplane (1, 1), so tiles are skewed.
    sweep(+, +) fn gs9(mut u: Field2, f: Field2, h2: Real) -> Real {
        (4.0 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]) + u[-1, -1] + u[-1, 1] + u[1, -1] + u[1, 1]
            + 6.0 * h2 * f[0, 0]) / 20.0
    }

    /// Both axes descending.
    sweep(-, -) fn back5(mut u: Field2, f: Field2) -> Real {
        (u[-1, 0] + 0.5 * u[1, 0] + u[0, -1] + 0.75 * u[0, 1] + f[0, 0]) / 3.5
    }

    /// 3-D, mixed directions, diagonal and radius-2 reads.
    sweep(-, +, -) fn diag3(mut u: Field3, f: Field3) -> Real {
        (u[1, -1, 0] + u[-1, 1, 0] + u[0, 0, 2] + u[0, 0, -2] + u[0, 1, -1] + u[0, -1, 1]
            + u[-1, 0, 0] + u[1, 0, 0] + u[1, 1, 0] + u[-1, -1, 0] + f[0, 0, 0]) / 10.25
    }

    /// Gauss–Seidel for the 7-point Laplacian.
    sweep(+, +, +) fn gs7(mut u: Field3, f: Field3, h2: Real) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1] + h2 * f[0, 0, 0]) / 6.0
    }

    /// The lane kernel's reach: radius 2 along the walk, the line before at rows −1 and 0, the
    /// line after at rows 0 and 1, a read-only field on the lines on either side.
    sweep(+, +) fn reach2(mut u: Field2, f: Field2) -> Real {
        (u[-1, 0] + 0.5 * u[-2, 0] + u[0, -1] + 0.25 * u[-1, -1] + 0.75 * u[1, 0] + 0.125 * u[2, 0] + u[0, 1]
            + 0.5 * u[1, 1] + f[-1, 1] + 0.5 * f[1, -1] + f[0, 0] + 0.25 * f[2, 0]) / 7.5
    }

    /// The lane kernel walking down: the line before two rows back, two read-only fields, a
    /// division by a field.
    sweep(-, +) fn reach_back(mut u: Field2, k: Field2, f: Field2, w: Real) -> Real {
        (u[1, 0] + w * u[2, -1] + u[0, -1] + k[0, 0] * u[-1, 0] + 0.5 * u[-1, 1] + u[0, 1] + f[1, 1] + k[-1, -1])
            / (3.0 + w + k[0, 0])
    }

    /// Lines on their own: no reach across them (radius 0 on axis 1).
    sweep(+, -) fn lines_apart(mut u: Field2, f: Field2) -> Real {
        (u[-1, 0] + 0.5 * u[1, 0] + f[0, 0]) / 2.5
    }

    /// Not affine in its new reads (their product): fast mode's lane kernel runs the point
    /// function as it is.
    sweep(+, +) fn product(mut u: Field2, f: Field2) -> Real {
        (u[-1, 0] * u[0, -1] + u[1, 0] + u[0, 1] + f[0, 0]) / 4.5
    }

    /// 3-D, the contiguous axis descending with radius-2 reads and no skew: the pencils'
    /// origin on it depends on the grid's length.
    sweep(+, -, -) fn back7(mut u: Field3, f: Field3) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0] + 0.5 * u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + 0.25 * u[0, 0, 2]
            + u[0, 0, 1] + 0.75 * u[0, 0, -2] + f[0, 0, 0]) / 6.5
    }

    /// Read-only fields read only at the point (`f`, `g`, staged without a halo) declared
    /// around one read at offsets (`k`, staged with the unknown's halo).
    sweep(+, -, +) fn mixed7(mut u: Field3, f: Field3, k: Field3, g: Field3) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0] + k[0, 0, 0] * u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + 0.5 * u[0, 0, 1]
            + 0.25 * k[1, -1, 0] + k[0, 0, -1] + f[0, 0, 0] * g[0, 0, 0]) / 7.25
    }

    /// A 1-D sweep of radius 2, descending.
    sweep(-) fn line(mut u: Field1, f: Field1) -> Real {
        (u[1] + u[-1] + 0.5 * u[2] + 0.25 * u[-2] + f[0]) / 2.8
    }
}

/// How the GPU sweeps: a schedule, the kernel asked for (the lane kernel where the stencil
/// has one, or the pencils) and the lines a lane of the lane kernel owns (`None`: the mode's
/// default).
type GpuRun = (Schedule, WavefrontKernel, Option<u32>);

/// `sweeps` sweeps from the same start on the CPU (sequential, declared order) and on the
/// GPU with `gpu`, exact mode; returns how many points differ.
fn compare<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    inputs: &[&str],
    params: &[(&str, f64)],
    gpu: GpuRun,
    sweeps: usize,
) -> usize {
    compare_with::<S, T, N>(stencil, shape, inputs, params, gpu, CudaOptions::default(), sweeps)
}

/// The same with `options` (in exact mode) beside the run's kernel and lines.
fn compare_with<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    inputs: &[&str],
    params: &[(&str, f64)],
    gpu: GpuRun,
    options: CudaOptions,
    sweeps: usize,
) -> usize {
    let options = CudaOptions { mode: Mode::Exact, ..options };
    let (cpu, gpu) = sweep_both::<S, T, N>(stencil, shape, inputs, params, gpu, options, sweeps);
    differing(&cpu, &gpu)
}

/// The same in fast mode on the GPU: the largest difference from the CPU's sweep, relative
/// to the largest value.
fn fast_error<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    inputs: &[&str],
    params: &[(&str, f64)],
    lanes: GpuRun,
    sweeps: usize,
) -> f64 {
    let options = CudaOptions { mode: Mode::Fast, ..CudaOptions::default() };
    let (cpu, gpu) = sweep_both::<S, T, N>(stencil, shape, inputs, params, lanes, options, sweeps);
    let (cpu, gpu) = (cpu.as_slice(), gpu.as_slice());
    let largest = cpu.iter().fold(0.0f64, |m, x| m.max(x.to_f64().abs()));
    let error = cpu.iter().zip(gpu).fold(0.0f64, |m, (x, y)| m.max((x.to_f64() - y.to_f64()).abs()));
    error / largest
}

/// `sweeps` sweeps from the same start on the CPU (sequential, declared order) and on the
/// GPU with `gpu` and `options`: both results.
fn sweep_both<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    inputs: &[&str],
    params: &[(&str, f64)],
    gpu: GpuRun,
    options: CudaOptions,
    sweeps: usize,
) -> (Grid<T, N>, Grid<T, N>) {
    let fields: Vec<Grid<T, N>> = (0..inputs.len()).map(|i| random::<T, N>(shape, 2 + i as u64)).collect();
    let run = |backend, (schedule, wavefront_kernel, lane_lines): GpuRun| {
        let mut u = random::<T, N>(shape, 1);
        let options = CudaOptions { wavefront_kernel, lane_lines, ..options };
        let mut solver = Solver::new(stencil).backend(backend).schedule(schedule).cuda(options).max_iterations(sweeps);
        for (name, field) in inputs.iter().zip(&fields) {
            solver = solver.input(name, field);
        }
        for (name, value) in params {
            solver = solver.param(name, *value);
        }
        solver.run(&mut u).unwrap();
        u
    };
    (run(Backend::Cpu, (Schedule::Plain, WavefrontKernel::Auto, None)), run(Backend::Cuda { device: 0 }, gpu))
}

/// The pencil kernel with each of `tiles` and the default tile, then the default kernel (the
/// lane kernel where the stencil has one; its launch has no tile) with each of the lines a
/// lane may own.
fn tiles(tiles: &[usize]) -> impl Iterator<Item = GpuRun> + '_ {
    let pencils = tiles.iter().map(|&tile| Schedule::Wavefront { tile }).chain([Schedule::Plain]);
    pencils.map(|s| (s, WavefrontKernel::Pencils, None)).chain(LANE_LINES)
}

/// The lane kernel with one and with two lines a lane (where two do not fit in shared
/// memory, as in double precision with two windows, a lane owns one).
const LANE_LINES: [GpuRun; 2] =
    [(Schedule::Plain, WavefrontKernel::Auto, Some(1)), (Schedule::Plain, WavefrontKernel::Auto, Some(2))];

#[test]
#[ignore = "needs a CUDA GPU"]
fn alternate_triangular_half_steps_equal_the_sequential_sweep() {
    require_gpu();
    let p = alternate_triangular::<f64>(0.002, 1.0, -0.5, 0.5, 0.0, 0.1, 0.1).unwrap();
    let params = [("tau", p.tau), ("a_w", p.a_w), ("a_e", p.a_e), ("a_s", p.a_s), ("a_n", p.a_n), ("sigma", 0.0)];
    for shape in [[37, 53], [5, 5], [101, 7], [3, 200], [130, 97]] {
        for schedule in tiles(&[1, 3, 4, 16, 32, 64]) {
            let what = format!("{shape:?} {schedule:?}");
            assert_eq!(compare::<_, f32, 2>(AtHalf1, shape, &["q"], &params, schedule, 3), 0, "at_half1 f32 {what}");
            assert_eq!(compare::<_, f64, 2>(AtHalf2, shape, &["q"], &params, schedule, 3), 0, "at_half2 f64 {what}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nine_point_and_descending_sweeps_equal_the_sequential_sweep() {
    require_gpu();
    for shape in [[41, 29], [4, 4], [67, 3], [96, 128]] {
        for schedule in tiles(&[1, 2, 5, 32, 64]) {
            let what = format!("{shape:?} {schedule:?}");
            assert_eq!(compare::<_, f32, 2>(Gs9, shape, &["f"], &[("h2", 0.01)], schedule, 2), 0, "gs9 f32 {what}");
            assert_eq!(compare::<_, f64, 2>(Gs9, shape, &["f"], &[("h2", 0.01)], schedule, 2), 0, "gs9 f64 {what}");
            assert_eq!(compare::<_, f32, 2>(Back5, shape, &["f"], &[], schedule, 2), 0, "back5 f32 {what}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn three_and_one_dimensional_sweeps_equal_the_sequential_sweep() {
    require_gpu();
    for shape in [[13, 11, 17], [6, 7, 8], [23, 5, 31]] {
        for schedule in tiles(&[1, 2, 3, 8]) {
            let what = format!("{shape:?} {schedule:?}");
            assert_eq!(compare::<_, f64, 3>(Diag3, shape, &["f"], &[], schedule, 2), 0, "diag3 f64 {what}");
            assert_eq!(compare::<_, f32, 3>(Gs7, shape, &["f"], &[("h2", 0.01)], schedule, 2), 0, "gs7 f32 {what}");
        }
        let tile16 = (Schedule::Wavefront { tile: 16 }, WavefrontKernel::Pencils, None);
        assert_eq!(
            compare::<_, f32, 3>(Gs7, shape, &["f"], &[("h2", 0.01)], tile16, 2),
            0,
            "gs7 f32 {shape:?} tile 16"
        );
    }
    for shape in [[5], [97], [1000]] {
        for schedule in tiles(&[1, 7]) {
            assert_eq!(compare::<_, f64, 1>(Line, shape, &["f"], &[], schedule, 3), 0, "line {shape:?} {schedule:?}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn lane_kernel_equals_the_sequential_sweep_across_warps_blocks_and_rings() {
    require_gpu();
    // Lines: fewer than a warp, several blocks of 32 or 64 (each hands its last line to the
    // next), more blocks than the device holds at once; rows: fewer than a group, more than
    // the window's and the line-before's rings.
    for (shape, lanes) in [[5, 3], [9, 40], [600, 130], [70, 1000], [300, 333], [20, 40_000]]
        .into_iter()
        .flat_map(|shape| LANE_LINES.map(|lanes| (shape, lanes)))
    {
        let w = [("w", 0.75)];
        assert_eq!(compare::<_, f32, 2>(Reach2, shape, &["f"], &[], lanes, 2), 0, "reach2 f32 {shape:?} {lanes:?}");
        assert_eq!(compare::<_, f64, 2>(Reach2, shape, &["f"], &[], lanes, 2), 0, "reach2 f64 {shape:?} {lanes:?}");
        assert_eq!(
            compare::<_, f32, 2>(ReachBack, shape, &["k", "f"], &w, lanes, 2),
            0,
            "reach_back f32 {shape:?} {lanes:?}"
        );
        assert_eq!(
            compare::<_, f64, 2>(ReachBack, shape, &["k", "f"], &w, lanes, 2),
            0,
            "reach_back f64 {shape:?} {lanes:?}"
        );
        assert_eq!(
            compare::<_, f32, 2>(LinesApart, shape, &["f"], &[], lanes, 3),
            0,
            "lines_apart f32 {shape:?} {lanes:?}"
        );
    }
}

/// Fast mode's lane kernel, which takes a point function affine in a step's new reads as its
/// value at zero plus their slopes (and any other as it is), within rounding of the sequential
/// sweep: a wrong slope would be off by the values themselves.
#[test]
#[ignore = "needs a CUDA GPU"]
fn fast_lane_kernel_is_within_rounding_of_the_sequential_sweep() {
    require_gpu();
    let p = alternate_triangular::<f64>(0.002, 1.0, -0.5, 0.5, 0.0, 0.1, 0.1).unwrap();
    let at = [("tau", p.tau), ("a_w", p.a_w), ("a_e", p.a_e), ("a_s", p.a_s), ("a_n", p.a_n), ("sigma", 0.0)];
    let w = [("w", 0.75)];
    for (shape, lanes) in
        [[37, 53], [300, 333], [70, 1000]].into_iter().flat_map(|shape| LANE_LINES.map(|lanes| (shape, lanes)))
    {
        let errors = [
            ("at_half1 f32", fast_error::<_, f32, 2>(AtHalf1, shape, &["q"], &at, lanes, 3), 1e-5),
            ("at_half2 f64", fast_error::<_, f64, 2>(AtHalf2, shape, &["q"], &at, lanes, 3), 1e-13),
            ("reach2 f32", fast_error::<_, f32, 2>(Reach2, shape, &["f"], &[], lanes, 2), 1e-5),
            ("reach_back f32", fast_error::<_, f32, 2>(ReachBack, shape, &["k", "f"], &w, lanes, 2), 1e-5),
            ("reach_back f64", fast_error::<_, f64, 2>(ReachBack, shape, &["k", "f"], &w, lanes, 2), 1e-13),
            ("product f32", fast_error::<_, f32, 2>(Product, shape, &["f"], &[], lanes, 2), 1e-5),
        ];
        for (what, error, bound) in errors {
            assert!(error <= bound, "{what} {shape:?} {lanes:?}: {error:e} of the largest value, more than {bound:e}");
        }
    }
}

/// Sweeps between two checks overlap in launches of the pencil kernel (up to 16 a launch,
/// each sweep's pencils following the sweep before's): the values are those of one sweep
/// after another, across launches too, for windows that reach one pencil on and, at a tile of
/// 1 lane with radius-2 reads, several.
#[test]
#[ignore = "needs a CUDA GPU"]
fn overlapped_sweeps_equal_one_sweep_after_another() {
    require_gpu();
    let pencils = |tile| (Schedule::Wavefront { tile }, WavefrontKernel::Pencils, None);
    for tile in [1, 4, 16] {
        let differ = compare::<_, f32, 3>(Gs7, [27, 22, 35], &["f"], &[("h2", 0.01)], pencils(tile), 21);
        assert_eq!(differ, 0, "gs7 f32 tile {tile}");
    }
    for tile in [1, 2, 3] {
        assert_eq!(compare::<_, f64, 2>(Reach2, [29, 41], &["f"], &[], pencils(tile), 18), 0, "reach2 tile {tile}");
        assert_eq!(compare::<_, f64, 3>(Diag3, [11, 13, 9], &["f"], &[], pencils(tile), 17), 0, "diag3 tile {tile}");
        assert_eq!(compare::<_, f64, 1>(Line, [300], &["f"], &[], pencils(tile), 19), 0, "line tile {tile}");
    }
}

/// Pencils shifted so that their rows start on 32-byte sectors (tiles spanning whole sectors
/// on an unskewed contiguous axis): ascending and descending, radius 1 and 2, every residue of
/// the grid's length, 2-D and 3-D, f32 and f64, one sweep and overlapped ones.
#[test]
#[ignore = "needs a CUDA GPU"]
fn pencils_shifted_onto_sectors_equal_the_sequential_sweep() {
    require_gpu();
    let pencils = |tile| (Schedule::Wavefront { tile }, WavefrontKernel::Pencils, None);
    for n in 33..41 {
        for tile in [8, 16] {
            let what = format!("{n} tile {tile}");
            assert_eq!(compare::<_, f32, 3>(Back7, [9, 11, n], &["f"], &[], pencils(tile), 3), 0, "back7 f32 {what}");
            assert_eq!(compare::<_, f64, 3>(Back7, [7, 6, n], &["f"], &[], pencils(tile), 18), 0, "back7 f64 {what}");
            let gs7 = compare::<_, f32, 3>(Gs7, [10, 9, n], &["f"], &[("h2", 0.01)], pencils(tile), 17);
            assert_eq!(gs7, 0, "gs7 f32 {what}");
            assert_eq!(compare::<_, f64, 2>(Back5, [13, 3 * n], &["f"], &[], pencils(tile), 2), 0, "back5 f64 {what}");
            assert_eq!(
                compare::<_, f32, 2>(Reach2, [12, 2 * n], &["f"], &[], pencils(tile), 17),
                0,
                "reach2 f32 {what}"
            );
        }
    }
}

/// Fields read only at the point staged in windows without a halo, after a field read at
/// offsets: f32 and f64, tiles from 1 lane to 16 in f32 and 12 in f64 (the largest whose four
/// windows fit; both shifted onto sectors), one sweep and overlapped ones.
#[test]
#[ignore = "needs a CUDA GPU"]
fn fields_read_at_the_point_alone_equal_the_sequential_sweep() {
    require_gpu();
    let pencils = |tile| (Schedule::Wavefront { tile }, WavefrontKernel::Pencils, None);
    let fields = ["f", "k", "g"];
    for (f32_tile, f64_tile) in [(1, 1), (3, 3), (8, 8), (16, 12)] {
        for (shape, sweeps) in [([9, 12, 37], 1), ([13, 11, 40], 17)] {
            let what = format!("{shape:?}, {sweeps} sweeps");
            let single = compare::<_, f32, 3>(Mixed7, shape, &fields, &[], pencils(f32_tile), sweeps);
            assert_eq!(single, 0, "f32 tile {f32_tile} {what}");
            let double = compare::<_, f64, 3>(Mixed7, shape, &fields, &[], pencils(f64_tile), sweeps);
            assert_eq!(double, 0, "f64 tile {f64_tile} {what}");
        }
    }
}

/// Windows of as many planes as asked for, down to the fewest the lanes read, with chunks
/// chosen (halved until the window is whole chunks) or asked for: f32 at tile 16 and f64 at
/// tile 8, one sweep and overlapped ones.
#[test]
#[ignore = "needs a CUDA GPU"]
fn windows_asked_for_equal_the_sequential_sweep() {
    require_gpu();
    let pencils = |tile| (Schedule::Wavefront { tile }, WavefrontKernel::Pencils, None);
    let staged = |chunk, window| CudaOptions {
        wavefront_chunk: chunk,
        wavefront_window: Some(window),
        ..CudaOptions::default()
    };
    let fields = ["f", "k", "g"];
    for (shape, sweeps) in [([9, 12, 37], 1), ([21, 11, 40], 17)] {
        for (chunk, window) in [(None, 44), (Some(4), 40), (Some(2), 46)] {
            let what = format!("{shape:?}, chunk {chunk:?}, window {window}, {sweeps} sweeps");
            let options = staged(chunk, window);
            let mixed = compare_with::<_, f32, 3>(Mixed7, shape, &fields, &[], pencils(16), options, sweeps);
            assert_eq!(mixed, 0, "mixed7 f32 {what}");
            let gs7 = compare_with::<_, f32, 3>(Gs7, shape, &["f"], &[("h2", 0.01)], pencils(16), options, sweeps);
            assert_eq!(gs7, 0, "gs7 f32 {what}");
        }
        for (chunk, window) in [(None, 32), (Some(2), 26), (None, 40)] {
            let what = format!("{shape:?}, chunk {chunk:?}, window {window}, {sweeps} sweeps");
            let options = staged(chunk, window);
            let mixed = compare_with::<_, f64, 3>(Mixed7, shape, &fields, &[], pencils(8), options, sweeps);
            assert_eq!(mixed, 0, "mixed7 f64 {what}");
        }
    }
}

/// The same stopping iteration and residuals on both backends: ρ is measured by one plain
/// application after the sweep, and ρ(u⁰) before the first for a relative tolerance.
#[test]
#[ignore = "needs a CUDA GPU"]
fn tolerances_stop_at_the_same_sweep() {
    require_gpu();
    let shape = [45, 38];
    let f = random::<f64, 2>(shape, 4);
    let run = |backend| -> (Grid<f64, 2>, Report) {
        let mut u = random::<f64, 2>(shape, 3);
        let report = Solver::new(Gs9)
            .backend(backend)
            .schedule(Schedule::Wavefront { tile: 8 })
            .mode(Mode::Exact)
            .input("f", &f)
            .param("h2", 0.001)
            .tolerance(Tolerance::Relative { norm: Norm::Max, factor: 1e-3 })
            .check_every(4)
            .max_iterations(5000)
            .run(&mut u)
            .unwrap();
        (u, report)
    };
    let (cpu, a) = run(Backend::Cpu);
    let (gpu, b) = run(Backend::Cuda { device: 0 });
    assert_eq!(differing(&cpu, &gpu), 0);
    assert_eq!(a.iterations, b.iterations);
    assert!(a.iterations < 5000, "the tolerance was never met");
    assert_eq!(a.residuals.len(), b.residuals.len());
    for (x, y) in a.residuals.iter().zip(&b.residuals) {
        assert_eq!((x.iteration, x.max), (y.iteration, y.max));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tiles_too_large_for_the_device_are_errors() {
    require_gpu();
    let mut u = random::<f32, 3>([20, 20, 20], 1);
    let f = random::<f32, 3>([20, 20, 20], 2);
    let error = Solver::new(Gs7)
        .backend(Backend::Cuda { device: 0 })
        .schedule(Schedule::Wavefront { tile: 64 })
        .input("f", &f)
        .param("h2", 0.1)
        .max_iterations(1)
        .run(&mut u)
        .unwrap_err();
    assert!(error.to_string().contains("threads per block"), "{error}");
}
