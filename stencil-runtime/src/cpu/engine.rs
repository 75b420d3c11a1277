//! The rayon engine: the user's grid updated in place (a Jacobi step writes a second buffer,
//! swapped with the grid's), by the CPU twin's plain pass, hierarchical cycles or sweeps.

use std::ops::Range;

use super::{hierarchical, plain, sweep};
use crate::engine::{CycleCheck, Difference, Engine};
use crate::plan::Layout;
use crate::plan::fill::{Fill, FillCopy, fill};
use crate::plan::planes::Halo;
use crate::{Grid, Real, Result, Schedule, Stencil};

/// Sweeps `planes` of a grid of the given shape in place with a further stencil of the run.
type OtherSweep<'j, T, const N: usize> = Box<dyn FnMut(&mut [T], [usize; N], Range<usize>) -> Result<()> + 'j>;

/// A system's further unknown: the user's grid and its second buffer.
struct Unknown<'g, T: Real, const N: usize> {
    grid: &'g mut Grid<T, N>,
    next: Vec<T>,
}

/// The user's grid on the CPU, run by stencil `S` (and, for alternating steps, further
/// sweep stencils).
pub(crate) struct CpuEngine<'g, 'j, S: Stencil<N>, T: Real, const N: usize> {
    u: &'g mut Grid<T, N>,
    next: Vec<T>,
    /// A system's further unknowns, in declaration order (Jacobi steps only).
    more: Vec<Unknown<'g, T, N>>,
    inputs: Vec<Option<&'j [T]>>,
    params: S::Params<T>,
    shape: [usize; N],
    radius: usize,
    plane_len: usize,
    /// How a sweep stencil's planes are swept (sequentially, or by a rayon wavefront).
    schedule: Schedule,
    /// The hierarchical schedule's tile and halo, when it has cycles.
    cycle: Option<(usize, usize)>,
    measured: Option<Difference>,
    /// Every unknown's iterate at the last check, when a check measures the change since
    /// then (`Engine::keep_reference`).
    reference: Option<Vec<Vec<T>>>,
    /// Whether an inexact cycle of this iteration looked for non-finite values.
    cycle_checked: bool,
    others: Vec<OtherSweep<'j, T, N>>,
    /// The boundary fill's copies.
    fill: Vec<FillCopy>,
    /// The boundary conditions where the grid's edges are, for hierarchical cycles.
    edges: Option<Fill<N>>,
}

impl<'g, 'j, S: Stencil<N>, T: Real, const N: usize> CpuEngine<'g, 'j, S, T, N> {
    /// The engine of `u` with `S`'s read-only fields `inputs` (`None` at the unknown).
    /// `second`: whether to allocate the second buffer, which Jacobi steps and measured
    /// sweeps need.
    pub fn new(
        u: &'g mut Grid<T, N>,
        inputs: Vec<Option<&'j [T]>>,
        params: S::Params<T>,
        schedule: Schedule,
        second: bool,
    ) -> Result<Self> {
        let shape = u.shape();
        let next = if second { super::second_buffer(u)? } else { Vec::new() };
        Ok(Self {
            // A streaming cycle runs as the exact hierarchical cycle it equals.
            cycle: schedule.cycle_sizes(S::META).map(|sizes| (sizes.tile, sizes.halo)),
            next,
            u,
            more: Vec::new(),
            inputs,
            params,
            shape,
            schedule,
            radius: S::META.radius[0],
            plane_len: shape[1..].iter().product(),
            measured: None,
            reference: None,
            cycle_checked: false,
            others: Vec::new(),
            fill: Vec::new(),
            edges: None,
        })
    }

    /// This engine with a system's further unknowns `more` (declaration order), each with
    /// a second buffer.
    pub fn with_unknowns(mut self, more: Vec<&'g mut Grid<T, N>>) -> Result<Self> {
        for grid in more {
            let next = super::second_buffer(grid)?;
            self.more.push(Unknown { grid, next });
        }
        Ok(self)
    }

