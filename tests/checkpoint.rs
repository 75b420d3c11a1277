//! Checkpoints on the CPU: a run stopped and resumed from its last checkpoint ends with the
//! same grid, iteration count and residuals as one that was not stopped, for every Jacobi
//! schedule; a checkpoint that is not the run's is refused before the grid is touched; an
//! out-of-core pass that stops midway says which planes hold which iterate.

use stencil::builtin::Jacobi7;
use stencil::prelude::*;
use stencil::{Error, Saved};

mod common;
use common::{differing, random};

stencil! {
    /// A second stencil, to show that a checkpoint of another stencil is refused.
    fn other(mut u: Field3, f: Field3, h2: Real) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0] + h2 * f[0, 0, 0]) / 2.0
    }
}

const SHAPE: [usize; 3] = [23, 9, 11];

fn solver<'a>(f: &'a Grid<f64, 3>, schedule: Schedule) -> Solver<'a, Jacobi7, f64, 3> {
    Solver::new(Jacobi7).input("f", f).param("h2", 0.05).schedule(schedule)
}

fn schedules() -> [Schedule; 4] {
    [
        Schedule::Plain,
        Schedule::Hierarchical { tile: 5, halo: 3, sub: 3 },
        Schedule::OutOfCore { slab: Some(4), height: 3, inner: Inner::Plain, device_memory: None },
        Schedule::OutOfCore {
            slab: Some(6),
            height: 4,
            inner: Inner::Hierarchical { tile: 4, halo: 2, sub: 2 },
            device_memory: None,
        },
    ]
}

#[test]
fn a_resumed_run_ends_where_an_uninterrupted_one_does() {
    let u0 = random::<f64, 3>(SHAPE, 1);
    let f = random::<f64, 3>(SHAPE, 2);
    for schedule in schedules() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("u.npz");
        let mut whole = u0.clone();
        let full = solver(&f, schedule).max_iterations(29).check_every(4).run(&mut whole).unwrap();

        // Stopped after 17 iterations: the last checkpoint (every 5) holds iterate 15.
        let mut first = u0.clone();
        let checkpoint = Checkpoint::every(5, &path).resume();
        solver(&f, schedule).max_iterations(17).check_every(4).checkpoint(checkpoint.clone()).run(&mut first).unwrap();
        let saved: Saved<f64, 3> = Checkpoint::read(&path).unwrap();
        assert_eq!(saved.iteration, 15, "{schedule}");
        assert_eq!(saved.stencil, "jacobi7");
        let mut fifteen = u0.clone();
        solver(&f, schedule).max_iterations(15).run(&mut fifteen).unwrap();
        assert_eq!(differing(&saved.grid, &fifteen), 0, "{schedule}: the checkpoint is iterate 15");

        // Resumed into a grid that holds anything: the checkpoint replaces it.
        let mut resumed = random::<f64, 3>(SHAPE, 99);
        let report =
            solver(&f, schedule).max_iterations(29).check_every(4).checkpoint(checkpoint).run(&mut resumed).unwrap();
        assert_eq!(differing(&resumed, &whole), 0, "{schedule}");
        assert_eq!((report.iterations, report.resumed_at), (29, Some(15)), "{schedule}");
        assert!(report.to_string().contains("resumed at 15"));
        // The resumed run's residuals are the uninterrupted run's from iteration 16 on, less
        // the extra checks at the checkpoints (iteration 20 and 25).
        let later: Vec<_> = full.residuals.iter().filter(|r| r.iteration > 15).collect();
        let resumed_checks: Vec<_> =
            report.residuals.iter().filter(|r| r.iteration % 5 != 0 || r.iteration % 4 == 0).collect();
        assert_eq!(later.len(), resumed_checks.len(), "{schedule}");
        for (a, b) in later.iter().zip(&resumed_checks) {
            assert_eq!((a.iteration, a.max.to_bits(), a.l2.to_bits()), (b.iteration, b.max.to_bits(), b.l2.to_bits()));
        }
        // Checks fall at the checkpoints too (with `check_every(4)` alone, 20 and 25 are not).
        assert!(report.residuals.iter().any(|r| r.iteration == 25), "{schedule}");
    }
}

#[test]
fn a_resumed_run_converges_at_the_same_iteration_with_a_relative_tolerance() {
    let u0 = random::<f64, 3>(SHAPE, 3);
    let f = random::<f64, 3>(SHAPE, 4);
    let tolerance = Tolerance::Relative { norm: Norm::L2, factor: 1e-3 };
    let mut whole = u0.clone();
    let full = solver(&f, Schedule::Plain).tolerance(tolerance).check_every(10).run(&mut whole).unwrap();
    assert_eq!(full.stop, StopReason::Converged);
    assert!(full.iterations > 40, "{}", full.iterations);

    let dir = tempfile::tempdir().unwrap();
    let checkpoint = Checkpoint::every(20, dir.path().join("u.npz")).resume();
    let mut part = u0.clone();
    solver(&f, Schedule::Plain)
        .tolerance(tolerance)
        .max_iterations(41)
        .checkpoint(checkpoint.clone())
        .run(&mut part)
        .unwrap();
    let mut resumed = u0.clone();
    let report = solver(&f, Schedule::Plain)
        .tolerance(tolerance)
        .check_every(10)
        .checkpoint(checkpoint)
        .run(&mut resumed)
        .unwrap();
    assert_eq!((report.stop, report.iterations, report.resumed_at), (StopReason::Converged, full.iterations, Some(40)));
    assert_eq!(differing(&resumed, &whole), 0);
}

