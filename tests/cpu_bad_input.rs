//! Whatever a user types, a run gives a clear error or a correct result, and never panics,
//! aborts, hangs or silently does nothing: sizes beyond the memory or the address space,
//! schedule parameters from the whole `usize` range, stopping rules that could never stop,
//! checkpoints that could lose work, parameters given twice.

use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;
use stencil::builtin::{Jacobi5, Jacobi5Params};
use stencil::prelude::*;
use stencil::{Error, MemoryKind, StopReason};

mod common;
use common::random;

stencil! {
    /// Gauss–Seidel for −Δu = f, in place.
    sweep(+, +) fn gs(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
    }
}

const H2: f64 = 0.01;

fn j5(f: &Grid<f64, 2>) -> Solver<'_, Jacobi5, f64, 2> {
    Solver::new(Jacobi5).input("f", f).param("h2", H2)
}

// ---------------------------------------------------------------------------------------
// Memory

#[test]
fn grids_beyond_the_memory_or_the_address_space_are_errors() {
    let e = Grid::<f64, 3>::filled([100_000; 3], 1.0).unwrap_err();
    assert!(matches!(&e, Error::OutOfMemory { bytes: 8_000_000_000_000_000, memory: MemoryKind::Host, .. }), "{e}");
    assert!(e.to_string().contains("[100000, 100000, 100000]"), "it names the grid: {e}");
    for e in [
        Grid::<f64, 3>::zeros([100_000; 3]).unwrap_err(),
        Grid::<f32, 3>::from_fn([100_000; 3], |_| 0.0).unwrap_err(),
        Grid::<f64, 3>::random_uniform([100_000; 3], 0.0, 1.0, 1).unwrap_err(),
    ] {
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    }
    // 2⁶² points fit a `usize`, their 2⁶⁵ bytes do not.
    let e = Grid::<f64, 2>::zeros([1 << 31, 1 << 31]).unwrap_err();
    assert!(matches!(&e, Error::InvalidShape { .. }), "{e}");
    assert!(e.to_string().contains("4611686018427387904 points of 8 B"), "{e}");
}

/// Environment variable that makes the test below the child process it starts.
const LOW_MEMORY_CHILD: &str = "STENCIL_TEST_LOW_MEMORY_CHILD";

/// In a child process whose address space is limited to 1 GiB (so that the machine running
/// the tests is never at risk): a grid larger than that, and a solver whose second buffer
/// does not fit beside the grid, are errors, and the grid is untouched.
#[test]
fn allocations_beyond_the_memory_available_are_errors_and_the_process_lives() {
    if std::env::var_os(LOW_MEMORY_CHILD).is_some() {
        return low_memory_child();
    }
    let exe = std::env::current_exe().unwrap();
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -v 1048576 && exec "$0" --exact "$1" --nocapture --test-threads 1"#)
        .arg(exe)
        .arg("allocations_beyond_the_memory_available_are_errors_and_the_process_lives")
        .env(LOW_MEMORY_CHILD, "1")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the child failed or was killed ({:?}):\n{text}", output.status);
    assert!(text.contains("child checked 3 allocations"), "the child ran its checks:\n{text}");
}

fn low_memory_child() {
    // 1.5 GiB: more than the whole address space the child may use.
    let e = Grid::<f64, 3>::zeros([768, 512, 512]).unwrap_err();
    assert!(matches!(&e, Error::OutOfMemory { bytes: 1_610_612_736, .. }), "{e}");
    // 600 MiB fit, but not a second buffer of 600 MiB beside them.
    let mut u = Grid::<f64, 3>::zeros([600, 512, 256]).unwrap();
    u[[5, 5, 5]] = 1.0;
    let e = Solver::new(Copy3).max_iterations(1).run(&mut u).unwrap_err();
    assert!(matches!(&e, Error::OutOfMemory { bytes: 629_145_600, .. }), "{e}");
    assert!(e.to_string().contains("second buffer"), "{e}");
    assert_eq!(u[[5, 5, 5]], 1.0, "the grid is untouched");
    println!("{e}");
    println!("child checked 3 allocations");
}

stencil! {
    /// Averages along one axis (needs nothing but the unknown).
    fn copy3(mut u: Field3) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0]) / 2.0
    }
}

// ---------------------------------------------------------------------------------------
// Stopping rules

