//! Systems of several unknowns on MPI ranks: every unknown's planes travel in each exchange,
//! and each rank's parts of every unknown, the gathered grids, the stopping iteration and the
//! L∞ residual history equal one process's run (`Plain`, or the same inexact hierarchical
//! schedule), bit for bit, with Dirichlet, Neumann and periodic sides (a periodic cut axis
//! at depth 1), in core and out of core.

use stencil::builtin::GrayScott;
use stencil::cuda::Mode;
use stencil::distributed::Mpi;
use stencil::prelude::*;
use stencil::{Boundaries, Boundary};

use super::common::{differing, random};
use super::same_run;

stencil! {
    /// Three unknowns in 1-D, radius 2 on the cut axis, around a read-only field.
    fn triple(mut a: Field1, f: Field1, mut b: Field1, mut c: Field1, k: Real) -> (Real, Real, Real) {
        (
            a[0] + k * (b[-2] - 2.0 * a[0] + c[2]) + 0.01 * f[0],
            b[0] + k * (a[-1] + a[1] - 2.0 * b[0]),
            0.5 * (c[-2] + c[1]) * k - a[0] * b[0] * 0.01,
        )
    }

    /// The wave equation as a first-order system in 3-D, with a corner read.
    fn wave3(mut p: Field3, mut q: Field3, c: Real) -> (Real, Real) {
        let lap = p[-1, 0, 0] + p[1, 0, 0] + p[0, -1, 0] + p[0, 1, 0] + p[0, 0, -1] + p[0, 0, 1] - 6.0 * p[0, 0, 0];
        (p[0, 0, 0] + c * q[0, 0, 0], q[0, 0, 0] + c * (lap + 0.125 * p[1, 1, -1]))
    }
}

/// One system problem on a global shape.
struct SystemCase<'p, S, const N: usize> {
    stencil: S,
    shape: [usize; N],
    /// The read-only field's name, or "".
    input: &'p str,
    params: &'p [(&'p str, f64)],
    max_iterations: usize,
    tolerance: Option<Tolerance>,
    check_every: usize,
    schedule: Schedule,
    boundaries: Boundaries<N>,
    /// Starting values: each unknown's grid from its seed, mapped.
    start: fn(f64, usize) -> f64,
}

impl<S: Stencil<N>, const N: usize> SystemCase<'_, S, N> {
    fn solver<'a, T: Real>(&self, f: Option<&'a Grid<T, N>>, backend: Backend) -> Solver<'a, S, T, N> {
        let mut solver = Solver::new(self.stencil)
            .backend(backend)
            .mode(Mode::Exact)
            .max_iterations(self.max_iterations)
            .check_every(self.check_every)
            .boundaries(self.boundaries);
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

    /// The distributed run of every unknown against one process's, for halo depth `depth`.
    fn check<T: Real>(&self, mpi: &Mpi, depth: usize, backend: Backend) -> Result<(), String> {
        let count = S::META.unknowns.len();
        let starts: Vec<Grid<T, N>> = (0..count)
            .map(|k| {
                let noise = random::<f64, N>(self.shape, 10 + k as u64);
                Grid::from_fn(self.shape, |at| T::from_f64((self.start)(noise[at], k))).unwrap()
            })
            .collect();
        let f = (!self.input.is_empty()).then(|| random::<T, N>(self.shape, 2));
        let inexact =
            matches!(self.schedule, Schedule::Hierarchical { .. }) && !self.schedule.is_exact_blocking(S::META);
        let one_process = if inexact { self.schedule } else { Schedule::Plain };
        let mut reference = starts.clone();
        let expected = {
            let mut refs: Vec<&mut Grid<T, N>> = reference.iter_mut().collect();
            self.solver(f.as_ref(), Backend::Cpu)
                .schedule(one_process)
                .run_system(&mut refs)
                .map_err(|e| e.to_string())?
        };
        let sub = super::split(mpi, &self.stencil, self.shape, depth).map_err(|e| e.to_string())?;
        let mut parts: Vec<Grid<T, N>> = starts.iter().map(|g| sub.local_part(g).unwrap()).collect();
        let local_f = f.as_ref().map(|f| sub.local_part(f).unwrap());
        let report = {
            let mut refs: Vec<&mut Grid<T, N>> = parts.iter_mut().collect();
            self.solver(local_f.as_ref(), backend)
                .schedule(self.schedule)
                .distributed(&sub)
                .run_system(&mut refs)
                .map_err(|e| format!("the distributed run failed: {e}"))?
        };
        same_run(&report, &expected)?;
        let mut wrong = Vec::new();
        for (k, (part, whole)) in parts.iter().zip(&reference).enumerate() {
            let differ = differing(&sub.local_part(whole).unwrap(), part);
            // Collective: every rank gathers, whatever it found.
            let gathered = sub.gather(part, 0).map_err(|e| e.to_string())?;
            let gathered_differ = gathered.map_or(0, |g| differing(&g, whole));
            if differ + gathered_differ > 0 {
                wrong.push(format!("unknown {k}: {differ} local values and {gathered_differ} gathered differ"));
            }
        }
        if wrong.is_empty() { Ok(()) } else { Err(wrong.join("; ")) }
    }
}

