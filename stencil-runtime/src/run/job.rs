//! A checked run: everything the loop and the engines need, after the front has validated
//! the user's input.

use std::cell::Cell;

use crate::checkpoint::{Start, Writer};
use crate::stop::StopRule;
use crate::{Boundaries, Error, Grid, Progress, Real, Schedule, SlabProgress, Stencil};

/// The callback of [`Solver::on_progress`](crate::Solver::on_progress).
pub(crate) type ProgressFn<'a> = Box<dyn FnMut(&Progress) + 'a>;
/// The callback of [`Solver::on_slab`](crate::Solver::on_slab).
pub(crate) type SlabFn<'a> = Box<dyn FnMut(&SlabProgress) + 'a>;
/// The callback of [`Solver::observe_all`](crate::Solver::observe_all) (and, on the first
/// unknown, of [`Solver::observe`](crate::Solver::observe)).
pub(crate) type ObserveFn<'a, T, const N: usize> = Box<dyn FnMut(usize, &[&Grid<T, N>]) + 'a>;

/// A run's observer: called with the iterate at every multiple of `every`.
pub(crate) struct Observer<'r, 'a, T, const N: usize> {
    pub every: usize,
    pub callback: &'r mut ObserveFn<'a, T, N>,
}

/// Everything a run needs, checked.
pub(crate) struct Job<'r, 'a, S: Stencil<N>, T: Real, const N: usize> {
    /// Per field in parameter order: the input grid's values (`None` for the unknown).
    pub inputs: Vec<Option<&'a [T]>>,
    pub params: S::Params<T>,
    pub schedule: Schedule,
    /// The grid's boundary conditions (checked against the schedule).
    pub boundaries: Boundaries<N>,
    pub stop: StopRule,
    pub progress: Option<&'r mut ProgressFn<'a>>,
    /// The iteration the run starts from, and ρ(u⁰) if a checkpoint holds it.
    pub start: Start,
    pub checkpoint: Option<Writer>,
    /// Test hook: an out-of-core run fails after writing back this many slabs.
    pub fail_after_slabs: Option<usize>,
    pub on_slab: Option<&'r mut SlabFn<'a>>,
    /// `Auto` chose the out-of-core schedule: its height and slab width are the run-time
    /// model's choice, made after its probes.
    pub model_chooses: bool,
    /// Whether the user set the check period (else it follows the schedule).
    pub check_every_given: bool,
    /// Where a single-process run records what the user's grid holds.
    pub held: Option<&'r GridState>,
    pub observer: Option<Observer<'r, 'a, T, N>>,
    /// A system's further unknowns, in declaration order (the first is the run's grid).
    pub more: Vec<&'r mut Grid<T, N>>,
}

/// What the user's grid holds while a run goes on, so that an error can say it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Held {
    /// What it held when the run was called: nothing has been written to it.
    #[default]
    Untouched,
    /// One whole iterate.
    Iterate(usize),
    /// A copy into it from the device failed midway: not one iterate.
    Mixed,
}

/// What a single-process run's grid holds, and the iteration of its last checkpoint,
/// kept where the solver can read them after a backend returns an error.
#[derive(Debug, Default)]
pub(crate) struct GridState {
    pub held: Cell<Held>,
    /// The iteration of the last checkpoint written or resumed from.
    pub checkpoint: Cell<Option<usize>>,
}

impl GridState {
    /// `error`, raised by a run whose checkpoints go to `path`, with what the grid holds and
    /// the last checkpoint added where the grid was changed and the error does not say it.
    pub fn explain(&self, error: Error, path: Option<&std::path::Path>) -> Error {
        let checkpoint = path.zip(self.checkpoint.get()).map(|(p, i)| (p.to_owned(), i));
        let error = match error {
            // The pass does not know of the checkpoints.
            Error::StoppedMidPass { pass_start, pass_end, written_to, planes, checkpoint: None, source } => {
                Error::StoppedMidPass {
                    pass_start,
                    pass_end,
                    written_to,
                    planes,
                    checkpoint: checkpoint.clone(),
                    source,
                }
            }
            other => other,
        };
        match (self.held.get(), &error) {
            (Held::Untouched, _) | (_, Error::NonFinite { .. } | Error::StoppedMidPass { .. }) => error,
            (Held::Iterate(iteration), _) => {
                Error::Interrupted { holds: Some(iteration), checkpoint, source: Box::new(error) }
            }
            (Held::Mixed, _) => Error::Interrupted { holds: None, checkpoint, source: Box::new(error) },
        }
    }
}