#[test]
fn a_relative_tolerance_at_a_fixed_point_stops_at_once_and_says_so() {
    let f = Grid::<f64, 2>::zeros([16, 16]).unwrap();
    for norm in [Norm::Max, Norm::L2] {
        let mut u = Grid::<f64, 2>::zeros([16, 16]).unwrap();
        let report = j5(&f).tolerance(Tolerance::Relative { norm, factor: 1e-3 }).run(&mut u).unwrap();
        assert_eq!(report.stop, StopReason::StartSatisfies);
        assert_eq!(report.iterations, 1);
        assert!(report.to_string().contains("already a fixed point"), "{report}");
    }
    // The same for a sweep stencil, whose ρ(u⁰) is measured before the first sweep.
    let mut u = Grid::<f64, 2>::zeros([16, 16]).unwrap();
    let report = Solver::new(Gs)
        .input("f", &f)
        .param("h2", H2)
        .tolerance(Tolerance::Relative { norm: Norm::Max, factor: 0.5 })
        .run(&mut u)
        .unwrap();
    assert_eq!((report.stop, report.iterations), (StopReason::StartSatisfies, 1));
}

#[test]
fn a_check_period_that_a_run_without_limit_never_reaches_is_an_error() {
    let f = random::<f64, 2>([16, 16], 1);
    let mut u = random::<f64, 2>([16, 16], 2);
    let before = u.clone();
    let tolerance = Tolerance::Absolute { norm: Norm::Max, eps: 1e-6 };
    let e = j5(&f).tolerance(tolerance).check_every(usize::MAX).run(&mut u).unwrap_err();
    assert!(matches!(&e, Error::NeverStops { .. }), "{e}");
    assert!(e.to_string().contains("max_iterations"), "it says what to do: {e}");
    let e = j5(&f).tolerance(tolerance).check_every((1 << 20) + 1).run(&mut u).unwrap_err();
    assert!(matches!(e, Error::NeverStops { .. }), "{e}");
    // An inexact hierarchical cycle is never cut short: it counts as the gap between checks.
    let inexact = Schedule::Hierarchical { tile: 4, halo: 1, sub: usize::MAX };
    let e = j5(&f).tolerance(tolerance).schedule(inexact).check_every(10).run(&mut u).unwrap_err();
    assert!(matches!(&e, Error::NeverStops { reason } if reason.contains("inexact")), "{e}");
    assert_eq!(u, before);
    // With a limit, any period is allowed: the last iteration is checked.
    let report = j5(&f).tolerance(tolerance).check_every(usize::MAX).max_iterations(7).run(&mut u).unwrap();
    assert_eq!(report.residuals.iter().map(|r| r.iteration).collect::<Vec<_>>(), [7]);
    // A schedule's own period (a height or `sub` of 2⁴⁰) is lowered for a run without a limit.
    let height = Schedule::OutOfCore { slab: Some(3), height: 1 << 40, inner: Inner::Plain, device_memory: None };
    let report = j5(&f).tolerance(Tolerance::Absolute { norm: Norm::Max, eps: 1e-3 }).schedule(height).run(&mut u);
    assert_eq!(report.unwrap().stop, StopReason::Converged);
}

/// Values for a stopping rule's numbers: the interesting ones, and any.
fn threshold() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(-1.0),
        Just(0.0),
        Just(1e-300),
        Just(1e-12),
        Just(1e-3),
        Just(0.5),
        Just(1.0),
        Just(1e3),
        any::<f64>(),
    ]
}

fn tolerance() -> impl Strategy<Value = Option<Tolerance>> {
    let norm = prop_oneof![Just(Norm::Max), Just(Norm::L2)];
    prop_oneof![
        Just(None),
        (norm.clone(), threshold()).prop_map(|(norm, eps)| Some(Tolerance::Absolute { norm, eps })),
        (norm, threshold()).prop_map(|(norm, factor)| Some(Tolerance::Relative { norm, factor })),
    ]
}

fn period() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![
        Just(None),
        (0usize..4).prop_map(Some),
        prop_oneof![Just(10usize), Just(100), Just(1000), Just((1 << 20) + 1), Just(usize::MAX)].prop_map(Some),
        any::<usize>().prop_map(Some),
    ]
}

