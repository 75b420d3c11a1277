//! Distributed runs (`Plain`, `Tiled`, `Hierarchical` and `OutOfCore` with pyramids or
//! skewed slabs on each rank, and sweep stencils' `Plain` and `Wavefront`) against the
//! single-process `Plain` run (or the same inexact hierarchical schedule, whose iterates are
//! its own), bit for bit, and the errors every rank gets when the ranks disagree. One
//! process per rank, so this binary has no test harness: `.ci/run` starts it with `mpirun -np K` for K = 1 to 4,
//! and it exits with a failure on any rank whose checks fail. Started alone, it is one rank.
//!
//! Every rank also runs the whole problem in one process (the grids are small) and compares
//! its own part, every plane it holds, the gathered grid, the stopping iteration and the
//! residual history. On the CPU always; on the GPU too (exact mode, one GPU per rank) when
//! one is usable, and with `STENCIL_REQUIRE_GPU=1` a missing GPU is a failure.

use std::cell::Cell;
use stencil::builtin::Jacobi7;
use stencil::cuda::Mode;

use stencil::distributed::{Mpi, Subdomain, Transport};
use stencil::prelude::*;
use stencil::{Alternating, Boundaries, Boundary, Error, Report, Residual};

mod common;
use common::{differing, random};
#[path = "mpi/systems.rs"]
mod systems;

thread_local! {
    /// How the ranks of the cases run now move their ghost planes (on GPUs).
    static TRANSPORT: Cell<Transport> = const { Cell::new(Transport::Auto) };
    /// What the checks of the cases run now measure.
    static RESIDUAL: Cell<Residual> = const { Cell::new(Residual::Step) };
}

/// `mpi.split` with the transport of the cases run now.
fn split<'m, S: Stencil<N>, const N: usize>(
    mpi: &'m Mpi,
    stencil: &S,
    shape: [usize; N],
    depth: usize,
) -> stencil::Result<Subdomain<'m, N>> {
    Ok(mpi.split(stencil, shape, depth)?.with_transport(TRANSPORT.get()))
}

stencil! {
    /// Radius 2 along the split axis, a read-only field and a parameter.
    fn wide(mut u: Field2, f: Field2, w: Real) -> Real {
        (u[-2, 0] + u[2, 0] + w * (u[-1, 0] + u[1, 0]) + u[0, -1] + u[0, 1] + f[0, 0]) / (4.0 + 2.0 * w)
    }

    /// Diagonal reads, asymmetric: the corners of the outer layers are read.
    fn corner(mut u: Field2, f: Field2) -> Real {
        (u[-1, -1] + u[1, 1] + u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + 0.5 * u[1, -1] + f[0, 0]) / 6.6
    }

    /// 1-D, no read-only field.
    fn line(mut u: Field1, s: Real) -> Real {
        0.5 * (u[-1] + u[1]) + s
    }

    /// Gauss–Seidel with 9 points, ascending along the cut axis: skewed wavefront tiles.
    sweep(+, +) fn gs9(mut u: Field2, f: Field2, h2: Real) -> Real {
        (4.0 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]) + u[-1, -1] + u[-1, 1] + u[1, -1] + u[1, 1]
            + 6.0 * h2 * f[0, 0]) / 20.0
    }

    /// Radius 2 along the cut axis, ascending.
    sweep(+, -) fn far2(mut u: Field2, f: Field2) -> Real {
        (u[-2, 0] + u[2, 0] + u[-1, 1] + u[1, -1] + u[0, 1] + u[0, -1] + f[0, 0]) / 6.5
    }

    /// 3-D, descending along the cut axis, diagonal and radius-2 reads.
    sweep(-, +, -) fn diag3(mut u: Field3, f: Field3) -> Real {
        (u[1, -1, 0] + u[-1, 1, 0] + u[0, 0, 2] + u[0, 0, -2] + u[0, 1, -1] + u[0, -1, 1]
            + u[-1, 0, 0] + u[1, 0, 0] + u[1, 1, 0] + u[-1, -1, 0] + f[0, 0, 0]) / 10.25
    }

    /// 1-D, descending, radius 2.
    sweep(-) fn back_line(mut u: Field1, f: Field1) -> Real {
        (u[1] + u[-1] + 0.5 * u[2] + 0.25 * u[-2] + f[0]) / 2.8
    }

    /// The two half-steps of an alternating-triangular step in 2-D: up the cut axis, then
    /// down it (the opposite directions on both axes).
    sweep(+, -) fn up_half(mut u: Field2, q: Field2, tau: Real) -> Real {
        (u[0, 0] * (1.0 - tau) + 0.5 * tau * (1.5 * u[-1, 0] + u[0, 1] + u[1, 0] + 0.5 * u[0, -1] + q[0, 0]))
            / (1.0 + 1.5 * tau)
    }
    sweep(-, +) fn down_half(mut u: Field2, q: Field2, tau: Real) -> Real {
        (u[0, 0] * (1.0 - 1.5 * tau) + 0.5 * tau * (u[1, 0] + 0.5 * u[0, -1] + 1.5 * u[-1, 0] + u[0, 1] + q[0, 0]))
            / (1.0 + tau)
    }

    /// Two 3-D stencils sweeping the cut axis the same way (radius 1 and 2 on it).
    sweep(+, -, +) fn near3(mut u: Field3, q: Field3, tau: Real) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0] + u[0, 1, 0] + u[0, -1, 0] + u[0, 0, 1] + u[0, 0, -1] + tau * q[0, 0, 0]) / 6.5
    }
    sweep(+, +, -) fn far3(mut u: Field3, q: Field3, tau: Real) -> Real {
        (u[-2, 0, 0] + u[2, 0, 0] + u[-1, 1, 0] + u[1, -1, 0] + u[0, 0, 1] + u[0, 0, -1] + tau * q[0, 0, 0]) / 6.25
    }

    /// 1-D, radius 2 one way and radius 1 back.
    sweep(+) fn right_line(mut u: Field1, q: Field1, tau: Real) -> Real {
        (u[-2] + u[-1] + u[1] + 0.5 * u[2] + tau * q[0]) / 3.6
    }
    sweep(-) fn left_line(mut u: Field1, q: Field1, tau: Real) -> Real {
        (u[1] + u[-1] + tau * q[0]) / 2.1
    }
}