#[test]
fn without_a_file_resume_starts_from_the_grid_given() {
    let u0 = random::<f64, 3>(SHAPE, 5);
    let f = random::<f64, 3>(SHAPE, 6);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fresh.npz");
    let mut u = u0.clone();
    let report = solver(&f, Schedule::Plain)
        .max_iterations(12)
        .checkpoint(Checkpoint::every(6, &path).resume())
        .run(&mut u)
        .unwrap();
    assert_eq!(report.resumed_at, None);
    assert_eq!(Checkpoint::read::<f64, 3>(&path).unwrap().iteration, 12);
    let mut plain = u0.clone();
    solver(&f, Schedule::Plain).max_iterations(12).run(&mut plain).unwrap();
    assert_eq!(differing(&u, &plain), 0);
    assert!(!dir.path().join("fresh.npz.partial").exists());
}

#[test]
fn a_checkpoint_that_is_not_the_runs_is_refused_and_the_grid_kept() {
    let f = random::<f64, 3>(SHAPE, 7);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.npz");
    let mut u = random::<f64, 3>(SHAPE, 8);
    Solver::new(Other)
        .input("f", &f)
        .param("h2", 0.1)
        .max_iterations(4)
        .checkpoint(Checkpoint::every(2, &path))
        .run(&mut u)
        .unwrap();
    let keep = random::<f64, 3>(SHAPE, 9);
    let mut v = keep.clone();
    let err =
        solver(&f, Schedule::Plain).max_iterations(8).checkpoint(Checkpoint::every(2, &path).resume()).run(&mut v);
    assert!(matches!(&err, Err(Error::ReadCheckpoint { reason, .. }) if reason.contains("`other`")), "{err:?}");
    assert_eq!(differing(&v, &keep), 0);

    let small = random::<f64, 3>([5, 5, 5], 10);
    let mut w = small.clone();
    let g = random::<f64, 3>([5, 5, 5], 11);
    let other_path = dir.path().join("v.npz");
    Checkpoint::write(&other_path, &random::<f64, 3>(SHAPE, 1), 3, None, "jacobi7").unwrap();
    let err = solver(&g, Schedule::Plain)
        .max_iterations(8)
        .checkpoint(Checkpoint::every(2, &other_path).resume())
        .run(&mut w);
    assert!(matches!(&err, Err(Error::ReadCheckpoint { reason, .. }) if reason.contains("shape")), "{err:?}");
    // A checkpoint of this stencil and shape without ρ(u⁰) cannot serve a relative tolerance.
    let no_reference = dir.path().join("w.npz");
    Checkpoint::write(&no_reference, &random::<f64, 3>([5, 5, 5], 1), 3, None, "jacobi7").unwrap();
    let err = solver(&g, Schedule::Plain)
        .tolerance(Tolerance::Relative { norm: Norm::Max, factor: 0.1 })
        .checkpoint(Checkpoint::every(2, &no_reference).resume())
        .run(&mut w);
    assert!(matches!(&err, Err(Error::ReadCheckpoint { reason, .. }) if reason.contains("ρ(u⁰)")), "{err:?}");
    let err = solver(&g, Schedule::Plain).max_iterations(8).checkpoint(Checkpoint::every(0, &path)).run(&mut w);
    assert!(matches!(err, Err(Error::InvalidCheckpoint)), "{err:?}");
    assert_eq!(differing(&w, &small), 0);
}

#[test]
fn a_checkpoint_that_cannot_be_written_is_an_error_and_keeps_the_last_one() {
    let u0 = random::<f64, 3>(SHAPE, 12);
    let f = random::<f64, 3>(SHAPE, 13);
    let dir = tempfile::tempdir().unwrap();
    // Found before the run: a missing folder, or a folder where the file would go.
    let missing = dir.path().join("no-such-folder").join("u.npz");
    let blocked = dir.path().join("blocked");
    std::fs::create_dir_all(blocked.join("inside")).unwrap();
    for path in [&missing, &blocked] {
        let mut u = u0.clone();
        let err = solver(&f, Schedule::Plain).max_iterations(8).checkpoint(Checkpoint::every(4, path)).run(&mut u);
        assert!(matches!(err, Err(Error::CheckpointUnwritable { .. })), "{err:?}");
        assert_eq!(differing(&u, &u0), 0, "nothing ran");
    }

    // A good checkpoint at 4; then the partial file of the one at 8 cannot be created (a
    // folder appears in its place): an error that says what the grid holds, and the
    // checkpoint at 4 whole.
    let path = dir.path().join("u.npz");
    let partial = dir.path().join("u.npz.partial");
    let mut u = u0.clone();
    let err = solver(&f, Schedule::Plain)
        .max_iterations(12)
        .check_every(4)
        .checkpoint(Checkpoint::every(4, &path))
        .on_progress(|p| {
            if p.iteration == 8 {
                std::fs::create_dir_all(partial.join("inside")).unwrap();
            }
        })
        .run(&mut u);
    match err {
        Err(Error::Interrupted { holds: Some(8), checkpoint: Some((p, 4)), source }) => {
            assert_eq!(p, path);
            assert!(matches!(*source, Error::Io { .. }), "{source}");
        }
        other => panic!("expected an interrupted run holding iterate 8: {other:?}"),
    }
    assert_eq!(Checkpoint::read::<f64, 3>(&path).unwrap().iteration, 4);
}

