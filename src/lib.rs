//! **stencil**: write the point update of a structured-grid stencil once, run it as a
//! rayon CPU twin (and, through the same description, as generated CUDA kernels).
//!
//! ```
//! use stencil::prelude::*;
//!
//! stencil! {
//!     /// Jacobi update for −Δu = f on a uniform 2-D grid; `h2` is h².
//!     pub fn poisson(mut u: Field2, f: Field2, h2: Real) -> Real {
//!         (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
//!     }
//! }
//!
//! let n = 33;
//! let f = Grid::<f64, 2>::filled([n, n], 1.0)?;
//! let mut u = Grid::<f64, 2>::zeros([n, n])?; // its outer layer is the boundary (u = 0)
//! let report = Solver::new(Poisson)
//!     .input("f", &f)
//!     .params(PoissonParams { h2: 1.0 / ((n - 1) as f64).powi(2) })
//!     .tolerance(Tolerance::Absolute { norm: Norm::Max, eps: 1e-10 })
//!     .run(&mut u)?;
//! assert_eq!(report.stop, StopReason::Converged);
//! // The discrete solution peaks at the centre, near the continuous 0.0737.
//! assert!((u[[16, 16]] - 0.0737).abs() < 1e-3);
//! # Ok::<(), stencil::Error>(())
//! ```
//!
//! The language is described in `docs/dsl.md`, the runtime in `docs/guide.md`. In short:
//! a stencil is a function over fields (`Field1`, `Field2`, `Field3`, read at constant
//! integer offsets) and scalars (`Real`, `i32`); the fields marked `mut` are the unknowns,
//! and the body is the new value of each at the point (a tuple of them for several: a system,
//! run with [`Solver::run_system`]). `stencil!` generates a unit struct
//! (`Poisson`) implementing [`Stencil`], a typed parameter struct (`PoissonParams<T>`), and
//! the point function generic over [`Real`] (`f32` and `f64`).

#![deny(missing_docs)]

extern crate self as stencil;

pub mod builtin;

pub use stencil_macros::stencil;
pub use stencil_runtime::{
    Alternating, Backend, Boundaries, Boundary, Checkpoint, ColorMap, DEFAULT_CHECK_EVERY, DEFAULT_TILE_2D,
    DEFAULT_TILE_3D, Device, Direction, Error, FieldMeta, Grid, Inner, InputFields, MAX_UNLIMITED_CHECK_EVERY,
    MemoryKind, Norm, ParamMeta, Progress, RanOn, ReadMeta, Real, Report, Residual, ResidualSample, Result, RunInputs,
    Saved, ScalarKind, Schedule, Side, SlabProgress, Slice, Solver, Stencil, StencilMeta, StepFn, StepsReport,
    StopReason, SweepMeta, Tolerance,
};
pub use stencil_runtime::{compare, cuda, distributed, kernel, model};

/// What a program that defines and runs stencils needs in scope.
pub mod prelude {
    pub use crate::{
        Backend, Boundaries, Boundary, Checkpoint, ColorMap, Grid, Inner, InputFields, Norm, Real, Report, Residual,
        Schedule, Side, Slice, Solver, Stencil, StopReason, Tolerance, stencil,
    };
}

#[doc(hidden)]
pub use stencil_runtime::__private;

/// The examples of the README, the guide and the schedules page, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
#[doc = include_str!("../docs/guide.md")]
#[doc = include_str!("../docs/schedules.md")]
pub struct DocumentationExamples;