/// One problem: a stencil, a global shape, its input field (if any) and parameters, and the
/// stopping rules.
struct Case<'p, S, const N: usize> {
    name: &'p str,
    stencil: S,
    shape: [usize; N],
    input: &'p str,
    params: &'p [(&'p str, f64)],
    max_iterations: usize,
    tolerance: Option<Tolerance>,
    /// `None`: the schedule's default period.
    check_every: Option<usize>,
    /// The schedule of the distributed run (the single-process run is `Plain`, or the same
    /// schedule for an inexact hierarchical one, whose iterates are its own).
    schedule: Schedule,
    boundaries: Boundaries<N>,
}

/// Whether `schedule` is an inexact hierarchical one for `S`.
fn inexact<S: Stencil<N>, const N: usize>(schedule: Schedule) -> bool {
    matches!(schedule, Schedule::Hierarchical { .. }) && !schedule.is_exact_blocking(S::META)
}

impl<S: Stencil<N>, const N: usize> Case<'_, S, N> {
    fn solver<'a, T: Real>(&self, f: Option<&'a Grid<T, N>>, backend: Backend) -> Solver<'a, S, T, N> {
        let mut solver =
            Solver::new(self.stencil).backend(backend).mode(Mode::Exact).max_iterations(self.max_iterations);
        solver = solver.boundaries(self.boundaries).residual(RESIDUAL.get());
        if let Some(m) = self.check_every {
            solver = solver.check_every(m);
        }
        if let Some(tolerance) = self.tolerance {
            solver = solver.tolerance(tolerance);
        }
        if let Some(f) = f {
            solver = solver.input(self.input, f);
        }
        for &(name, value) in self.params {
            solver = solver.param(name, value);
        }
        solver
    }

    /// The distributed run against the single-process one, for halo depth `depth`.
    fn check<T: Real>(&self, mpi: &Mpi, depth: usize, backend: Backend) -> Result<(), String> {
        let u0 = random::<T, N>(self.shape, 1);
        let f = (!self.input.is_empty()).then(|| random::<T, N>(self.shape, 2));
        let mut reference = u0.clone();
        // `Plain`, checked when the schedule checks (a hierarchical one: once per cycle; an
        // out-of-core one: once per pass, which ends at every exchange).
        let one_process = if inexact::<S, N>(self.schedule) { self.schedule } else { Schedule::Plain };
        let mut plain = self.solver(f.as_ref(), Backend::Cpu).schedule(one_process);
        match (self.check_every, self.schedule) {
            (None, Schedule::Hierarchical { sub, .. } | Schedule::Streaming { sub, .. }) => {
                plain = plain.check_every(sub)
            }
            (None, Schedule::OutOfCore { height, .. }) => plain = plain.check_every(height.min(depth)),
            _ => {}
        }
        let expected = plain.run(&mut reference).map_err(|e| e.to_string())?;

        let sub = split(mpi, &self.stencil, self.shape, depth).map_err(|e| e.to_string())?;
        let mut u = sub.local_part(&u0).map_err(|e| e.to_string())?;
        let local_f = f.as_ref().map(|f| sub.local_part(f).unwrap());
        let report = self
            .solver(local_f.as_ref(), backend)
            .schedule(self.schedule)
            .distributed(&sub)
            .run(&mut u)
            .map_err(|e| format!("the distributed run failed: {e}"))?;
        compare(&sub, &reference, &expected, &u, &report)
    }
}

/// The stopping iteration and reason, and the L∞ residual history, of both runs.
fn same_run(report: &Report, expected: &Report) -> Result<(), String> {
    if (report.iterations, report.stop) != (expected.iterations, expected.stop) {
        return Err(format!(
            "stopped after {} iterations ({:?}), one process after {} ({:?})",
            report.iterations, report.stop, expected.iterations, expected.stop
        ));
    }
    let history = |r: &Report| r.residuals.iter().map(|s| (s.iteration, s.max.to_bits())).collect::<Vec<_>>();
    if history(report) != history(expected) {
        return Err(format!(
            "L∞ residual history {:?}, one process {:?}",
            report.residuals.iter().map(|s| (s.iteration, s.max)).collect::<Vec<_>>(),
            expected.residuals.iter().map(|s| (s.iteration, s.max)).collect::<Vec<_>>()
        ));
    }
    Ok(())
}

/// Everything a distributed run must share with the single-process run.
fn compare<T: Real, const N: usize>(
    sub: &Subdomain<'_, N>,
    reference: &Grid<T, N>,
    expected: &Report,
    u: &Grid<T, N>,
    report: &Report,
) -> Result<(), String> {
    same_run(report, expected)?;
    // Every plane this rank holds (own, ghost and boundary) holds the last iterate. The
    // gather is collective: every rank takes part in it, whatever it found.
    let part = sub.local_part(reference).unwrap();
    let wrong = differing(&part, u);
    let gathered = sub.gather(u, 0).map_err(|e| e.to_string())?;
    if wrong > 0 {
        let planes: Vec<usize> = (0..u.shape()[0])
            .filter(|&p| {
                let row = |g: &Grid<T, N>| g.as_slice().chunks(g.len() / g.shape()[0]).nth(p).unwrap().to_vec();
                row(&part).iter().zip(row(u)).any(|(a, b)| a.to_f64().to_bits() != b.to_f64().to_bits())
            })
            .collect();
        return Err(format!(
            "{wrong} of {} local values differ from the one-process run, in local planes {planes:?}",
            u.len()
        ));
    }
    match gathered {
        Some(global) if differing(&global, reference) > 0 => {
            Err(format!("the gathered grid differs in {} points", differing(&global, reference)))
        }
        _ => Ok(()),
    }
}

/// Expects `outcome` to be an error whose message contains `needle`.
fn expect_error<X>(outcome: Result<X, Error>, needle: &str) -> Result<(), String> {
    match outcome {
        Ok(_) => Err(format!("expected an error containing {needle:?}, the run succeeded")),
        Err(e) if e.to_string().contains(needle) => Ok(()),
        Err(e) => Err(format!("expected an error containing {needle:?}, got: {e}")),
    }
}

