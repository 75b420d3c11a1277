//! The CUDA backend against the CPU twin: bit for bit in exact mode, within a stated
//! tolerance in fast mode, for f32 and f64, 1-D/2-D/3-D, prime sizes and sizes smaller
//! than one tile. Needs a GPU: the tests are ignored unless asked for
//! (`cargo test -- --include-ignored`, as `.gpu/run-tests` does), and then fail without one.

use stencil::builtin::{Jacobi5, Jacobi7};
use stencil::cuda::Mode;
use stencil::prelude::*;
use stencil::{Error, Report, Residual};

mod common;
use common::{random, require_gpu};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

stencil! {
    /// A user-written radius-2 stencil in 1-D.
    fn wide(mut u: Field1, f: Field1, w: Real) -> Real {
        (u[-2] + u[2] + w * (u[-1] + u[1]) + f[0]) / (2.0 + 2.0 * w)
    }

    /// Radius 2 in 3-D, an i32 parameter, `if`, `let` and `sqrt`.
    fn varied(mut u: Field3, k: Field3, n: i32) -> Real {
        let s = (k[0, 0, 0] * k[0, 0, 0] + 1.0).sqrt();
        let m = if u[0, 0, 0] > 0.0 { u[0, 0, 2] } else { u[0, -2, 0] };
        (u[-1, 0, 0] + u[1, 0, 0] + u[0, 1, 0] + u[0, 0, -1] + m * n + s) / (4.0 + n + s)
    }

    /// A quotient of two fields, for the division's special operands.
    fn quotient(mut u: Field1, a: Field1, b: Field1) -> Real {
        a[0] / b[0]
    }

    /// Transcendental functions, which differ by a few ulps between CUDA and Rust.
    fn smooth(mut u: Field2) -> Real {
        ((u[-1, 0] + u[1, 0]).tanh() + (u[0, -1] * u[0, 1]).exp().ln() + u[0, 0].sin() * u[0, 0].cos()) / 3.0
    }
}

/// Runs `iterations` iterations (checked every 3) on both backends.
fn both<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    shape: [usize; N],
    input: &str,
    params: &[(&str, f64)],
    schedule: Schedule,
    mode: Mode,
) -> (Grid<T, N>, Report, Grid<T, N>, Report) {
    let f = random::<T, N>(shape, 2);
    let run = |backend| {
        let mut u = random::<T, N>(shape, 1);
        let mut solver =
            Solver::new(stencil).backend(backend).schedule(schedule).mode(mode).max_iterations(7).check_every(3);
        if !input.is_empty() {
            solver = solver.input(input, &f);
        }
        for (name, value) in params {
            solver = solver.param(name, *value);
        }
        let report = solver.run(&mut u).unwrap();
        (u, report)
    };
    let (cpu, cpu_report) = run(Backend::Cpu);
    let (gpu, gpu_report) = run(Backend::Cuda { device: 0 });
    (cpu, cpu_report, gpu, gpu_report)
}

fn assert_bitwise<T: Real, const N: usize>(what: &str, cpu: &Grid<T, N>, gpu: &Grid<T, N>, a: &Report, b: &Report) {
    let differing = cpu.as_slice().iter().zip(gpu.as_slice()).filter(|(x, y)| x != y).count();
    assert_eq!(differing, 0, "{what}: {differing} points differ");
    assert_eq!(a.iterations, b.iterations);
    for (x, y) in a.residuals.iter().zip(&b.residuals) {
        assert_eq!(x.max, y.max, "{what}: L∞ residuals differ");
        // Σ(·)² is summed in another order on the GPU.
        assert!((x.l2 - y.l2).abs() <= 1e-12 * x.l2.max(1e-300), "{what}: L2 {} vs {}", x.l2, y.l2);
    }
}

fn max_relative<T: Real, const N: usize>(cpu: &Grid<T, N>, gpu: &Grid<T, N>) -> f64 {
    let scale = cpu.as_slice().iter().map(|v| v.to_f64().abs()).fold(0.0, f64::max).max(1e-300);
    cpu.as_slice().iter().zip(gpu.as_slice()).map(|(x, y)| (x.to_f64() - y.to_f64()).abs()).fold(0.0, f64::max) / scale
}