#[test]
fn a_resumed_run_may_measure_the_relative_tolerance_in_another_norm() {
    let u0 = random::<f64, 3>(SHAPE, 20);
    let f = random::<f64, 3>(SHAPE, 21);
    let dir = tempfile::tempdir().unwrap();
    let max = Tolerance::Relative { norm: Norm::Max, factor: 1e-3 };
    let l2 = Tolerance::Relative { norm: Norm::L2, factor: 1e-3 };
    let mut whole = u0.clone();
    let full = solver(&f, Schedule::Plain).tolerance(max).check_every(10).run(&mut whole).unwrap();
    // Saved by a run that measured ρ(u⁰) for an L2 tolerance, resumed with an L∞ one.
    let checkpoint = Checkpoint::every(20, dir.path().join("u.npz")).resume();
    solver(&f, Schedule::Plain)
        .tolerance(l2)
        .max_iterations(41)
        .checkpoint(checkpoint.clone())
        .run(&mut u0.clone())
        .unwrap();
    let mut resumed = u0.clone();
    let report =
        solver(&f, Schedule::Plain).tolerance(max).check_every(10).checkpoint(checkpoint).run(&mut resumed).unwrap();
    assert_eq!((report.stop, report.iterations), (StopReason::Converged, full.iterations));
    assert_eq!(differing(&resumed, &whole), 0);
}

#[test]
fn an_out_of_core_pass_stopped_midway_says_which_planes_hold_which_iterate() {
    let u0 = random::<f64, 3>(SHAPE, 14);
    let f = random::<f64, 3>(SHAPE, 15);
    let schedule = Schedule::OutOfCore { slab: Some(4), height: 3, inner: Inner::Plain, device_memory: None };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.npz");
    let iterate = |k: usize| {
        let mut u = u0.clone();
        solver(&f, Schedule::Plain).max_iterations(k).run(&mut u).unwrap();
        u
    };
    let plane = SHAPE[1] * SHAPE[2];
    // The first pass (iterations 1–3) fails after writing back two slabs (planes 1..5 and
    // 5..9): planes below 9 hold iterate 3 (boundary plane 0 never changes), the rest 0.
    let mut u = u0.clone();
    let err = solver(&f, schedule)
        .max_iterations(9)
        .checkpoint(Checkpoint::every(3, &path))
        .fail_after_slabs(2)
        .run(&mut u)
        .unwrap_err();
    let Error::StoppedMidPass { pass_start, pass_end, written_to, planes, checkpoint, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!((*pass_start, *pass_end, *written_to, *planes, checkpoint.clone()), (0, 3, 9, SHAPE[0], None));
    let message = err.to_string();
    assert!(message.contains("not one iterate") && message.contains("injected"), "{message}");
    let (new, old) = (iterate(3), iterate(0));
    let split = written_to * plane;
    assert_eq!(&u.as_slice()[..split], &new.as_slice()[..split]);
    assert_eq!(&u.as_slice()[split..], &old.as_slice()[split..]);

    // Failing before any slab is written back leaves one iterate: the cause alone.
    let mut v = u0.clone();
    let err = solver(&f, schedule).max_iterations(9).fail_after_slabs(0).run(&mut v).unwrap_err();
    assert!(matches!(err, Error::Cuda { .. }), "{err:?}");
    assert_eq!(differing(&v, &u0), 0);
}

#[test]
fn a_pass_stopped_after_a_checkpoint_names_it() {
    let u0 = random::<f64, 3>(SHAPE, 16);
    let f = random::<f64, 3>(SHAPE, 17);
    let schedule = Schedule::OutOfCore { slab: Some(4), height: 3, inner: Inner::Plain, device_memory: None };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.npz");
    // A first run writes checkpoints at 3 and 6; the resumed run fails in its first pass.
    solver(&f, schedule).max_iterations(6).checkpoint(Checkpoint::every(3, &path)).run(&mut u0.clone()).unwrap();
    let err = solver(&f, schedule)
        .max_iterations(12)
        .checkpoint(Checkpoint::every(3, &path).resume())
        .fail_after_slabs(1)
        .run(&mut u0.clone())
        .unwrap_err();
    let Error::StoppedMidPass { pass_start, pass_end, checkpoint, .. } = &err else { panic!("{err:?}") };
    assert_eq!((*pass_start, *pass_end, checkpoint.clone()), (6, 9, Some((path.clone(), 6))));
    assert!(err.to_string().contains("holds iterate 6"), "{err}");
}