/// The errors of a problem that differs between ranks: every rank gets one, none hangs.
fn disagreements(mpi: &Mpi) -> Vec<(String, Result<(), String>)> {
    let (rank, ranks) = (mpi.rank(), mpi.size());
    let shape = [20, 6, 5];
    let mut results = Vec::new();
    let sub = mpi.split(&Jacobi7, shape, 2).unwrap();
    let f = sub.local_grid(|_| 1.0f64).unwrap();
    let solver = |h2: f64| Solver::new(Jacobi7).input("f", &f).param("h2", h2).max_iterations(4).distributed(&sub);

    // Ranks with different parameters (with one rank, nothing can differ).
    let mut u = sub.local_grid(|_| 0.0f64).unwrap();
    let outcome = solver(if rank == ranks - 1 && ranks > 1 { 2.0 } else { 1.0 }).run(&mut u);
    let needle = if ranks > 1 { "the ranks disagree on the scalar parameters" } else { "" };
    results.push((
        "different parameters".into(),
        if ranks > 1 { expect_error(outcome, needle) } else { outcome.map(|_| ()).map_err(|e| e.to_string()) },
    ));

    // One rank's grid of the wrong shape: that rank's own error, `RankFailed` elsewhere.
    let mut wrong = Grid::<f64, 3>::zeros([sub.local_shape()[0] + 1, 6, 5]).unwrap();
    let mut right = sub.local_grid(|_| 0.0f64).unwrap();
    let last = ranks - 1;
    let outcome = if rank == last { solver(1.0).run(&mut wrong) } else { solver(1.0).run(&mut right) };
    let needle = if rank == last { "has shape".to_owned() } else { format!("rank {last} could not start") };
    results.push(("one rank's grid of the wrong shape".into(), expect_error(outcome, &needle)));

    // Ranks asking for different halo depths, and a cut with too many ranks.
    if ranks > 1 {
        let outcome = mpi.split(&Jacobi7, shape, if rank == 0 { 1 } else { 2 });
        results.push(("different depths".into(), expect_error(outcome, "the ranks disagree on the halo depth")));
        let outcome = mpi.split(&Jacobi7, [2 * ranks + 1, 4, 4], 3);
        results.push(("too many ranks".into(), expect_error(outcome, "fewer than the 3 ghost planes")));
    }

    // An inexact hierarchical schedule with too few ghost planes for its tiles is refused on
    // every rank.
    let refused = [(
        "an inexact hierarchical schedule with too few ghost planes",
        Schedule::Hierarchical { tile: 8, halo: 2, sub: 3 },
        "tile − 1 + halo = 9 planes beyond them; the split has 2 ghost planes (depth 2 · radius 1): split with \
             depth ≥ 9",
    )];
    for (name, schedule, needle) in refused {
        let mut u = sub.local_grid(|_| 0.0f64).unwrap();
        let outcome = Solver::new(Jacobi7)
            .input("f", &f)
            .param("h2", 1.0)
            .max_iterations(4)
            .schedule(schedule)
            .distributed(&sub)
            .run(&mut u);
        results.push((name.into(), expect_error(outcome, needle)));
    }
    results
}

/// Axis 0 periodic across the cut: the last rank's planes are the first rank's ghost planes
/// below and the first rank's the last rank's above, in 1-D to 3-D, with the other axes
/// periodic or Neumann and corners read; a deeper split exchanges at every iteration.
fn periodic_cut_cases(mpi: &Mpi, backend: Backend, results: &mut Vec<(String, Result<(), String>)>) {
    let kind = if backend == Backend::Cpu { "cpu" } else { "cuda" };
    let jacobi7 = |schedule| Case {
        name: "",
        stencil: Jacobi7,
        shape: [23, 9, 11],
        input: "f",
        params: &[("h2", 0.01)],
        max_iterations: 9,
        tolerance: None,
        check_every: Some(4),
        schedule,
        boundaries: Boundaries::all(Boundary::Periodic),
    };
    let slabs = Schedule::OutOfCore { slab: Some(2), height: 3, inner: Inner::Plain, device_memory: None };
    let exact = Schedule::Hierarchical { tile: 4, halo: 3, sub: 3 };
    for (name, schedule) in [("plain", Schedule::Plain), ("tiled", Schedule::Tiled), ("out-of-core", slabs)] {
        let case = jacobi7(schedule);
        results.push((format!("{kind} f64 jacobi7 {name}, periodic"), case.check::<f64>(mpi, 1, backend)));
        results.push((format!("{kind} f32 jacobi7 {name}, periodic"), case.check::<f32>(mpi, 1, backend)));
    }
    // Deeper splits: the other cuts carry all their ghost planes, and every local plane
    // holds the last iterate.
    let streaming = Schedule::Streaming { tile: 4, sub: 3 };
    for (name, schedule) in
        [("plain", Schedule::Plain), ("out-of-core", slabs), ("hierarchical", exact), ("streaming", streaming)]
    {
        let case = jacobi7(schedule);
        results.push((format!("{kind} f64 jacobi7 {name}, periodic, depth 3"), case.check::<f64>(mpi, 3, backend)));
    }
    let corner = |boundaries, schedule| Case {
        name: "",
        stencil: Corner,
        shape: [31, 12],
        input: "f",
        params: &[],
        max_iterations: 40,
        tolerance: Some(Tolerance::Relative { norm: Norm::L2, factor: 0.5 }),
        check_every: Some(3),
        schedule,
        boundaries,
    };
    let wrapped_neumann = Boundaries::all(Boundary::Neumann).axis(0, Boundary::Periodic);
    for (name, boundaries) in
        [("periodic", Boundaries::all(Boundary::Periodic)), ("periodic cut axis, Neumann walls", wrapped_neumann)]
    {
        for schedule in [Schedule::Plain, Schedule::Tiled] {
            let case = corner(boundaries, schedule);
            let label = format!("{kind} f64 corner reads {schedule}, {name}");
            results.push((label, case.check::<f64>(mpi, 1, backend)));
        }
    }
    let wide = Case {
        name: "",
        stencil: Wide,
        shape: [41, 13],
        input: "f",
        params: &[("w", 3.0)],
        max_iterations: 12,
        tolerance: None,
        check_every: Some(5),
        schedule: Schedule::Plain,
        boundaries: Boundaries::all(Boundary::Periodic).axis(1, Boundary::Neumann),
    };
    results.push((format!("{kind} f64 radius 2, periodic cut axis"), wide.check::<f64>(mpi, 1, backend)));
    results.push((format!("{kind} f64 radius 2, periodic cut axis, depth 2"), wide.check::<f64>(mpi, 2, backend)));
    let line = Case {
        name: "",
        stencil: Line,
        shape: [50],
        input: "",
        params: &[("s", 0.125)],
        max_iterations: 20,
        tolerance: None,
        check_every: Some(5),
        schedule: Schedule::Plain,
        boundaries: Boundaries::all(Boundary::Periodic),
    };
    results.push((format!("{kind} f64 1-D, periodic"), line.check::<f64>(mpi, 1, backend)));
}

