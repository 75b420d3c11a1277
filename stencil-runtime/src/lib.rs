//! The runtime behind the `stencil!` macro: grids, the [`Stencil`] trait, backends,
//! schedules and the [`Solver`].
//!
//! Most users depend on the facade crate `stencil`, which re-exports everything here
//! together with the macro.

#![deny(missing_docs)]

mod boundary;
mod checkpoint;
pub mod compare;
mod cpu;
pub mod cuda;
mod dispatch;
pub mod distributed;
mod engine;
mod error;
mod grid;
mod inputs;
pub mod kernel;
mod memory;
mod plan;
mod real;
mod report;
mod run;
mod schedule;
mod solver;
mod stencil;
mod steps;
mod stop;

#[doc(hidden)]
pub mod __private;

pub use boundary::{Boundaries, Boundary, Side};
pub use checkpoint::{Checkpoint, RunInputs, Saved};
pub use error::{Error, Result};
pub use grid::{ColorMap, Grid, Slice};
pub use memory::MemoryKind;
pub use plan::model;
pub use real::Real;
pub use report::{Device, Progress, RanOn, Report, ResidualSample, SlabProgress, StopReason};
pub use schedule::{Backend, DEFAULT_TILE_2D, DEFAULT_TILE_3D, Inner, Schedule};
pub use solver::Solver;
pub use stencil::{
    Direction, FieldMeta, InputFields, ParamMeta, ReadMeta, ScalarKind, ScalarValue, Stencil, StencilMeta, SweepMeta,
};
pub use steps::{Alternating, StepFn, StepsReport};
pub use stop::{DEFAULT_CHECK_EVERY, MAX_UNLIMITED_CHECK_EVERY, Norm, Residual, Tolerance};
