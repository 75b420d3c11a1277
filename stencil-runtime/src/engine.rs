//! The engine contract: what a backend does for the loop. Each backend (`cpu/`, `cuda/`)
//! implements [`Engine`] for a grid held in core and [`Passes`] for a grid streamed through
//! in slabs; the loop (`run/`) drives every schedule through these, single-process or under
//! an MPI rank, and never sees a backend's own types.

use std::ops::Range;

use rayon::prelude::*;

use crate::plan::Layout;
use crate::plan::planes::Halo;
use crate::{Error, Grid, Real, Result};

/// The difference between a pass's output and its input over the points it measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Difference {
    /// max |new − old|.
    pub max_abs: f64,
    /// Σ (new − old)².
    pub sum_sq: f64,
    /// Flat index of the first point (in memory order) whose new value is NaN or ±∞.
    pub first_non_finite: Option<usize>,
}

impl Difference {
    /// Both measurements together (of disjoint points).
    pub fn merge(self, other: Self) -> Self {
        Self {
            max_abs: self.max_abs.max(other.max_abs),
            sum_sq: self.sum_sq + other.sum_sq,
            first_non_finite: match (self.first_non_finite, other.first_non_finite) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }

    /// The difference over one contiguous span of new and old values, `base` its first flat
    /// index. Four independent accumulators let the loop vectorise; a NaN or ±∞ makes the
    /// sum non-finite, and only then is the span searched for the first such value.
    pub fn of_span<T: Real>(new: &[T], old: &[T], base: usize) -> Difference {
        const LANES: usize = 4;
        let (mut sum, mut max) = ([0f64; LANES], [0f64; LANES]);
        let mut add = |lane: usize, n: T, o: T| {
            let d = (n - o).to_f64();
            sum[lane] += d * d;
            let a = d.abs();
            max[lane] = if a > max[lane] { a } else { max[lane] };
        };
        let (new4, old4) = (new.chunks_exact(LANES), old.chunks_exact(LANES));
        let (new_rest, old_rest) = (new4.remainder(), old4.remainder());
        for (n, o) in new4.zip(old4) {
            for lane in 0..LANES {
                add(lane, n[lane], o[lane]);
            }
        }
        for (n, o) in new_rest.iter().zip(old_rest) {
            add(0, *n, *o);
        }
        let sum_sq: f64 = sum.iter().sum();
        let first_non_finite =
            if sum_sq.is_finite() { None } else { new.iter().position(|v| !v.is_finite()).map(|j| base + j) };
        Difference { max_abs: max.iter().copied().fold(0.0, f64::max), sum_sq, first_non_finite }
    }

    /// The difference of `new` from `reference` (whole grids of `layout`'s shape) over the
    /// interior points of `planes` (interior planes of axis 0), flat indices of the grid; then
    /// `reference` holds `new` at those points.
    pub fn since<T: Real, const N: usize>(
        layout: &Layout<N>,
        planes: Range<usize>,
        new: &[T],
        reference: &mut [T],
    ) -> Difference {
        let of_row = |span: Range<usize>, kept: &mut [T]| {
            let d = Difference::of_span(&new[span.clone()], kept, span.start);
            kept.copy_from_slice(&new[span]);
            d
        };
        if N == 1 {
            return of_row(planes.clone(), &mut reference[planes]);
        }
        let plane = layout.plane_len();
        reference[planes.start * plane..planes.end * plane]
            .par_chunks_mut(plane)
            .zip(planes)
            .map(|(kept, p)| {
                let mut d = Difference::default();
                layout.for_each_row_in_plane(|start| {
                    let row = start..start + layout.row_len();
                    d = d.merge(of_row(p * plane + row.start..p * plane + row.end, &mut kept[row]));
                });
                d
            })
            .reduce(Difference::default, Difference::merge)
    }

    /// The same measurement with its flat indices moved by `offset` (a view's measurement
    /// seen in the grid it is a view of).
    pub fn shifted(self, offset: usize) -> Self {
        Self { first_non_finite: self.first_non_finite.map(|at| at + offset), ..self }
    }
}

/// What a checked inexact hierarchical cycle looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CycleCheck {
    /// Nothing.
    None,
    /// The non-finite values of the iterate it writes (the residual is measured apart).
    NonFinite,
    /// S(u) − u in its first subiteration over its cores (ρ of the iterate it starts
    /// from), and the non-finite values it writes.
    Residual,
}