/// A non-finite value found at a check is the same error, at the same point and
/// iteration, on every rank as in one process.
fn non_finite(mpi: &Mpi, backend: Backend, schedule: Schedule) -> Result<(), String> {
    let shape = [19, 5, 4];
    let f =
        Grid::<f64, 3>::from_fn(shape, |[i, j, k]| if [i, j, k] == [16, 2, 2] { f64::INFINITY } else { 1.0 }).unwrap();
    let solver =
        |f| Solver::new(Jacobi7).input("f", f).param("h2", 1.0).max_iterations(9).check_every(4).backend(backend);
    let one_process = if inexact::<Jacobi7, 3>(schedule) { schedule } else { Schedule::Plain };
    let expected = solver(&f)
        .backend(Backend::Cpu)
        .schedule(one_process)
        .run(&mut Grid::zeros(shape).unwrap())
        .unwrap_err()
        .to_string();
    let sub = mpi.split(&Jacobi7, shape, 3).map_err(|e| e.to_string())?;
    let local_f = sub.local_part(&f).unwrap();
    let mut u = sub.local_grid(|_| 0.0f64).unwrap();
    let found =
        solver(&local_f).schedule(schedule).distributed(&sub).run(&mut u).map(|_| ()).map_err(|e| e.to_string());
    match found {
        Err(message) if message == expected => Ok(()),
        other => Err(format!("expected `{expected}`, got {other:?}")),
    }
}

/// Sweep stencils, ascending and descending along the cut axis, of radius 1 and 2: the
/// sequential sweep (`Plain`) and wavefronts on each rank, against one process's `Plain`.
fn sweep_cases(mpi: &Mpi, backend: Backend, depth: usize, results: &mut Vec<(String, Result<(), String>)>) {
    let kind = if backend == Backend::Cpu { "cpu" } else { "cuda" };
    let absolute = Some(Tolerance::Absolute { norm: Norm::Max, eps: 1e-3 });
    let relative = Some(Tolerance::Relative { norm: Norm::L2, factor: 0.01 });
    let wavefront = |tile| Schedule::Wavefront { tile };
    let mut record = |name: String, outcome| results.push((format!("{kind} {name} depth {depth}"), outcome));
    let gs9 = |max_iterations, tolerance, check_every, schedule| Case {
        name: "gs9",
        stencil: Gs9,
        shape: [41, 13],
        input: "f",
        params: &[("h2", 0.01)],
        max_iterations,
        tolerance,
        check_every,
        schedule,
        boundaries: Boundaries::default(),
    };
    for (name, case) in [
        ("gs9 sweeps to a relative tolerance", gs9(400, relative, Some(3), Schedule::Plain)),
        ("gs9 wavefront (tile 4), 10 sweeps", gs9(10, None, Some(4), wavefront(4))),
        ("gs9 wavefront, default period, 150 sweeps", gs9(150, None, None, Schedule::Auto)),
    ] {
        record(format!("f64 {name}"), case.check::<f64>(mpi, depth, backend));
        record(format!("f32 {name}"), case.check::<f32>(mpi, depth, backend));
    }
    let far2 = |tolerance, schedule| Case {
        name: "far2",
        stencil: Far2,
        shape: [41, 13],
        input: "f",
        params: &[],
        max_iterations: 300,
        tolerance,
        check_every: Some(2),
        schedule,
        boundaries: Boundaries::default(),
    };
    record("f64 radius-2 sweeps, 300".into(), far2(None, Schedule::Plain).check::<f64>(mpi, depth, backend));
    record(
        "f64 radius-2 wavefront to an absolute tolerance".into(),
        far2(absolute, wavefront(3)).check::<f64>(mpi, depth, backend),
    );
    // Neumann across the cut axis (filled by the end ranks only), periodic along the other:
    // the planes passed between ranks carry the layers one process fills.
    let channel = Boundaries::all(Boundary::Periodic).axis(0, Boundary::Neumann);
    let bounded = Case { boundaries: channel, ..gs9(60, None, Some(7), wavefront(4)) };
    record("f64 gs9 wavefront in a periodic channel".into(), bounded.check::<f64>(mpi, depth, backend));
    let bounded = Case { boundaries: channel, ..gs9(200, relative, Some(3), Schedule::Plain) };
    record("f32 gs9 sweeps in a periodic channel to a tolerance".into(), bounded.check::<f32>(mpi, depth, backend));
    let bounded = Case { boundaries: channel, ..far2(None, Schedule::Plain) };
    record("f64 radius-2 sweeps in a periodic channel".into(), bounded.check::<f64>(mpi, depth, backend));
    if depth == 1 {
        // With 3 or 4 ranks a rank owns fewer than 2 · radius planes: its first planes read
        // the later neighbour's.
        let narrow = Case { shape: [13, 9], max_iterations: 40, check_every: Some(3), ..far2(None, wavefront(2)) };
        record("f64 radius-2 wavefront on narrow parts".into(), narrow.check::<f64>(mpi, depth, backend));
    }
    let diag3 = |max_iterations, tolerance, schedule| Case {
        name: "diag3",
        stencil: Diag3,
        shape: [23, 9, 11],
        input: "f",
        params: &[],
        max_iterations,
        tolerance,
        check_every: Some(3),
        schedule,
        boundaries: Boundaries::default(),
    };
    record("f64 3-D descending sweeps, 7".into(), diag3(7, None, Schedule::Plain).check::<f64>(mpi, depth, backend));
    record(
        "f32 3-D descending wavefront to an absolute tolerance".into(),
        diag3(500, absolute, wavefront(4)).check::<f32>(mpi, depth, backend),
    );
    let line = |schedule| Case {
        name: "back_line",
        stencil: BackLine,
        shape: [50],
        input: "f",
        params: &[],
        max_iterations: 20,
        tolerance: relative,
        check_every: Some(5),
        schedule,
        boundaries: Boundaries::default(),
    };
    record("f64 1-D descending sweeps".into(), line(Schedule::Plain).check::<f64>(mpi, depth, backend));
    record("f64 1-D descending wavefront".into(), line(wavefront(8)).check::<f64>(mpi, depth, backend));
    if depth == 1 {
        periodic_sweep_cases(mpi, backend, results);
    }
}

/// A case of `periodic_sweep_cases`: periodic on every axis, the input `f`, checked every 3
/// sweeps, `h2` where the stencil has it.
fn case<S: Stencil<N>, const N: usize>(
    name: &'static str,
    stencil: S,
    shape: [usize; N],
    max_iterations: usize,
    tolerance: Option<Tolerance>,
    schedule: Schedule,
) -> Case<'static, S, N> {
    let params: &'static [(&'static str, f64)] = if S::META.params.is_empty() { &[] } else { &[("h2", 0.01)] };
    Case {
        name,
        stencil,
        shape,
        input: "f",
        params,
        max_iterations,
        tolerance,
        check_every: Some(3),
        schedule,
        boundaries: Boundaries::all(Boundary::Periodic),
    }
}