fn exact_all<T: Real>() {
    for schedule in [Schedule::Plain, Schedule::Tiled] {
        for shape in [[37, 41, 29], [5, 7, 3], [3, 3, 3], [67, 5, 131]] {
            let (c, a, g, b) = both::<_, T, 3>(Jacobi7, shape, "f", &[("h2", 0.01)], schedule, Mode::Exact);
            assert_bitwise(&format!("jacobi7 {} {shape:?} {schedule}", T::NAME), &c, &g, &a, &b);
        }
        for shape in [[131, 257], [3, 3], [7, 1031]] {
            let (c, a, g, b) = both::<_, T, 2>(Jacobi5, shape, "f", &[("h2", 0.01)], schedule, Mode::Exact);
            assert_bitwise(&format!("jacobi5 {} {shape:?} {schedule}", T::NAME), &c, &g, &a, &b);
        }
        for shape in [[1009], [5], [70001]] {
            let (c, a, g, b) = both::<_, T, 1>(Wide, shape, "f", &[("w", 3.0)], schedule, Mode::Exact);
            assert_bitwise(&format!("wide {} {shape:?} {schedule}", T::NAME), &c, &g, &a, &b);
        }
        for shape in [[11, 13, 17], [5, 5, 5]] {
            let (c, a, g, b) = both::<_, T, 3>(Varied, shape, "k", &[("n", 3.0)], schedule, Mode::Exact);
            assert_bitwise(&format!("varied {} {shape:?} {schedule}", T::NAME), &c, &g, &a, &b);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_mode_is_bitwise_f32() {
    require_gpu();
    exact_all::<f32>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_mode_is_bitwise_f64() {
    require_gpu();
    exact_all::<f64>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fast_mode_is_within_rounding() {
    require_gpu();
    for schedule in [Schedule::Plain, Schedule::Tiled] {
        let (c, _, g, _) = both::<_, f32, 3>(Jacobi7, [37, 41, 29], "f", &[("h2", 0.01)], schedule, Mode::Fast);
        let r = max_relative(&c, &g);
        assert!(r < 1e-5, "jacobi7 f32 fast: relative difference {r}");
        let (c, _, g, _) = both::<_, f64, 3>(Varied, [11, 13, 17], "k", &[("n", 3.0)], schedule, Mode::Fast);
        let r = max_relative(&c, &g);
        assert!(r < 1e-13, "varied f64 fast: relative difference {r}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn transcendental_functions_agree_to_a_few_ulps() {
    require_gpu();
    let (c, _, g, _) = both::<_, f64, 2>(Smooth, [45, 51], "", &[], Schedule::Plain, Mode::Exact);
    let r = max_relative(&c, &g);
    assert!(r < 1e-14, "f64: relative difference {r}");
    let (c, _, g, _) = both::<_, f32, 2>(Smooth, [45, 51], "", &[], Schedule::Plain, Mode::Exact);
    let r = max_relative(&c, &g);
    assert!(r < 1e-5, "f32: relative difference {r}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn convergence_takes_the_same_iterations() {
    require_gpu();
    let n = 33;
    let f = Grid::<f64, 3>::filled([n; 3], 1.0).unwrap();
    let run = |backend| {
        let mut u = Grid::<f64, 3>::zeros([n; 3]).unwrap();
        let report = Solver::new(Jacobi7)
            .input("f", &f)
            .param("h2", 1.0 / (32.0 * 32.0))
            .backend(backend)
            .mode(Mode::Exact)
            .tolerance(Tolerance::Relative { norm: Norm::L2, factor: 1e-6 })
            .check_every(10)
            .run(&mut u)
            .unwrap();
        (u, report)
    };
    let (cu, cr) = run(Backend::Cpu);
    let (gu, gr) = run(Backend::Cuda { device: 0 });
    assert_eq!(cr.stop, StopReason::Converged);
    assert_eq!(cr.iterations, gr.iterations);
    assert!(cu.as_slice() == gu.as_slice());
    println!("{gr}");
}

/// The change since the last check (`Residual::SinceLastCheck`) on the GPU against the
/// CPU twin's, exact mode: the same samples at every check, in 1-D, 2-D and 3-D, in core
/// and out of core, f32 and f64; and the first non-finite value where the twin finds it.
fn since_last_check_is_the_twins<T: Real>() {
    fn both<S: Stencil<N>, T: Real, const N: usize>(stencil: S, shape: [usize; N], p: (&str, f64), schedule: Schedule) {
        let (f, u0) = (random::<T, N>(shape, 2), random::<T, N>(shape, 1));
        let run = |backend| {
            let mut u = u0.clone();
            let report = Solver::new(stencil)
                .input("f", &f)
                .param(p.0, p.1)
                .backend(backend)
                .schedule(schedule)
                .mode(Mode::Exact)
                .residual(Residual::SinceLastCheck)
                .tolerance(Tolerance::Absolute { norm: Norm::Max, eps: 0.0 })
                .max_iterations(7)
                .check_every(3)
                .run(&mut u)
                .unwrap();
            assert_eq!(report.residuals.iter().map(|r| r.iteration).collect::<Vec<_>>(), [3, 6, 7]);
            (u, report)
        };
        let ((c, a), (g, b)) = (run(Backend::Cpu), run(Backend::Cuda { device: 0 }));
        assert_bitwise(&format!("{} {} {shape:?} {schedule}", S::META.name, T::NAME), &c, &g, &a, &b);
    }
    let slabs = |slab, height, inner| Schedule::OutOfCore { slab: Some(slab), height, inner, device_memory: None };
    let schedules = [
        Schedule::Plain,
        Schedule::Tiled,
        Schedule::Streaming { tile: 8, sub: 2 },
        slabs(5, 2, Inner::Plain),
        slabs(4, 3, Inner::Skewed),
        slabs(6, 5, Inner::Streaming { tile: 8, sub: 2 }),
        slabs(7, 10, Inner::SkewedStreaming { tile: 8, sub: 2 }),
    ];
    for schedule in schedules {
        both::<_, T, 3>(Jacobi7, [37, 41, 29], ("h2", 0.01), schedule);
        both::<_, T, 2>(Jacobi5, [131, 257], ("h2", 0.01), schedule);
    }
    both::<_, T, 1>(Wide, [1009], ("w", 3.0), Schedule::Plain);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_change_since_the_last_check_is_the_twins() {
    require_gpu();
    since_last_check_is_the_twins::<f32>();
    since_last_check_is_the_twins::<f64>();
    let mut f = Grid::<f32, 2>::filled([9, 9], 0.0).unwrap();
    f[[4, 5]] = f32::INFINITY;
    let run = |backend| {
        let mut u = Grid::<f32, 2>::filled([9, 9], 1.0).unwrap();
        let solver = Solver::new(Jacobi5).input("f", &f).param("h2", 1.0).backend(backend);
        let solver =
            solver.residual(Residual::SinceLastCheck).tolerance(Tolerance::Absolute { norm: Norm::Max, eps: 1e-9 });
        match solver.max_iterations(10).check_every(5).run(&mut u).unwrap_err() {
            Error::NonFinite { iteration, index, .. } => (iteration, index),
            other => panic!("expected NonFinite, got {other}"),
        }
    };
    assert_eq!(run(Backend::Cpu), (5, vec![1, 4]));
    assert_eq!(run(Backend::Cuda { device: 0 }), (5, vec![1, 4]));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn non_finite_values_are_found_where_the_cpu_finds_them() {
    require_gpu();
    let mut f = Grid::<f32, 2>::filled([9, 9], 0.0).unwrap();
    f[[4, 5]] = f32::INFINITY;
    let run = |backend| {
        let mut u = Grid::<f32, 2>::filled([9, 9], 1.0).unwrap();
        let e = Solver::new(Jacobi5)
            .input("f", &f)
            .param("h2", 1.0)
            .backend(backend)
            .max_iterations(10)
            .check_every(5)
            .run(&mut u)
            .unwrap_err();
        match e {
            Error::NonFinite { iteration, index, .. } => (iteration, index, u),
            other => panic!("expected NonFinite, got {other}"),
        }
    };
    let (cpu_iteration, cpu_index, cpu_u) = run(Backend::Cpu);
    let (gpu_iteration, gpu_index, gpu_u) = run(Backend::Cuda { device: 0 });
    // ∞ enters u at [4, 5] in the first iteration and spreads one point per iteration: at
    // the check after iteration 5 it has reached row 1, first at column 4.
    assert_eq!((cpu_iteration, &cpu_index[..]), (5, &[1, 4][..]));
    assert_eq!((gpu_iteration, gpu_index), (cpu_iteration, cpu_index));
    let same = cpu_u.as_slice().iter().zip(gpu_u.as_slice()).all(|(a, b)| a == b || (a.is_nan() && b.is_nan()));
    assert!(same, "both grids hold the checked iterate");
}

/// Every pair of special operands with a finite quotient (zeros of either sign, a
/// subnormal, the largest finite value, the smallest normal `f64` (zero in `f32`),
/// infinities as divisors), divided on both backends: the same bits, the zeros' signs
/// included.
fn quotients_are_the_twins<T: Real>(subnormal: f64, largest: f64) {
    let dividends = [0.0, -0.0, 1.0, -3.5, subnormal, -subnormal, largest, f64::MIN_POSITIVE];
    let divisors = [1.0, -3.0, 0.1, f64::INFINITY, f64::NEG_INFINITY, largest, -largest, subnormal, 7e-3];
    let pairs: Vec<(f64, f64)> = dividends
        .iter()
        .flat_map(|&a| divisors.iter().map(move |&b| (a, b)))
        .filter(|&(a, b)| (T::from_f64(a) / T::from_f64(b)).to_f64().is_finite())
        .collect();
    let field = |pick: fn(&(f64, f64)) -> f64| {
        let mut grid = Grid::<T, 1>::filled([pairs.len() + 2], T::from_f64(1.0)).unwrap();
        for (i, pair) in pairs.iter().enumerate() {
            grid[[i + 1]] = T::from_f64(pick(pair));
        }
        grid
    };
    let (a, b) = (field(|p| p.0), field(|p| p.1));
    let run = |backend| {
        let mut u = Grid::<T, 1>::filled([pairs.len() + 2], T::from_f64(0.0)).unwrap();
        let solver = Solver::new(Quotient).input("a", &a).input("b", &b).backend(backend).mode(Mode::Exact);
        solver.max_iterations(1).run(&mut u).unwrap();
        u.as_slice().iter().map(|v| v.to_f64().to_bits()).collect::<Vec<_>>()
    };
    let (cpu, gpu) = (run(Backend::Cpu), run(Backend::Cuda { device: 0 }));
    for (i, (c, g)) in cpu.iter().zip(&gpu).enumerate() {
        let (x, y) = (f64::from_bits(*c), f64::from_bits(*g));
        assert_eq!(c, g, "{}: point {i}: CPU {x:e}, GPU {y:e}", T::NAME);
    }
    // The zeros' signs were tested, not only their values.
    assert!(cpu.contains(&(-0.0f64).to_bits()) && cpu.contains(&0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn quotients_of_special_operands_are_the_twins_bit_for_bit() {
    require_gpu();
    quotients_are_the_twins::<f32>(1e-40, f32::MAX as f64);
    quotients_are_the_twins::<f64>(1e-310, f64::MAX);
}

/// The double-precision quotient in line covers dividends down to the smallest subnormal: nonzero
/// values down to the subnormals, quotients near a midpoint between two subnormals (which a second
/// rounding would get wrong), quotients exactly halfway between two (by even integers: out of
/// line), quotients at the subnormal edge and dividends around the range's end (2^320), by
/// divisors near 1 and across 2^-300 … 2^52.
#[test]
#[ignore = "needs a CUDA GPU"]
fn tiny_double_dividends_divide_as_the_twin_bit_for_bit() {
    require_gpu();
    let mut rng = StdRng::seed_from_u64(0x2545_f491_4f6c_dd1d);
    let mut next = move || rng.random::<u64>();
    let with_exponent =
        |bits: u64, e: i64| f64::from_bits((bits & 0x800f_ffff_ffff_ffff) | (((e + 1023) as u64) << 52));
    let n = 200_000;
    let (mut a, mut b) = (Grid::<f64, 1>::filled([n + 2], 1.0).unwrap(), Grid::<f64, 1>::filled([n + 2], 1.0).unwrap());
    for i in 1..=n {
        let e = if i % 2 == 0 { (next() % 352) as i64 - 300 } else { (next() % 8) as i64 - 4 };
        let mut divisor = with_exponent(next(), e);
        let dividend = match i % 6 {
            0 => f64::from_bits((next() % 0x1430_0000_0000_0000).max(1) | (next() & 0x8000_0000_0000_0000)),
            1 => f64::from_bits((next() & 0x800f_ffff_ffff_ffff).max(1)),
            2 => ((2 * (next() % (1 << 52)) + 1) as f64 * divisor) * 2f64.powi(-1000) * 2f64.powi(-75),
            3 => with_exponent(next(), 320 + (next() % 7) as i64 - 3),
            4 => with_exponent(next(), (e - 1022 + (next() % 7) as i64 - 3).max(-1022)),
            _ => {
                // An even integer s·2^j and an odd multiple of 2^-1075 times it, exactly.
                let (s, j, m) = ((next() % (1 << 20)) | 3, 1 + (next() % 30) as i32, (next() % (1 << 30)) | 1);
                divisor = s as f64 * 2f64.powi(j);
                (s * m) as f64 * 2f64.powi(j - 975) * 2f64.powi(-100)
            }
        };
        (a[[i]], b[[i]]) = (dividend, divisor);
    }
    let run = |backend| {
        let mut u = Grid::<f64, 1>::filled([n + 2], 0.0).unwrap();
        let solver = Solver::new(Quotient).input("a", &a).input("b", &b).backend(backend).mode(Mode::Exact);
        solver.max_iterations(1).run(&mut u).unwrap();
        u
    };
    let (cpu, gpu) = (run(Backend::Cpu), run(Backend::Cuda { device: 0 }));
    let subnormal = cpu.as_slice().iter().filter(|q| q.is_subnormal()).count();
    assert!(subnormal > n / 10, "{subnormal} subnormal quotients of {n}");
    for i in 1..=n {
        let (c, g) = (cpu[[i]], gpu[[i]]);
        assert_eq!(c.to_bits(), g.to_bits(), "point {i}: {:e} / {:e}: CPU {c:e}, GPU {g:e}", a[[i]], b[[i]]);
    }
}

#[test]
fn the_translation_unit_can_be_written_out() {
    // Written before the device is opened, so this holds with or without a GPU.
    let dir = tempfile::tempdir().unwrap();
    let f = Grid::<f32, 2>::zeros([5, 5]).unwrap();
    let mut u = Grid::<f32, 2>::zeros([5, 5]).unwrap();
    let result = Solver::new(Jacobi5)
        .input("f", &f)
        .param("h2", 1.0)
        .backend(Backend::Cuda { device: 0 })
        .dump_cuda(dir.path())
        .max_iterations(1)
        .run(&mut u);
    assert!(result.is_ok() || matches!(result, Err(Error::NoGpu { .. })), "{:?}", result.err());
    assert_eq!(std::fs::read_to_string(dir.path().join("jacobi5.cu")).unwrap(), Jacobi5::CUDA_SOURCE);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_grid_the_device_cannot_hold_is_an_out_of_memory_error() {
    require_gpu();
    // The unknown twice on the device: each copy a little over half the free memory. The
    // host grid stays zero pages until the upload reads them.
    let (free, _) = stencil::cuda::Gpu::open(0).unwrap().free_memory().unwrap();
    let planes = (free / 4 * 11 / 20).div_ceil(1 << 20);
    let mut u = Grid::<f32, 2>::zeros([planes, 1 << 20]).unwrap();
    // `Plain` asked for: `Auto` would run a grid this large out of core.
    let solver = Solver::new(Smooth).backend(Backend::Cuda { device: 0 }).schedule(Schedule::Plain);
    let e = solver.max_iterations(1).run(&mut u).unwrap_err();
    match &e {
        Error::OutOfMemory { memory: stencil::MemoryKind::Device { device: 0 }, bytes, .. } => {
            assert_eq!(*bytes, planes << 22)
        }
        other => panic!("expected a device out-of-memory error: {other}"),
    }
    assert!(u.as_slice()[..1 << 20].iter().all(|&v| v == 0.0), "the grid is untouched");
}

stencil! {
    /// Gauss–Seidel for −Δu = f, in place.
    sweep(+, +) fn gauss_seidel(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
    }
}

/// Schedule sizes from the ends of the `usize` range on the GPU: a clear error, or
/// `Plain`'s iterates (the sequential sweep's) bit for bit.
#[test]
#[ignore = "needs a CUDA GPU"]
fn schedule_sizes_beyond_the_grid_are_errors_or_plain_runs() {
    require_gpu();
    let f = random::<f64, 2>([37, 29], 1);
    let u0 = random::<f64, 2>([37, 29], 2);
    let gpu = Backend::Cuda { device: 0 };
    let run = |schedule: Schedule, backend| {
        let mut u = u0.clone();
        let solver = Solver::new(Jacobi5).input("f", &f).param("h2", 0.01).backend(backend).mode(Mode::Exact);
        solver.schedule(schedule).max_iterations(7).run(&mut u).map(|_| u)
    };
    let plain = run(Schedule::Plain, Backend::Cpu).unwrap();
    let huge = usize::MAX;
    for schedule in [
        Schedule::Hierarchical { tile: 4, halo: huge, sub: 2 },
        Schedule::Hierarchical { tile: huge, halo: 2, sub: 2 },
        Schedule::Hierarchical { tile: huge, halo: 1, sub: 3 },
        Schedule::OutOfCore { slab: None, height: huge, inner: Inner::Plain, device_memory: None },
        Schedule::OutOfCore { slab: Some(huge), height: 1 << 40, inner: Inner::Skewed, device_memory: None },
        Schedule::OutOfCore { slab: Some(2), height: huge, inner: Inner::Plain, device_memory: Some(huge) },
    ] {
        let u = run(schedule, gpu).unwrap_or_else(|e| panic!("{schedule}: {e}"));
        assert!(u == plain, "{schedule} equals Plain on the GPU");
    }
    // An inexact cycle shortened to the limit, as on the CPU.
    let inexact = Schedule::Hierarchical { tile: 4, halo: 1, sub: huge };
    assert!(run(inexact, gpu).unwrap() == run(inexact, Backend::Cpu).unwrap(), "{inexact}");
    let sweep = |schedule, backend| {
        let mut u = u0.clone();
        let solver = Solver::new(GaussSeidel).input("f", &f).param("h2", 0.01).backend(backend).mode(Mode::Exact);
        solver.schedule(schedule).max_iterations(3).run(&mut u).map(|_| u)
    };
    let sequential = sweep(Schedule::Plain, Backend::Cpu).unwrap();
    // Tiles wider than the grid are lowered to it: the same pencils.
    for tile in [1, 5, 64, 1000, 1 << 20, huge] {
        let u = sweep(Schedule::Wavefront { tile }, gpu).unwrap_or_else(|e| panic!("tile {tile}: {e}"));
        assert!(u == sequential, "tile {tile}");
    }
}

mod radius;

#[test]
#[ignore = "needs a CUDA GPU"]
fn radius_eight_runs_on_every_schedule() {
    require_gpu();
    radius::every_schedule_equals_plain(Backend::Cuda { device: 0 });
}

stencil! {
    /// A sweep with two read-only fields, one read only at the point: every parameter role
    /// of the wavefront kernel, and a register kernel keeping one field of two.
    sweep(+, -) fn swept(mut u: Field2, k: Field2, f: Field2, w: Real, n: i32) -> Real {
        (u[-1, 0] + u[0, 1] + k[1, 0] * w + f[0, 0] * n) / 3.0
    }
}

/// Every kernel's parameters as the driver loaded them (`cuFuncGetParamInfo`): the count
/// and each size equal the kernel manifest's, from which the launcher pushes its arguments.
fn manifest_matches<S: Stencil<N>, const N: usize>() {
    for (real, checked) in
        [("f32", stencil::cuda::check_manifest::<S, f32, N>(0)), ("f64", stencil::cuda::check_manifest::<S, f64, N>(0))]
    {
        let kernels = checked.unwrap_or_else(|e| panic!("{} in {real}: {e}", S::META.name));
        assert_eq!(kernels, S::KERNELS.kernels.len());
        assert!(kernels >= 4, "{}: {kernels} kernels", S::META.name);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn loaded_kernels_match_the_manifest() {
    require_gpu();
    manifest_matches::<Jacobi7, 3>();
    manifest_matches::<Jacobi5, 2>();
    manifest_matches::<Wide, 1>();
    manifest_matches::<Varied, 3>();
    manifest_matches::<Smooth, 2>();
    manifest_matches::<Swept, 2>();
    manifest_matches::<stencil::builtin::AtHalf1, 2>();
}