/// Gray–Scott's bounded start: u near 1, v near 0.
fn near_rest(noise: f64, k: usize) -> f64 {
    if k == 0 { 1.0 - 0.25 * noise.abs() } else { 0.25 * noise.abs() }
}

/// Any start.
fn as_drawn(noise: f64, _: usize) -> f64 {
    noise
}

/// Systems of two and three unknowns at depths 1 to 3 (and an inexact hierarchical
/// schedule at a depth its tiles allow) on `backend`.
pub fn system_cases(mpi: &Mpi, backend: Backend, results: &mut Vec<(String, Result<(), String>)>) {
    let kind = if backend == Backend::Cpu { "cpu" } else { "cuda" };
    let hier = |tile, halo, sub| Schedule::Hierarchical { tile, halo, sub };
    let channel = Boundaries::all(Boundary::Periodic).axis(0, Boundary::Neumann);
    let gray_scott = |schedule, boundaries| SystemCase {
        stencil: GrayScott,
        shape: [29, 14],
        input: "",
        params: &[("du", 0.16), ("dv", 0.08), ("feed", 0.035), ("kill", 0.065), ("dt", 1.0)],
        max_iterations: 13,
        tolerance: None,
        check_every: 4,
        schedule,
        boundaries,
        start: near_rest,
    };
    let triple = |schedule, boundaries| SystemCase {
        stencil: Triple,
        shape: [47],
        input: "f",
        params: &[("k", 0.2)],
        max_iterations: 300,
        tolerance: Some(Tolerance::Relative { norm: Norm::L2, factor: 0.5 }),
        check_every: 3,
        schedule,
        boundaries,
        start: as_drawn,
    };
    let wave = |schedule, boundaries| SystemCase {
        stencil: Wave3,
        shape: [19, 6, 7],
        input: "",
        params: &[("c", 0.1)],
        max_iterations: 7,
        tolerance: None,
        check_every: 3,
        schedule,
        boundaries,
        start: as_drawn,
    };
    let mut record = |name: String, outcome| results.push((format!("{kind} system {name}"), outcome));
    for depth in 1..=3 {
        for (name, schedule) in
            [("plain", Schedule::Plain), ("tiled", Schedule::Tiled), ("hierarchical", hier(4, 3, 3))]
        {
            let case = gray_scott(schedule, channel);
            record(format!("f64 gray-scott {name} depth {depth}"), case.check::<f64>(mpi, depth, backend));
            record(format!("f32 gray-scott {name} depth {depth}"), case.check::<f32>(mpi, depth, backend));
            let walls = Boundaries::all(Boundary::Neumann);
            // Exact at radius 2: halo ≥ sub · 2.
            let schedule = if name == "hierarchical" { hier(4, 6, 3) } else { schedule };
            let case = triple(schedule, walls);
            record(format!("f64 three unknowns {name} depth {depth}"), case.check::<f64>(mpi, depth, backend));
            let case = wave(schedule, Boundaries::all(Boundary::Periodic).axis(0, Boundary::Dirichlet));
            record(format!("f64 wave {name} depth {depth}"), case.check::<f64>(mpi, depth, backend));
        }
    }
    // Out of core: every unknown has its slabs, carries and ghost planes on each rank.
    let slabs = |inner, height| Schedule::OutOfCore { slab: Some(3), height, inner, device_memory: None };
    for depth in [1, 3] {
        let inners = [
            ("plain", Inner::Plain),
            ("skewed", Inner::Skewed),
            ("hierarchical", Inner::Hierarchical { tile: 4, halo: 6, sub: 3 }),
            ("streaming", Inner::Streaming { tile: 4, sub: 3 }),
        ];
        for (name, inner) in inners {
            let case = gray_scott(slabs(inner, 3), channel);
            record(
                format!("f64 gray-scott out of core, {name} slabs, depth {depth}"),
                case.check::<f64>(mpi, depth, backend),
            );
            let case = triple(slabs(inner, 2), Boundaries::all(Boundary::Neumann));
            record(
                format!("f64 three unknowns out of core, {name} slabs, depth {depth}"),
                case.check::<f64>(mpi, depth, backend),
            );
        }
    }
    let periodic = gray_scott(slabs(Inner::Plain, 1), Boundaries::all(Boundary::Periodic));
    record("f32 gray-scott out of core, periodic cut".into(), periodic.check::<f32>(mpi, 1, backend));
    // A periodic cut axis: the last rank's planes of every unknown wrap to the first.
    let periodic = gray_scott(Schedule::Plain, Boundaries::all(Boundary::Periodic));
    record("f64 gray-scott periodic cut".into(), periodic.check::<f64>(mpi, 1, backend));
    let periodic = triple(Schedule::Tiled, Boundaries::all(Boundary::Periodic));
    record("f64 three unknowns periodic cut".into(), periodic.check::<f64>(mpi, 1, backend));
    // Paper 003's inexact cycles: tiles of 3 and a halo of 1 read 3 planes beyond a rank's.
    let inexact = gray_scott(hier(3, 1, 2), Boundaries::default());
    record("f64 gray-scott inexact hierarchical depth 3".into(), inexact.check::<f64>(mpi, 3, backend));
    let inexact = gray_scott(hier(3, 1, 2), channel);
    record("f64 gray-scott inexact hierarchical in a channel depth 3".into(), inexact.check::<f64>(mpi, 3, backend));
}