/// Sweeps across a periodic cut of axis 0 (the split's depth is 1 there whatever it is):
/// the first rank of each sweep reads the last rank's planes as the sweep before left them.
fn periodic_sweep_cases(mpi: &Mpi, backend: Backend, results: &mut Vec<(String, Result<(), String>)>) {
    let kind = if backend == Backend::Cpu { "cpu" } else { "cuda" };
    let relative = Some(Tolerance::Relative { norm: Norm::L2, factor: 0.01 });
    let mut record = |name: &str, outcome| results.push((format!("{kind} {name} across a periodic cut"), outcome));
    let wavefront = |tile| Schedule::Wavefront { tile };
    for (name, c) in [
        ("f64 gs9 sweeps, 11", case("gs9", Gs9, [41, 13], 11, None, Schedule::Plain)),
        ("f64 gs9 sweeps to a relative tolerance", case("gs9", Gs9, [41, 13], 300, relative, Schedule::Plain)),
        ("f64 gs9 wavefront (tile 4), 10", case("gs9", Gs9, [41, 13], 10, None, wavefront(4))),
        ("f32 gs9 wavefront in a periodic box", case("gs9", Gs9, [24, 9], 13, None, wavefront(3))),
    ] {
        let outcome =
            if name.starts_with("f32") { c.check::<f32>(mpi, 1, backend) } else { c.check::<f64>(mpi, 1, backend) };
        record(name, outcome);
    }
    let far2 = |shape, schedule| case("far2", Far2, shape, 17, None, schedule);
    record("f64 radius-2 sweeps", far2([41, 13], Schedule::Plain).check::<f64>(mpi, 1, backend));
    // With 3 or 4 ranks a rank owns fewer than 2 · radius planes.
    record("f64 radius-2 wavefront on narrow parts", far2([13, 9], wavefront(2)).check::<f64>(mpi, 1, backend));
    // Descending along the cut: the last rank sweeps first; Neumann walls on the other axes.
    let walls = Boundaries::all(Boundary::Neumann).axis(0, Boundary::Periodic);
    let diag3 = Case { boundaries: walls, ..case("diag3", Diag3, [23, 9, 11], 7, None, Schedule::Plain) };
    record("f64 3-D descending sweeps between Neumann walls", diag3.check::<f64>(mpi, 1, backend));
    let line = case("back_line", BackLine, [50], 20, relative, wavefront(8));
    record("f64 1-D descending wavefront, radius 2", line.check::<f64>(mpi, 1, backend));
}

/// Inexact hierarchical schedules (halo < sub · radius): every rank computes the whole
/// grid's tiles that meet its planes, one cycle or several between exchanges, against one
/// process running the same schedule.
fn inexact_cases(mpi: &Mpi, backend: Backend, results: &mut Vec<(String, Result<(), String>)>) {
    let kind = if backend == Backend::Cpu { "cpu" } else { "cuda" };
    let absolute = Some(Tolerance::Absolute { norm: Norm::Max, eps: 0.05 });
    let relative = Some(Tolerance::Relative { norm: Norm::Max, factor: 0.2 });
    let hier = |tile, halo, sub| Schedule::Hierarchical { tile, halo, sub };
    let mut record = |name: String, outcome| results.push((format!("{kind} {name}"), outcome));
    let jacobi = |max_iterations, tolerance, check_every, schedule| Case {
        name: "jacobi7",
        stencil: Jacobi7,
        shape: [41, 9, 11],
        input: "f",
        params: &[("h2", 0.01)],
        max_iterations,
        tolerance,
        check_every,
        schedule,
        boundaries: Boundaries::default(),
    };
    // Tiles of 2 with a halo of 2 read 3 planes beyond: depth 3 holds one cycle between
    // exchanges, 6 two and 9 three.
    for depth in [3, 6, 9] {
        for (name, case) in [
            ("20 iterations, checked every 5", jacobi(20, None, Some(5), hier(2, 2, 3))),
            ("to an absolute tolerance", jacobi(500, absolute, None, hier(2, 2, 3))),
        ] {
            let name = format!("jacobi7 inexact hierarchical (tile 2, halo 2, sub 3) {name} depth {depth}");
            record(format!("f64 {name}"), case.check::<f64>(mpi, depth, backend));
            record(format!("f32 {name}"), case.check::<f32>(mpi, depth, backend));
        }
    }
    for depth in [4, 8] {
        let case = jacobi(13, None, Some(4), hier(4, 1, 2));
        let name = format!("jacobi7 inexact hierarchical (tile 4, halo 1, sub 2), 13 iterations depth {depth}");
        record(format!("f64 {name}"), case.check::<f64>(mpi, depth, backend));
    }
    let wide = Case {
        name: "wide",
        stencil: Wide,
        shape: [41, 13],
        input: "f",
        params: &[("w", 3.0)],
        max_iterations: 300,
        tolerance: relative,
        check_every: Some(3),
        schedule: hier(3, 2, 2),
        boundaries: Boundaries::default(),
    };
    for depth in [2, 4] {
        let name = format!("f64 radius 2 in 2-D inexact hierarchical to a relative tolerance depth {depth}");
        record(name, wide.check::<f64>(mpi, depth, backend));
    }
    let channel = Case { boundaries: Boundaries::all(Boundary::Periodic).axis(0, Boundary::Neumann), ..wide };
    let name = "f64 radius 2 in 2-D inexact hierarchical in a periodic channel depth 4";
    record(name.into(), channel.check::<f64>(mpi, 4, backend));
    let line = Case {
        name: "line",
        stencil: Line,
        shape: [50],
        input: "",
        params: &[("s", 0.125)],
        max_iterations: 30,
        tolerance: None,
        check_every: Some(5),
        schedule: hier(5, 2, 4),
        boundaries: Boundaries::default(),
    };
    for depth in [6, 12] {
        record(format!("f64 1-D inexact hierarchical depth {depth}"), line.check::<f64>(mpi, depth, backend));
    }
}

