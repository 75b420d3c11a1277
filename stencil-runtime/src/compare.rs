//! Running one problem through several variants (backend × schedule × precision × mode)
//! and comparing their results with the first.

use std::fmt;
use std::time::Duration;

use crate::cuda::Mode;
use crate::{Backend, Grid, Real, Result, Schedule, Solver, Stencil};

/// Element type of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

/// One way to run the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// Where.
    pub backend: Backend,
    /// How.
    pub schedule: Schedule,
    /// In which element type.
    pub precision: Precision,
    /// The GPU's floating-point mode (ignored on the CPU).
    pub mode: Mode,
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let precision = match self.precision {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        };
        let backend = match self.backend {
            Backend::Cpu => "cpu".to_string(),
            Backend::Cuda { device } => format!("cuda:{device}"),
            other => other.to_string(),
        };
        write!(f, "{backend} {} {precision}", self.schedule)?;
        if !matches!(self.backend, Backend::Cpu) {
            write!(f, " {}", if self.mode == Mode::Exact { "exact" } else { "fast" })?;
        }
        Ok(())
    }
}

/// The problem, in `f64`; `f32` variants start from its values rounded to `f32`.
pub struct Problem<const N: usize> {
    /// The initial guess, boundary included.
    pub initial: Grid<f64, N>,
    /// The read-only fields by name.
    pub inputs: Vec<(String, Grid<f64, N>)>,
    /// The scalar parameters by name.
    pub params: Vec<(String, f64)>,
    /// Iterations every variant runs.
    pub iterations: usize,
}

/// How one variant compares with the first.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The variant.
    pub variant: Variant,
    /// Wall time of its iterations.
    pub time: Duration,
    /// max |x − x_ref| over all points.
    pub max_abs: f64,
    /// max |x − x_ref| / max |x_ref|.
    pub max_rel: f64,
    /// Whether every value equals the reference's bit for bit (after widening to f64).
    pub bitwise: bool,
}

/// The result of [`compare`]: one entry per variant, an error for those that could not run.
pub struct Comparison {
    /// In the order given; the first is the reference.
    pub outcomes: Vec<(Variant, Result<Outcome>)>,
}

fn convert<const N: usize, T: Real>(g: &Grid<f64, N>) -> Result<Grid<T, N>> {
    let values = g.as_slice();
    let strides = g.strides();
    Grid::from_fn(g.shape(), |ix| T::from_f64(values[(0..N).map(|a| ix[a] * strides[a]).sum::<usize>()]))
}

fn run<S: Stencil<N>, T: Real, const N: usize>(
    stencil: S,
    problem: &Problem<N>,
    variant: Variant,
) -> Result<(Vec<f64>, Duration)> {
    let inputs: Vec<(String, Grid<T, N>)> =
        problem.inputs.iter().map(|(n, g)| Ok((n.clone(), convert::<N, T>(g)?))).collect::<Result<_>>()?;
    let mut u = convert::<N, T>(&problem.initial)?;
    let mut solver = Solver::new(stencil)
        .backend(variant.backend)
        .schedule(variant.schedule)
        .mode(variant.mode)
        .max_iterations(problem.iterations)
        .check_every(problem.iterations.max(1));
    for (name, grid) in &inputs {
        solver = solver.input(name, grid);
    }
    for (name, value) in &problem.params {
        solver = solver.param(name, *value);
    }
    let report = solver.run(&mut u)?;
    Ok((u.as_slice().iter().map(|v| v.to_f64()).collect(), report.wall))
}

/// Runs `problem` with every variant and compares each result with the first variant's.
///
/// **Errors**: only if the first variant (the reference) fails; the others report their
/// error in their entry.
pub fn compare<S: Stencil<N>, const N: usize>(
    stencil: S,
    problem: &Problem<N>,
    variants: &[Variant],
) -> Result<Comparison> {
    let run_one = |v: Variant| match v.precision {
        Precision::F32 => run::<S, f32, N>(stencil, problem, v),
        Precision::F64 => run::<S, f64, N>(stencil, problem, v),
    };
    let mut outcomes = Vec::new();
    let mut reference: Option<Vec<f64>> = None;
    for &variant in variants {
        let result = run_one(variant);
        let outcome = match (result, &reference) {
            (Err(e), None) => return Err(e),
            (Err(e), Some(_)) => Err(e),
            (Ok((values, time)), reference_values) => {
                let r = reference_values.as_deref().unwrap_or(&values);
                let scale = r.iter().map(|v| v.abs()).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
                let max_abs = values.iter().zip(r).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                let bitwise = values.iter().zip(r).all(|(a, b)| a.to_bits() == b.to_bits());
                if reference.is_none() {
                    reference = Some(values.clone());
                }
                Ok(Outcome { variant, time, max_abs, max_rel: max_abs / scale, bitwise })
            }
        };
        outcomes.push((variant, outcome));
    }
    Ok(Comparison { outcomes })
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "| variant | time (ms) | max abs diff | max rel diff | bitwise |")?;
        writeln!(f, "|---|---:|---:|---:|---|")?;
        for (i, (variant, outcome)) in self.outcomes.iter().enumerate() {
            match outcome {
                Ok(o) => writeln!(
                    f,
                    "| {variant}{} | {:.2} | {:.3e} | {:.3e} | {} |",
                    if i == 0 { " (reference)" } else { "" },
                    o.time.as_secs_f64() * 1e3,
                    o.max_abs,
                    o.max_rel,
                    if o.bitwise { "yes" } else { "no" }
                )?,
                Err(e) => writeln!(f, "| {variant} | – | – | – | did not run: {e} |")?,
            }
        }
        Ok(())
    }
}