/// Runs `run` on another thread and waits `limit` for it.
fn within<R: Send + 'static>(limit: Duration, run: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || send.send(run()));
    receive.recv_timeout(limit).ok()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Every combination of limit, tolerance and check period either is refused before the
    /// run or stops (on a problem whose iterates reach ρ = 0 exactly, so every positive
    /// tolerance is met), within a time limit.
    #[test]
    fn stopping_rules_never_hang(
        max in prop_oneof![Just(None), (0usize..300).prop_map(Some)],
        tolerance in tolerance(),
        check in period(),
        fixed_point in any::<bool>(),
        inexact_sub in prop_oneof![Just(None), (1usize..64).prop_map(Some), Just(Some(usize::MAX))],
    ) {
        let outcome = within(Duration::from_secs(60), move || {
            let f = Grid::<f64, 2>::zeros([6, 7]).unwrap();
            // A zero boundary: the iterates decay to 0 exactly (through the subnormals).
            let mut u = random::<f64, 2>([6, 7], 3);
            u.set_boundary([1, 1], |_| 0.0);
            if fixed_point {
                u = Grid::zeros([6, 7]).unwrap();
            }
            let mut solver = j5(&f);
            if let Some(max) = max { solver = solver.max_iterations(max) }
            if let Some(t) = tolerance { solver = solver.tolerance(t) }
            if let Some(m) = check { solver = solver.check_every(m) }
            if let Some(sub) = inexact_sub {
                solver = solver.schedule(Schedule::Hierarchical { tile: 2, halo: 1, sub });
            }
            solver.run(&mut u).map(|r| (r.iterations, r.stop)).map_err(|e| e.to_string())
        });
        let Some(result) = outcome else {
            panic!("no answer within 60 s: max {max:?}, {tolerance:?}, check {check:?}, sub {inexact_sub:?}")
        };
        match result {
            Ok((iterations, stop)) => {
                prop_assert!(max.is_none_or(|m| iterations <= m));
                prop_assert!(stop != StopReason::IterationLimit || max == Some(iterations));
            }
            Err(e) => prop_assert!(
                e.contains("could never stop") || e.contains("invalid stopping rule"),
                "an unexpected error: {}", e
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Schedule parameters

#[test]
fn the_reported_schedule_sizes_give_errors_or_plain_runs() {
    let f = random::<f64, 2>([16, 16], 1);
    let u0 = random::<f64, 2>([16, 16], 2);
    let run = |schedule: Schedule| {
        let mut u = u0.clone();
        j5(&f).schedule(schedule).max_iterations(10).run(&mut u).map(|_| u)
    };
    let plain = run(Schedule::Plain).unwrap();
    for schedule in [
        Schedule::Hierarchical { tile: 4, halo: usize::MAX, sub: 2 },
        Schedule::Hierarchical { tile: usize::MAX, halo: 2, sub: 2 },
        Schedule::Hierarchical { tile: usize::MAX, halo: 1, sub: 2 },
        Schedule::Hierarchical { tile: usize::MAX, halo: usize::MAX, sub: usize::MAX },
        Schedule::OutOfCore { slab: None, height: usize::MAX, inner: Inner::Plain, device_memory: None },
        Schedule::OutOfCore { slab: Some(usize::MAX), height: 1 << 40, inner: Inner::Skewed, device_memory: None },
        Schedule::OutOfCore { slab: Some(2), height: usize::MAX, inner: Inner::Plain, device_memory: Some(usize::MAX) },
    ] {
        let u = run(schedule).unwrap_or_else(|e| panic!("{schedule}: {e}"));
        assert!(u == plain, "{schedule} equals Plain");
    }
    // A limit too small for any slab: the error counts what the smallest slab holds.
    let tight = Schedule::OutOfCore { slab: None, height: usize::MAX, inner: Inner::Plain, device_memory: Some(1000) };
    let e = run(tight).unwrap_err();
    assert!(matches!(&e, Error::DeviceMemory { .. }), "{e}");
    assert!(e.to_string().contains("height 16 · radius 1"), "heights are lowered to the grid's planes: {e}");
    assert!(!e.to_string().contains("18446744073709551"), "{e}");
    let skewed = Schedule::OutOfCore { slab: None, height: 4, inner: Inner::Skewed, device_memory: Some(1000) };
    let e = run(skewed).unwrap_err();
    assert!(e.to_string().contains("skewed windows"), "{e}");
    // Sweeps: a wavefront tile of any size is the sequential sweep.
    let sweep = |schedule| {
        let mut u = u0.clone();
        Solver::new(Gs).input("f", &f).param("h2", H2).schedule(schedule).max_iterations(3).run(&mut u).map(|_| u)
    };
    let sequential = sweep(Schedule::Plain).unwrap();
    for tile in [1, 5, 64, usize::MAX / 2, usize::MAX] {
        assert!(sweep(Schedule::Wavefront { tile }).unwrap() == sequential, "tile {tile}");
    }
}

/// Sizes drawn from the whole `usize` range, weighted towards 0, 1, the grid's size and the
/// largest values.
fn size(grid: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => 0usize..=3,
        2 => (grid - 1)..=(grid + 1),
        2 => (usize::MAX - 2)..=usize::MAX,
        1 => 4usize..40,
        1 => any::<usize>(),
    ]
}

fn inner(grid: usize) -> impl Strategy<Value = Inner> {
    prop_oneof![
        Just(Inner::Plain),
        Just(Inner::Skewed),
        (size(grid), size(grid), size(grid)).prop_map(|(tile, halo, sub)| Inner::Hierarchical { tile, halo, sub }),
    ]
}

fn schedule(grid: usize) -> impl Strategy<Value = Schedule> {
    prop_oneof![
        Just(Schedule::Auto),
        Just(Schedule::Plain),
        Just(Schedule::Tiled),
        (size(grid), size(grid), size(grid)).prop_map(|(tile, halo, sub)| Schedule::Hierarchical { tile, halo, sub }),
        (proptest::option::of(size(grid)), size(grid), inner(grid), proptest::option::of(size(grid * grid * 64)))
            .prop_map(|(slab, height, inner, device_memory)| Schedule::OutOfCore {
                slab,
                height,
                inner,
                device_memory
            }),
        size(grid).prop_map(|tile| Schedule::Wavefront { tile }),
    ]
}

/// Why `schedule` is refused for a Jacobi (`sweep` false) or sweep stencil of radius 1, if
/// it is: the rules of `Schedule`'s documentation.
fn refused(schedule: Schedule, sweep: bool) -> bool {
    let hierarchical_refused = |tile, halo, sub| tile == 0 || sub == 0 || halo < 1;
    match schedule {
        Schedule::Auto | Schedule::Plain => false,
        Schedule::Tiled | Schedule::Hierarchical { .. } | Schedule::OutOfCore { .. } if sweep => true,
        Schedule::Wavefront { .. } if !sweep => true,
        Schedule::Tiled => false,
        Schedule::Hierarchical { tile, halo, sub } => hierarchical_refused(tile, halo, sub),
        Schedule::OutOfCore { slab, height, inner, device_memory } => {
            height == 0
                || slab == Some(0)
                || device_memory == Some(0)
                || match inner {
                    Inner::Hierarchical { tile, halo, sub } => {
                        hierarchical_refused(tile, halo, sub) || halo < sub.saturating_mul(1)
                    }
                    _ => false,
                }
        }
        Schedule::Wavefront { tile } => tile == 0,
        _ => unreachable!("no other schedule"),
    }
}

/// `len` iterations of `jacobi5`'s inexact hierarchical schedule written out by hand:
/// cycles of `sub` subiterations (the last one shortened to the limit); each tile of `tile`
/// points per axis loads its core and `halo` points around it (clipped to the grid), runs
/// the subiterations on the points at distance ≥ 1 from its region's edge, and keeps its
/// core.
fn hand_hierarchical(
    u: &Grid<f64, 2>,
    f: &Grid<f64, 2>,
    (tile, halo, sub): (usize, usize, usize),
    len: usize,
) -> Grid<f64, 2> {
    let [n0, n1] = u.shape();
    let mut u = u.clone();
    let mut done = 0;
    while done < len {
        let steps = sub.min(len - done);
        let mut out = u.clone();
        for c0 in (1..n0 - 1).step_by(tile.min(n0)) {
            for c1 in (1..n1 - 1).step_by(tile.min(n1)) {
                let core = [(c0, c0.saturating_add(tile).min(n0 - 1)), (c1, c1.saturating_add(tile).min(n1 - 1))];
                let lo = [c0.saturating_sub(halo), c1.saturating_sub(halo)];
                let hi = [core[0].1.saturating_add(halo).min(n0), core[1].1.saturating_add(halo).min(n1)];
                let mut w: Vec<Vec<f64>> =
                    (lo[0]..hi[0]).map(|i| (lo[1]..hi[1]).map(|j| u[[i, j]]).collect()).collect();
                for _ in 0..steps {
                    let old = w.clone();
                    for i in lo[0] + 1..hi[0] - 1 {
                        for j in lo[1] + 1..hi[1] - 1 {
                            let (a, b) = (i - lo[0], j - lo[1]);
                            w[a][b] =
                                (old[a - 1][b] + old[a + 1][b] + old[a][b - 1] + old[a][b + 1] + H2 * f[[i, j]]) / 4.0;
                        }
                    }
                }
                for i in core[0].0..core[0].1 {
                    for j in core[1].0..core[1].1 {
                        out[[i, j]] = w[i - lo[0]][j - lo[1]];
                    }
                }
            }
        }
        u = out;
        done += steps;
    }
    u
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any schedule with any sizes, on the CPU: a clear `InvalidSchedule` error exactly
    /// where the rules refuse it (or `DeviceMemory` for an out-of-core limit too small for
    /// one slab), else the run's result: `Plain`'s, the sequential sweep's, or for an
    /// inexact hierarchical schedule the hand-written iteration's.
    #[test]
    fn any_schedule_size_is_an_error_or_a_correct_run(
        (n0, n1) in (3usize..13, 3usize..13),
        schedule in schedule(12),
        iterations in 0usize..5,
        sweep in any::<bool>(),
    ) {
        let shape = [n0, n1];
        let f = random::<f64, 2>(shape, 5);
        let u0 = random::<f64, 2>(shape, 6);
        let outcome = within(Duration::from_secs(60), move || {
            let run = |schedule| {
                let mut u = u0.clone();
                let result = match sweep {
                    false => j5(&f).schedule(schedule).max_iterations(iterations).run(&mut u),
                    true => Solver::new(Gs).input("f", &f).param("h2", H2).schedule(schedule)
                        .max_iterations(iterations).run(&mut u),
                };
                result.map(|_| u)
            };
            let expected = match schedule {
                Schedule::Hierarchical { tile, halo, sub } if !sweep && halo < sub && tile > 0 && sub > 0 && halo > 0 => {
                    hand_hierarchical(&u0, &f, (tile, halo, sub), iterations)
                }
                _ => run(Schedule::Plain).unwrap(),
            };
            (run(schedule), expected)
        });
        let Some((got, expected)) = outcome else { panic!("{schedule} did not finish within 60 s") };
        match got {
            Ok(u) => {
                prop_assert!(!refused(schedule, sweep), "{} should be refused", schedule);
                prop_assert!(u == expected, "{} on {:?}, {} iterations: not the expected iterate", schedule, shape, iterations);
            }
            Err(Error::InvalidSchedule { .. }) => prop_assert!(refused(schedule, sweep), "{} refused", schedule),
            Err(e @ Error::DeviceMemory { .. }) => {
                prop_assert!(matches!(schedule, Schedule::OutOfCore { device_memory: Some(_), .. }), "{}", e)
            }
            Err(e) => prop_assert!(false, "{}: unexpected error {}", schedule, e),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Checkpoints

#[test]
fn checkpoint_paths_that_cannot_be_written_are_found_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let f = random::<f64, 2>([16, 16], 1);
    let mut u = random::<f64, 2>([16, 16], 2);
    let before = u.clone();
    // `/proc` stands for a read-only file system (permissions would not stop a root user).
    let read_only = std::path::PathBuf::from("/proc/stencil-checkpoint.npz");
    for path in [dir.path().join("missing/u.npz"), file.join("u.npz"), "".into(), dir.path().to_owned(), read_only] {
        let e = j5(&f).max_iterations(10).checkpoint(Checkpoint::every(5, &path)).run(&mut u).unwrap_err();
        assert!(matches!(&e, Error::CheckpointUnwritable { .. }), "{}: {e}", path.display());
        assert!(e.to_string().contains("nothing was run"), "{e}");
        assert_eq!(u, before, "{}", path.display());
    }
    assert!(!dir.path().join(".partial").exists() && !file.with_extension("partial").exists());
}

#[test]
fn resuming_checks_the_inputs_and_the_iteration_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.npz");
    let f = random::<f64, 2>([16, 16], 1);
    let u0 = random::<f64, 2>([16, 16], 2);
    let checkpoint = || Checkpoint::every(50, &path).resume();
    j5(&f).max_iterations(100).checkpoint(checkpoint()).run(&mut u0.clone()).unwrap();

    let mut u = u0.clone();
    let other_h2 = Solver::new(Jacobi5).input("f", &f).param("h2", 0.02).max_iterations(200);
    let e = other_h2.checkpoint(checkpoint()).run(&mut u).unwrap_err();
    assert!(e.to_string().contains("parameter `h2` is 0.02 in this run and 0.01 in the checkpoint"), "{e}");
    let g = random::<f64, 2>([16, 16], 9);
    let e = j5(&g).max_iterations(200).checkpoint(checkpoint()).run(&mut u).unwrap_err();
    assert!(e.to_string().contains("read-only field `f`"), "{e}");
    assert!(e.to_string().contains("allow_changed_inputs"), "it says how to resume anyway: {e}");
    let e = j5(&f).max_iterations(40).checkpoint(checkpoint()).run(&mut u).unwrap_err();
    assert!(e.to_string().contains("holds iterate 100, beyond this run's iteration limit of 40"), "{e}");
    assert_eq!(u, u0, "refused resumes leave the grid alone");

    // Asked for explicitly, a resume with another right-hand side continues from iterate 100.
    let report = j5(&g).max_iterations(110).checkpoint(checkpoint().allow_changed_inputs()).run(&mut u).unwrap();
    assert_eq!((report.resumed_at, report.iterations), (Some(100), 110));
    // A file that records no inputs needs the same permission.
    let foreign = dir.path().join("foreign.npz");
    Checkpoint::write(&foreign, &u0, 3, None, "jacobi5").unwrap();
    let e = j5(&f).max_iterations(10).checkpoint(Checkpoint::every(5, &foreign).resume()).run(&mut u).unwrap_err();
    assert!(e.to_string().contains("records no parameters"), "{e}");
    j5(&f)
        .max_iterations(10)
        .checkpoint(Checkpoint::every(5, &foreign).resume().allow_changed_inputs())
        .run(&mut u)
        .unwrap();
}

#[test]
fn an_error_after_the_grid_changed_says_which_iterate_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("run");
    std::fs::create_dir(&sub).unwrap();
    let path = sub.join("u.npz");
    let f = random::<f64, 2>([16, 16], 1);
    let mut u = random::<f64, 2>([16, 16], 2);
    // The folder disappears after the first checkpoint (at the check of iteration 20,
    // which the checkpoint follows): the second cannot be written.
    let e = j5(&f)
        .max_iterations(30)
        .check_every(10)
        .checkpoint(Checkpoint::every(10, &path))
        .on_progress(|p| {
            if p.iteration == 20 {
                std::fs::remove_dir_all(&sub).unwrap();
            }
        })
        .run(&mut u)
        .unwrap_err();
    match &e {
        Error::Interrupted { holds: Some(20), checkpoint: Some((p, 10)), .. } => assert_eq!(p, &path),
        other => panic!("expected the run to say the grid holds iterate 20: {other}"),
    }
    assert!(e.to_string().contains("holds iterate 20") && e.to_string().contains("holds iterate 10"), "{e}");
    let mut twenty = random::<f64, 2>([16, 16], 2);
    j5(&f).max_iterations(20).run(&mut twenty).unwrap();
    assert_eq!(u, twenty);
}

// ---------------------------------------------------------------------------------------
// Parameters

#[test]
fn a_parameter_is_given_one_way_only() {
    let f = random::<f64, 2>([16, 16], 1);
    let mut u = random::<f64, 2>([16, 16], 2);
    let typed = || Solver::new(Jacobi5).input("f", &f).params(Jacobi5Params { h2: 0.1 }).max_iterations(1);
    let e = typed().param("h2", 0.2).run(&mut u).unwrap_err();
    assert!(matches!(&e, Error::ParametersGivenTwice { .. }), "{e}");
    assert!(e.to_string().contains("parameter `h2` given twice"), "{e}");
    let e = typed().params(Jacobi5Params { h2: 0.3 }).run(&mut u).unwrap_err();
    assert!(matches!(e, Error::ParametersGivenTwice { .. }), "{e}");
    let e = typed().param("h3", 0.2).run(&mut u).unwrap_err();
    assert!(matches!(e, Error::UnknownParameter { .. }), "{e}");
    let e = j5(&f).param("h2", 0.2).max_iterations(1).run(&mut u).unwrap_err();
    assert!(matches!(e, Error::Duplicate { .. }), "{e}");
}