/// `Alternating` steps of `A` then `B` on `shape` (split with `split`'s radius), one
/// process's `Plain` steps against the distributed ones under `schedule`: every plane a rank
/// holds and the gathered grid, bit for bit.
fn alternating<A: Stencil<N>, B: Stencil<N>, S: Stencil<N>, T: Real, const N: usize>(
    mpi: &Mpi,
    (first, second, split): (A, B, S),
    params: (A::Params<T>, B::Params<T>),
    (shape, steps): ([usize; N], usize),
    (backend, schedule, depth): (Backend, Schedule, usize),
) -> Result<(), String> {
    let u0 = random::<T, N>(shape, 1);
    let q = random::<T, N>(shape, 2);
    let mut reference = u0.clone();
    let mut one_process = Alternating::new(first, params.0, second, params.1).input("q", &q).schedule(Schedule::Plain);
    one_process.run(&mut reference, steps).map_err(|e| e.to_string())?;
    let sub = mpi.split(&split, shape, depth).map_err(|e| e.to_string())?;
    let mut u = sub.local_part(&u0).map_err(|e| e.to_string())?;
    let local_q = sub.local_part(&q).unwrap();
    let mut called = 0;
    let report = Alternating::new(first, params.0, second, params.1)
        .input("q", &local_q)
        .backend(backend)
        .schedule(schedule)
        .mode(Mode::Exact)
        .on_step(|_, _| called += 1)
        .distributed(&sub)
        .run(&mut u, steps)
        .map_err(|e| format!("the distributed steps failed: {e}"))?;
    if report.steps != steps || called == 0 {
        return Err(format!("{} steps reported and {called} callbacks for {steps} steps", report.steps));
    }
    let wrong = differing(&sub.local_part(&reference).unwrap(), &u);
    if wrong > 0 {
        return Err(format!("{wrong} of {} local values differ from the one-process steps", u.len()));
    }
    match sub.gather(&u, 0).map_err(|e| e.to_string())? {
        Some(global) if differing(&global, &reference) > 0 => {
            Err(format!("the gathered grid differs in {} points", differing(&global, &reference)))
        }
        _ => Ok(()),
    }
}

/// Alternating steps across ranks: opposite directions on the cut axis (2-D and 1-D, radius
/// 1 and 2) and the same direction (3-D), sequential sweeps and wavefronts on each rank;
/// and the errors of a split for the smaller radius and of ranks running different steps.
fn alternating_cases(mpi: &Mpi, backend: Backend, results: &mut Vec<(String, Result<(), String>)>) {
    let kind = if backend == Backend::Cpu { "cpu" } else { "cuda" };
    let wavefront = |tile| Schedule::Wavefront { tile };
    for depth in 1..=2 {
        let mut record =
            |name: &str, outcome| results.push((format!("{kind} alternating {name} depth {depth}"), outcome));
        let (up, down) = (UpHalfParams { tau: 0.3 }, DownHalfParams { tau: 0.3 });
        let pair = (UpHalf, DownHalf, UpHalf);
        for (name, schedule) in
            [("2-D up and down, 9 steps", Schedule::Plain), ("2-D wavefront (tile 4)", wavefront(4))]
        {
            record(
                &format!("f64 {name}"),
                alternating::<_, _, _, f64, 2>(mpi, pair, (up, down), ([31, 12], 9), (backend, schedule, depth)),
            );
        }
        let (up, down) = (UpHalfParams { tau: 0.3f32 }, DownHalfParams { tau: 0.3f32 });
        record(
            "f32 2-D default schedule",
            alternating::<_, _, _, f32, 2>(mpi, pair, (up, down), ([31, 12], 6), (backend, Schedule::Auto, depth)),
        );
        let (near, far) = (Near3Params { tau: 0.5 }, Far3Params { tau: 0.25 });
        record(
            "f64 3-D the same way, radius 1 and 2",
            alternating::<_, _, _, f64, 3>(
                mpi,
                (Near3, Far3, Far3),
                (near, far),
                ([27, 7, 6], 8),
                (backend, Schedule::Plain, depth),
            ),
        );
        record(
            "f64 3-D wavefront (tile 3)",
            alternating::<_, _, _, f64, 3>(
                mpi,
                (Far3, Near3, Far3),
                (far, near),
                ([27, 7, 6], 5),
                (backend, wavefront(3), depth),
            ),
        );
        let (right, left) = (RightLineParams { tau: 0.5 }, LeftLineParams { tau: 0.5 });
        record(
            "f64 1-D radius 2 and 1",
            alternating::<_, _, _, f64, 1>(
                mpi,
                (RightLine, LeftLine, RightLine),
                (right, left),
                ([60], 12),
                (backend, Schedule::Plain, depth),
            ),
        );
        if depth == 1 {
            // With 3 or 4 ranks a rank owns fewer than 2 · radius planes.
            record(
                "f64 1-D on narrow parts",
                alternating::<_, _, _, f64, 1>(
                    mpi,
                    (RightLine, LeftLine, RightLine),
                    (right, left),
                    ([13], 7),
                    (backend, wavefront(8), depth),
                ),
            );
        }
    }
    let (near, far) = (Near3Params { tau: 0.5 }, Far3Params { tau: 0.25 });
    let needle = "split with the stencil of the larger radius";
    let outcome = alternating::<_, _, _, f64, 3>(
        mpi,
        (Near3, Far3, Near3),
        (near, far),
        ([27, 7, 6], 2),
        (backend, Schedule::Plain, 2),
    );
    let outcome = match outcome {
        Err(message) if message.contains(needle) => Ok(()),
        Err(message) => Err(format!("expected an error containing {needle:?}, got: {message}")),
        Ok(()) => Err(format!("expected an error containing {needle:?}, the steps ran")),
    };
    results.push((format!("{kind} alternating split for the smaller radius"), outcome));
    if mpi.size() > 1 {
        let sub = mpi.split(&UpHalf, [31, 12], 1).unwrap();
        let q = sub.local_grid(|_| 1.0f64).unwrap();
        let mut u = sub.local_grid(|_| 0.0f64).unwrap();
        let steps = if mpi.rank() == 0 { 3 } else { 4 };
        let outcome = Alternating::new(UpHalf, UpHalfParams { tau: 0.3 }, DownHalf, DownHalfParams { tau: 0.3 })
            .input("q", &q)
            .backend(backend)
            .distributed(&sub)
            .run(&mut u, steps);
        results.push((
            format!("{kind} alternating with different steps"),
            expect_error(outcome, "the ranks disagree on the number of steps"),
        ));
    }
}