    /// This engine with its periodic and Neumann outer layers filled by `fill`'s copies, and
    /// its hierarchical cycles' working regions meeting the grid's edges as `fill` says.
    pub fn with_fill(mut self, fill: Fill<N>) -> Self {
        self.fill = fill.whole();
        self.edges = Some(fill);
        self
    }

    /// How a cycle over the planes `window` meets the grid's edges.
    fn cycle_edges(&self, window: &Range<usize>) -> crate::plan::fill::CycleEdges<N> {
        self.edges.map(|fill| fill.cycle_edges(window)).unwrap_or_default()
    }

    /// Adds sweep stencil `B` with its fields and parameters: `sweep(k, …)` sweeps with the
    /// k-th stencil added (the engine's own is 0).
    pub fn with_sweeps<B: Stencil<N>>(mut self, inputs: Vec<Option<&'j [T]>>, params: B::Params<T>) -> Self {
        let schedule = self.schedule;
        self.others.push(Box::new(move |u, shape, planes| {
            sweep::planes::<B, T, N>(u, shape, &inputs, &params, schedule, planes)
        }));
        self
    }

    fn elements(&self, planes: &Range<usize>) -> Range<usize> {
        planes.start * self.plane_len..planes.end * self.plane_len
    }

    /// The next iterate's change from the reference over `planes`' interior points (every
    /// unknown), after which those planes of the next iterate are the reference.
    fn changed_since_reference(&mut self, planes: Range<usize>) -> Result<Difference> {
        let layout = Layout::new(S::META, self.shape)?;
        let nexts = std::iter::once(&self.next[..]).chain(self.more.iter().map(|m| &m.next[..]));
        let mut changed = Difference::default();
        for (next, reference) in nexts.zip(self.reference.iter_mut().flatten()) {
            changed = changed.merge(Difference::since(&layout, planes.clone(), next, reference));
        }
        Ok(changed)
    }

    fn add(&mut self, measured: Option<Difference>, offset: usize) {
        if let Some(d) = measured {
            let d = d.shifted(offset);
            self.measured = Some(self.measured.map_or(d, |m| m.merge(d)));
        }
    }
}

/// Every unknown's current iterate (`u`'s, then `more`'s) over `elements` of the grid, and
/// its next one (`next`, then `more`'s), in declaration order.
fn iterates<'a, T: Real, const N: usize>(
    u: &'a Grid<T, N>,
    next: &'a mut [T],
    more: &'a mut [Unknown<'_, T, N>],
    elements: &Range<usize>,
) -> (Vec<&'a [T]>, Vec<&'a mut [T]>) {
    let mut currents = vec![&u.as_slice()[elements.clone()]];
    let mut outs = vec![&mut next[elements.clone()]];
    for Unknown { grid, next } in more {
        currents.push(&grid.as_slice()[elements.clone()]);
        outs.push(&mut next[elements.clone()]);
    }
    (currents, outs)
}