/// A grid's iterate held by one backend, updated by ranges of planes along axis 0 (local
/// plane indices; interior planes only).
///
/// A Jacobi step reads the current iterate and writes the next; [`swap`](Self::swap) ends
/// it. A sweep updates the current iterate in place. Measurements accumulate until
/// [`difference`](Self::difference) reads them.
pub(crate) trait Engine<T: Real, const N: usize> {
    /// Whether updates return before the work is done (a device queue): then the rest of an
    /// iteration is queued before an exchange, else it runs during it.
    const QUEUED: bool;

    /// Updates `planes` into the next iterate, `steps` iterations later: one plain (or
    /// tiled) iteration, or for `steps > 1` an exact hierarchical cycle, which reads the
    /// current iterate `steps · radius` planes beyond `planes` and may leave any value in
    /// the next iterate's planes within `(steps − 1) · radius` of them. With `measure`, adds
    /// S(u) − u to the iteration's difference: over `planes` for one step; for a cycle
    /// (whose `planes` must then be the whole interior), in its last subiteration over its
    /// cores.
    fn update(&mut self, planes: Range<usize>, steps: usize, measure: bool) -> Result<()>;

    /// An inexact hierarchical cycle of `len` subiterations over the whole grid's tiles (as
    /// one process places them) whose cores tile `cores` (local planes, from a tile's edge):
    /// writes those cores of the next iterate.
    fn inexact_cycle(&mut self, cores: Range<usize>, len: usize, check: CycleCheck) -> Result<()>;

    /// Sweeps local interior `planes` of the current iterate in place with stencil `which`
    /// of the run (0 for one stencil), in its declared order.
    fn sweep(&mut self, which: usize, planes: Range<usize>) -> Result<()>;

    /// `count` sweeps of the whole interior `planes` with stencil `which`, one after another,
    /// the outer layers filled before each but the first (which the caller fills). An engine
    /// may overlap them, each sweep following the one before through the grid, where nothing
    /// between two sweeps needs the whole grid: the values are the same.
    fn sweeps(&mut self, which: usize, planes: Range<usize>, count: usize) -> Result<()> {
        for k in 0..count {
            if k > 0 {
                self.fill()?;
            }
            self.sweep(which, planes.clone())?;
        }
        Ok(())
    }

    /// Marks the updates queued so far: [`stage`](Self::stage) waits for them only.
    fn mark(&mut self) -> Result<()>;

    /// Copies planes `lower` and `upper` of the next iterate (`next`) or of the current one
    /// into `send`, and waits until they are there; an engine with a device link stages them
    /// in its own device buffers instead (before any update queued later), and leaves `send`
    /// alone.
    fn stage(&mut self, lower: Range<usize>, upper: Range<usize>, send: &mut Halo<T>, next: bool) -> Result<()>;

    /// Ends a Jacobi iteration: the next iterate becomes the current one.
    fn swap(&mut self);

    /// Sets the current iterate's periodic and Neumann outer layers from its interior, by
    /// the copies of the plan the engine was built with (`plan::fill`); nothing for
    /// Dirichlet boundaries. Called before every iteration or sweep, and at the end.
    fn fill(&mut self) -> Result<()>;

    /// Sends the staged planes to the ranks `neighbours` (below, above) and receives theirs,
    /// device to device, when the engine has a device link: `true` then, the messages queued
    /// (and [`unstage`](Self::unstage) takes the planes received, from the engine's own
    /// buffers). `false` when the planes go through the host buffers and the peers.
    fn send_on_device(&mut self, neighbours: (Option<usize>, Option<usize>)) -> Result<bool> {
        let _ = neighbours;
        Ok(false)
    }

    /// Copies `recv` (or an engine's planes received over its device link) into planes
    /// `lower` and `upper` of the current iterate, before any later update.
    fn unstage(&mut self, lower: Range<usize>, upper: Range<usize>, recv: &Halo<T>) -> Result<()>;

    /// As [`unstage`](Self::unstage), after every update so far has finished: puts back the
    /// planes sent (`sent`, staged before a cycle left other values around them).
    fn restore(&mut self, lower: Range<usize>, upper: Range<usize>, sent: &Halo<T>) -> Result<()>;