/// A non-finite value found at a sweep's check is the same error on every rank as in one
/// process on the same backend (the CPU looks at the iterate, the GPU at S(u)).
fn sweep_non_finite(mpi: &Mpi, backend: Backend) -> Result<(), String> {
    let shape = [26, 7];
    let f = Grid::<f64, 2>::from_fn(shape, |[i, j]| if [i, j] == [17, 3] { f64::INFINITY } else { 1.0 }).unwrap();
    let solver = |f| {
        Solver::new(Gs9)
            .input("f", f)
            .param("h2", 1.0)
            .max_iterations(9)
            .check_every(4)
            .backend(backend)
            .mode(Mode::Exact)
    };
    let expected = solver(&f).run(&mut Grid::zeros(shape).unwrap()).unwrap_err().to_string();
    let sub = mpi.split(&Gs9, shape, 2).map_err(|e| e.to_string())?;
    let local_f = sub.local_part(&f).unwrap();
    let mut u = sub.local_grid(|_| 0.0f64).unwrap();
    let found = solver(&local_f).distributed(&sub).run(&mut u).map(|_| ()).map_err(|e| e.to_string());
    match found {
        Err(message) if message == expected => Ok(()),
        other => Err(format!("expected `{expected}`, got {other:?}")),
    }
}

/// The cases above run with `Transport::Auto` (NCCL where it can be used): some of them again
/// with the planes through the host, and with NCCL asked for, which runs where every rank has
/// a GPU of its own and the library, and else is the same error on every rank.
fn transport_cases(mpi: &Mpi, backend: Backend, results: &mut Vec<(String, Result<(), String>)>) {
    let kind = if backend == Backend::Cpu { "cpu" } else { "cuda" };
    let jacobi = |name, schedule| Case {
        name,
        stencil: Jacobi7,
        shape: [23, 9, 11],
        input: "f",
        params: &[("h2", 0.01)],
        max_iterations: 9,
        tolerance: None,
        check_every: Some(4),
        schedule,
        boundaries: Boundaries::default(),
    };
    let hier = Schedule::Hierarchical { tile: 4, halo: 3, sub: 3 };
    let periodic = Case {
        boundaries: Boundaries::all(Boundary::Periodic),
        ..jacobi("jacobi7 in a periodic box", Schedule::Plain)
    };
    let cases = [jacobi("jacobi7", Schedule::Plain), jacobi("jacobi7 hierarchical", hier), periodic];
    let (ranks, gpus) = (mpi.size(), stencil::cuda::device_count());
    // The reason every rank gives when NCCL cannot be used.
    let unusable = match backend {
        _ if ranks == 1 => None,
        Backend::Cpu => Some("rank 0 runs on the CPU".to_owned()),
        _ if !stencil::cuda::nccl_available() => Some("rank 0 cannot load libnccl.so".to_owned()),
        _ if mpi.node_size() > gpus => Some(format!("ranks 0 and {gpus} share one GPU")),
        _ => None,
    };
    for (transport, label) in [(Transport::Host, "through the host"), (Transport::Nccl, "over NCCL")] {
        TRANSPORT.set(transport);
        for depth in [1, 3] {
            for case in &cases {
                let name = format!("{kind} f32 {} {label}, depth {depth}", case.name);
                let outcome = case.check::<f32>(mpi, depth, backend);
                let outcome = match (transport, &unusable, outcome) {
                    (Transport::Nccl, Some(reason), Err(e)) if e.contains(reason.as_str()) => Ok(()),
                    (Transport::Nccl, Some(reason), other) => {
                        Err(format!("expected an error for `{reason}`, got {other:?}"))
                    }
                    (_, _, outcome) => outcome,
                };
                results.push((name, outcome));
            }
        }
    }
    TRANSPORT.set(Transport::Auto);
}