/// The fields over `elements` of the grid, in declaration order, with `currents` (the
/// unknowns' iterates there, in declaration order) at the unknowns' places (`None` among
/// `inputs`).
fn fields_of<'f, T>(inputs: &[Option<&'f [T]>], elements: &Range<usize>, currents: &[&'f [T]]) -> Vec<&'f [T]> {
    let mut unknowns = currents.iter();
    inputs.iter().map(|f| f.map_or_else(|| *unknowns.next().expect("an unknown"), |f| &f[elements.clone()])).collect()
}

impl<S: Stencil<N>, T: Real, const N: usize> Engine<T, N> for CpuEngine<'_, '_, S, T, N> {
    const QUEUED: bool = false;

    fn update(&mut self, planes: Range<usize>, steps: usize, measure: bool) -> Result<()> {
        if planes.is_empty() {
            return Ok(());
        }
        // The planes and those their steps read, seen as a grid of their own whose interior
        // holds `planes` (whose outer `r` planes stay as they are).
        let reach = steps * self.radius;
        let window = planes.start.saturating_sub(reach)..(planes.end + reach).min(self.shape[0]);
        let elements = self.elements(&window);
        let mut shape = self.shape;
        shape[0] = window.len();
        let layout = Layout::new(S::META, shape)?;
        let edges = self.cycle_edges(&window);
        let (currents, outs) = iterates(self.u, &mut self.next, &mut self.more, &elements);
        let fields = fields_of(&self.inputs, &elements, &currents);
        // Against the reference, the change is measured after the update.
        let (measure, against_reference) = (measure && self.reference.is_none(), measure && self.reference.is_some());
        let measured = match self.cycle {
            Some((tile, halo)) if steps > 1 => {
                let cycle = hierarchical::Cycle { edges, ..hierarchical::Cycle::new(&layout, tile, halo, steps) };
                let measure = measure.then_some(steps - 1);
                hierarchical::cycle::<S, T, N>(&layout, &cycle, &fields, outs, &self.params, measure)?
            }
            _ => plain::apply_all::<S, T, N>(&layout, &fields, outs, &self.params, measure),
        };
        self.add(measured, elements.start);
        if against_reference {
            let changed = self.changed_since_reference(planes)?;
            self.add(Some(changed), 0);
        }
        Ok(())
    }

    fn keep_reference(&mut self) -> Result<()> {
        let grids = std::iter::once(&*self.u).chain(self.more.iter().map(|m| &*m.grid));
        self.reference = Some(grids.map(|g| g.as_slice().to_vec()).collect());
        Ok(())
    }

    fn inexact_cycle(&mut self, cores: Range<usize>, len: usize, check: CycleCheck) -> Result<()> {
        let Some((tile, halo)) = self.cycle.filter(|_| !cores.is_empty()) else { return Ok(()) };
        let layout = Layout::new(S::META, self.shape)?;
        let cycle = hierarchical::Cycle {
            cores0: (cores.start, cores.end),
            edges: self.cycle_edges(&(0..self.shape[0])),
            ..hierarchical::Cycle::new(&layout, tile, halo, len)
        };
        let whole = 0..self.shape[0] * self.plane_len;
        let (currents, outs) = iterates(self.u, &mut self.next, &mut self.more, &whole);
        let fields = fields_of(&self.inputs, &whole, &currents);
        let measure = (check != CycleCheck::None).then_some(0);
        let written = hierarchical::cycle::<S, T, N>(&layout, &cycle, &fields, outs, &self.params, measure)?;
        match (check, written) {
            (CycleCheck::Residual, written) => self.add(written, 0),
            (CycleCheck::NonFinite, Some(written)) => {
                // The first of the iteration's checked cycles replaces the measuring update's
                // finding: the values to check are those the cycles write.
                let checked = std::mem::replace(&mut self.cycle_checked, true);
                let measured = self.measured.get_or_insert_default();
                measured.first_non_finite = match checked {
                    false => written.first_non_finite,
                    true => measured.first_non_finite.into_iter().chain(written.first_non_finite).min(),
                };
            }
            _ => {}
        }
        Ok(())
    }

    fn sweep(&mut self, which: usize, planes: Range<usize>) -> Result<()> {
        let (u, shape) = (self.u.as_mut_slice(), self.shape);
        match which {
            0 => sweep::planes::<S, T, N>(u, shape, &self.inputs, &self.params, self.schedule, planes),
            k => (self.others[k - 1])(u, shape, planes),
        }
    }

    fn mark(&mut self) -> Result<()> {
        Ok(())
    }

    fn stage(&mut self, lower: Range<usize>, upper: Range<usize>, send: &mut Halo<T>, next: bool) -> Result<()> {
        // A system's unknowns one after another, in declaration order.
        let (lower, upper) = (self.elements(&lower), self.elements(&upper));
        let sources: Vec<&[T]> = match next {
            true => std::iter::once(&self.next[..]).chain(self.more.iter().map(|m| &m.next[..])).collect(),
            false => std::iter::once(self.u.as_slice()).chain(self.more.iter().map(|m| m.grid.as_slice())).collect(),
        };
        for (k, from) in sources.into_iter().enumerate() {
            send.lower[k * lower.len()..][..lower.len()].copy_from_slice(&from[lower.clone()]);
            send.upper[k * upper.len()..][..upper.len()].copy_from_slice(&from[upper.clone()]);
        }
        Ok(())
    }

    fn swap(&mut self) {
        self.u.swap_data(&mut self.next);
        for Unknown { grid, next } in &mut self.more {
            grid.swap_data(next);
        }
    }

    fn fill(&mut self) -> Result<()> {
        fill(self.u.as_mut_slice(), self.shape, &self.fill);
        for Unknown { grid, .. } in &mut self.more {
            fill(grid.as_mut_slice(), self.shape, &self.fill);
        }
        Ok(())
    }

    fn unstage(&mut self, lower: Range<usize>, upper: Range<usize>, recv: &Halo<T>) -> Result<()> {
        let (lower, upper) = (self.elements(&lower), self.elements(&upper));
        let grids = std::iter::once(&mut *self.u).chain(self.more.iter_mut().map(|m| &mut *m.grid));
        for (k, grid) in grids.enumerate() {
            let into = grid.as_mut_slice();
            into[lower.clone()].copy_from_slice(&recv.lower[k * lower.len()..][..lower.len()]);
            into[upper.clone()].copy_from_slice(&recv.upper[k * upper.len()..][..upper.len()]);
        }
        Ok(())
    }

    fn restore(&mut self, lower: Range<usize>, upper: Range<usize>, sent: &Halo<T>) -> Result<()> {
        // Every update has finished when it returns.
        self.unstage(lower, upper, sent)
    }

    fn read(&mut self, planes: Range<usize>, into: &mut [T]) -> Result<()> {
        into.copy_from_slice(&self.u.as_slice()[self.elements(&planes)]);
        Ok(())
    }

    fn write(&mut self, planes: Range<usize>, from: &[T]) -> Result<()> {
        let elements = self.elements(&planes);
        self.u.as_mut_slice()[elements].copy_from_slice(from);
        Ok(())
    }

    fn difference(&mut self) -> Result<Difference> {
        self.cycle_checked = false;
        Ok(self.measured.take().unwrap_or_default())
    }

    fn find_non_finite(&mut self, _own: Range<usize>, part: Range<usize>) -> Result<Option<usize>> {
        // As one process on the CPU: the first non-finite value of the iterate.
        use rayon::prelude::*;
        let elements = self.elements(&part);
        let values = &self.u.as_slice()[elements.clone()];
        Ok(values.par_iter().position_first(|v| !v.is_finite()).map(|at| at + elements.start))
    }

    fn value_at(&mut self, at: usize) -> Result<f64> {
        // Of a system, the first unknown's value there that is not finite.
        let values = std::iter::once(&*self.u).chain(self.more.iter().map(|m| &*m.grid)).map(|g| g.as_slice()[at]);
        let values: Vec<T> = values.collect();
        Ok(values.iter().find(|v| !v.is_finite()).unwrap_or(&values[0]).to_f64())
    }

    fn wait(&mut self) -> Result<()> {
        Ok(())
    }

    fn host(&mut self) -> Result<&mut Grid<T, N>> {
        Ok(self.u)
    }

    fn hosts(&mut self) -> Result<Vec<&Grid<T, N>>> {
        Ok(std::iter::once(&*self.u).chain(self.more.iter().map(|m| &*m.grid)).collect())
    }

    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}