    /// Copies `planes` of the current iterate into `into`, and waits until they are there.
    fn read(&mut self, planes: Range<usize>, into: &mut [T]) -> Result<()>;

    /// Copies `from` into `planes` of the current iterate, before any later update.
    fn write(&mut self, planes: Range<usize>, from: &[T]) -> Result<()>;

    /// Keeps the current iterate of every unknown as the reference of later measurements:
    /// from now on a measuring [`update`](Self::update) adds the next iterate minus the
    /// reference over its planes' interior points (not S(u) − u), then makes its planes of
    /// the next iterate the reference ([`Residual::SinceLastCheck`](crate::Residual)).
    fn keep_reference(&mut self) -> Result<()>;

    /// Waits for the iteration's measurements and returns their difference (flat indices
    /// local), clearing them.
    fn difference(&mut self) -> Result<Difference>;

    /// A check of a sweep stencil without a tolerance: the first non-finite value (local flat
    /// index) where one process on this backend looks, among `part` (the own planes and the
    /// boundary planes at the grid's ends) or, by a measuring update, among the `own` planes.
    fn find_non_finite(&mut self, own: Range<usize>, part: Range<usize>) -> Result<Option<usize>>;

    /// The value at local flat index `at` of the current iterate.
    fn value_at(&mut self, at: usize) -> Result<f64>;

    /// Waits for every update.
    fn wait(&mut self) -> Result<()>;

    /// The user's grid holding the current iterate (copied there first if it is elsewhere);
    /// of a system, the first unknown's.
    fn host(&mut self) -> Result<&mut Grid<T, N>>;

    /// The user's grids of every unknown (declaration order) holding the current iterate,
    /// copied there first if it is elsewhere.
    fn hosts(&mut self) -> Result<Vec<&Grid<T, N>>>;

    /// Waits for every update and leaves the current iterate in the user's grid.
    fn finish(&mut self) -> Result<()>;
}

/// Called once per out-of-core pass, before the first slab that reads planes beyond the
/// own planes (or at the end when none does), with every unknown's grid: under a rank,
/// where the ghost planes are brought up to date.
pub(crate) type Ghosts<'c, T> = &'c mut dyn FnMut(&mut [&mut [T]]) -> Result<(), Error>;

/// Told how many slabs of a pass are written back, as they are, with every unknown's grid
/// (whose planes written back so far may be read while the next slabs run).
pub(crate) type Written<'c, T> = &'c mut dyn FnMut(usize, &[&mut [T]]);

/// One out-of-core pass: its number of iterations, whether its last one measures, and
/// whether another pass may follow with the host leaving the grid as this pass writes it
/// until then (no ghost planes received, no periodic planes copied in between): the next
/// pass's first slabs may then be copied to the device, and a backend may compute the first
/// one on a guess that the next pass is like this one, as this pass ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PassPlan {
    pub len: usize,
    pub measure: bool,
    pub prefetch_next: bool,
}

/// Grids kept in host memory and streamed through a backend in slabs: the out-of-core
/// schedule's passes (`plan::slabs`), in place on the grids.
pub(crate) trait Passes<T: Real> {
    /// Runs `pass.len` iterations (at most the slabs' height) on `grids` (every unknown's, in
    /// declaration order) in place. It may return with write-backs still in flight (and the
    /// next pass's first copies up and first slab's computation, with `pass.prefetch_next`),
    /// except when it measures or tells `written`: then every own plane is written back;
    /// `synchronize` waits for the rest.
    /// `ghosts` is called once with `grids`, before the first slab that reads a ghost plane,
    /// and must leave the ghost planes holding the iterate the pass starts from; `written` is
    /// told the slabs written back as they are. With `pass.measure`, the last iteration
    /// measures S(u) − u over the own planes of every unknown (flat indices of a grid). An
    /// error comes with the number of slabs written back (`Slabs::interrupted`).
    fn pass(
        &mut self,
        grids: &mut [&mut [T]],
        pass: PassPlan,
        ghosts: Option<Ghosts<'_, T>>,
        written: Option<Written<'_, T>>,
    ) -> std::result::Result<Option<Difference>, (usize, Error)>;

    /// Waits until every pass so far is written back.
    fn synchronize(&mut self) -> Result<()>;
}