fn main() {
    let mpi = Mpi::init().expect("MPI starts");
    let (rank, ranks) = (mpi.rank(), mpi.size());
    let mut backends = vec![Backend::Cpu];
    // No test harness counts ignored cases here: the binary says what it did not run.
    match stencil::cuda::unusable_reason(0) {
        None => backends.push(Backend::Cuda { device: mpi.node_rank() % stencil::cuda::device_count() }),
        Some(reason) => {
            let required = std::env::var("STENCIL_REQUIRE_GPU").as_deref() == Ok("1");
            assert!(!required, "STENCIL_REQUIRE_GPU=1 but {reason}");
            if rank == 0 {
                println!("the GPU cases are not run: {reason}");
            }
        }
    }
    let mut results: Vec<(String, Result<(), String>)> = Vec::new();
    let absolute = Some(Tolerance::Absolute { norm: Norm::Max, eps: 0.05 });
    let relative = Some(Tolerance::Relative { norm: Norm::Max, factor: 0.2 });
    for &backend in &backends {
        let kind = if backend == Backend::Cpu { "cpu" } else { "cuda" };
        for depth in 1..=3 {
            let jacobi = |name, max_iterations, tolerance, check_every, schedule| Case {
                name,
                stencil: Jacobi7,
                shape: [23, 9, 11],
                input: "f",
                params: &[("h2", 0.01)],
                max_iterations,
                tolerance,
                check_every,
                schedule,
                boundaries: Boundaries::default(),
            };
            // Exact: halo ≥ sub · radius.
            let hier = |tile, halo, sub| Schedule::Hierarchical { tile, halo, sub };
            let streaming = |tile, sub| Schedule::Streaming { tile, sub };
            // Out-of-core slabs of the own planes, narrow enough that a rank has several.
            let slabs =
                |slab, height, inner| Schedule::OutOfCore { slab: Some(slab), height, inner, device_memory: None };
            let in_slabs = Inner::Hierarchical { tile: 4, halo: 2, sub: 2 };
            let streaming_slabs = Inner::Streaming { tile: 4, sub: 2 };
            let cases_3d = [
                jacobi("jacobi7, 7 iterations", 7, None, Some(3), Schedule::Plain),
                jacobi("jacobi7 to an absolute tolerance", 500, absolute, Some(5), Schedule::Plain),
                jacobi("jacobi7 tiled, 7 iterations", 7, None, Some(3), Schedule::Tiled),
                jacobi("jacobi7 hierarchical, 11 iterations", 11, None, Some(20), hier(4, 3, 3)),
                jacobi("jacobi7 hierarchical to an absolute tolerance", 500, absolute, None, hier(8, 2, 2)),
                jacobi("jacobi7 streaming, 11 iterations", 11, None, Some(20), streaming(4, 3)),
                jacobi("jacobi7 streaming to an absolute tolerance", 500, absolute, None, streaming(8, 2)),
                jacobi("jacobi7 out of core, 11 iterations", 11, None, Some(4), slabs(2, 3, Inner::Plain)),
                jacobi("jacobi7 out of core to an absolute tolerance", 500, absolute, None, slabs(3, 2, in_slabs)),
                jacobi("jacobi7 skewed slabs, 11 iterations", 11, None, Some(4), slabs(2, 3, Inner::Skewed)),
                jacobi("jacobi7 streaming slabs, 11 iterations", 11, None, Some(4), slabs(3, 4, streaming_slabs)),
                jacobi(
                    "jacobi7 skewed slabs to an absolute tolerance",
                    500,
                    absolute,
                    None,
                    slabs(1, 2, Inner::Skewed),
                ),
            ];
            let channel3 = Boundaries::all(Boundary::Periodic).axis(0, Boundary::Neumann);
            let bounded3 = [
                Case {
                    boundaries: channel3,
                    ..jacobi("jacobi7 in a periodic channel", 9, None, Some(4), Schedule::Plain)
                },
                Case {
                    boundaries: channel3,
                    ..jacobi("jacobi7 hierarchical in a periodic channel", 11, None, Some(20), hier(4, 3, 3))
                },
            ];
            for case in cases_3d.iter().chain(&bounded3) {
                results
                    .push((format!("{kind} f64 {} depth {depth}", case.name), case.check::<f64>(&mpi, depth, backend)));
                results
                    .push((format!("{kind} f32 {} depth {depth}", case.name), case.check::<f32>(&mpi, depth, backend)));
            }
            // The change since the last check, over each rank's own planes.
            RESIDUAL.set(Residual::SinceLastCheck);
            for case in &cases_3d {
                let name = format!("{kind} f32 {}, the change since the last check, depth {depth}", case.name);
                results.push((name, case.check::<f32>(&mpi, depth, backend)));
            }
            RESIDUAL.set(Residual::Step);
            let wide = |name, schedule| Case {
                name,
                stencil: Wide,
                shape: [41, 13],
                input: "f",
                params: &[("w", 3.0)],
                max_iterations: 300,
                tolerance: relative,
                check_every: Some(3),
                schedule,
                boundaries: Boundaries::default(),
            };
            let line = |name, schedule| Case {
                name,
                stencil: Line,
                shape: [50],
                input: "",
                params: &[("s", 0.125)],
                max_iterations: 20,
                tolerance: None,
                check_every: Some(5),
                schedule,
                boundaries: Boundaries::default(),
            };
            let others = [
                wide("radius 2 in 2-D to a relative tolerance", Schedule::Plain),
                wide("radius 2 in 2-D hierarchical to a relative tolerance", hier(6, 4, 2)),
                wide("radius 2 in 2-D out of core to a relative tolerance", slabs(4, 2, Inner::Plain)),
                wide("radius 2 in 2-D skewed slabs to a relative tolerance", slabs(3, 3, Inner::Skewed)),
            ];
            // Neumann walls across the cut axis, periodic along the other axes.
            let channel = Boundaries::all(Boundary::Periodic).axis(0, Boundary::Neumann);
            let bounded = [
                Case { boundaries: channel, ..wide("radius 2 in a periodic channel", Schedule::Plain) },
                Case { boundaries: channel, ..wide("radius 2 tiled in a periodic channel", Schedule::Tiled) },
                Case {
                    boundaries: Boundaries::default().side(0, stencil::Side::High, Boundary::Neumann),
                    ..wide("radius 2 with one Neumann wall", Schedule::Plain)
                },
                Case {
                    boundaries: channel,
                    ..wide("radius 2 out of core in a periodic channel", slabs(4, 2, Inner::Plain))
                },
                Case { boundaries: channel, ..wide("radius 2 hierarchical in a periodic channel", hier(6, 4, 2)) },
                Case {
                    boundaries: channel,
                    ..wide("radius 2 skewed slabs in a periodic channel", slabs(3, 3, Inner::Skewed))
                },
            ];
            for case in others.iter().chain(&bounded) {
                results
                    .push((format!("{kind} f64 {} depth {depth}", case.name), case.check::<f64>(&mpi, depth, backend)));
            }
            let lines = [
                line("1-D, checked every 5 iterations", Schedule::Plain),
                line("1-D hierarchical, checked every 5 iterations", hier(8, 3, 3)),
                line("1-D out of core, checked every 5 iterations", slabs(3, 4, in_slabs)),
                line("1-D skewed slabs, checked every 5 iterations", slabs(2, 4, Inner::Skewed)),
            ];
            let neumann_line = Case {
                boundaries: Boundaries::all(Boundary::Neumann),
                ..line("1-D between Neumann walls", Schedule::Plain)
            };
            for case in lines.iter().chain([&neumann_line]) {
                results
                    .push((format!("{kind} f64 {} depth {depth}", case.name), case.check::<f64>(&mpi, depth, backend)));
            }
            if depth == 1 {
                periodic_cut_cases(&mpi, backend, &mut results);
            }
        }
        inexact_cases(&mpi, backend, &mut results);
        systems::system_cases(&mpi, backend, &mut results);
        for depth in 1..=3 {
            sweep_cases(&mpi, backend, depth, &mut results);
        }
        alternating_cases(&mpi, backend, &mut results);
        transport_cases(&mpi, backend, &mut results);
        results.push((format!("{kind} a non-finite value in a sweep"), sweep_non_finite(&mpi, backend)));
        results.push((format!("{kind} a non-finite value"), non_finite(&mpi, backend, Schedule::Plain)));
        let slabs = Schedule::OutOfCore { slab: Some(3), height: 3, inner: Inner::Plain, device_memory: None };
        results.push((format!("{kind} a non-finite value out of core"), non_finite(&mpi, backend, slabs)));
        let skewed = Schedule::OutOfCore { slab: Some(2), height: 3, inner: Inner::Skewed, device_memory: None };
        results.push((format!("{kind} a non-finite value in skewed slabs"), non_finite(&mpi, backend, skewed)));
        let inexact = Schedule::Hierarchical { tile: 2, halo: 2, sub: 3 };
        results.push((format!("{kind} a non-finite value, inexact hierarchical"), non_finite(&mpi, backend, inexact)));
    }
    results.extend(disagreements(&mpi));

    let failed = results.iter().filter(|(_, r)| r.is_err()).count();
    for (name, result) in &results {
        match result {
            Ok(()) => println!("rank {rank}/{ranks}: ok      {name}"),
            Err(why) => println!("rank {rank}/{ranks}: FAILED  {name}: {why}"),
        }
    }
    println!("rank {rank}/{ranks}: {} passed, {failed} failed", results.len() - failed);
    drop(mpi);
    if failed > 0 {
        std::process::exit(1);
    }
}
