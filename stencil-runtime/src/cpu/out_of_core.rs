//! The CPU twin of [`Schedule::OutOfCore`](crate::Schedule::OutOfCore): the slabs of
//! [`Slabs`] in the same order as on the GPU, each loaded into a chunk buffer (its lower
//! ghost planes from the carry), advanced by the inner schedule over the shrinking regions,
//! and written back in place. The grid itself is the only full-size array.

use super::{hierarchical, plain};
use crate::engine::{Difference, Ghosts, PassPlan, Passes, Written};
use crate::plan::Layout;
use crate::plan::fill::{Fill, fill};
use crate::plan::slabs::Slabs;
use crate::schedule::CycleSizes;
use crate::{Error, Inner, Real, Stencil};

/// What one pass over the slabs needs.
pub(crate) struct Pass<'p, S: Stencil<N>, T: Real, const N: usize> {
    pub slabs: &'p Slabs,
    pub shape: [usize; N],
    /// Per field in parameter order: the whole input grid (`None` for the unknown).
    pub inputs: &'p [Option<&'p [T]>],
    pub params: &'p S::Params<T>,
    pub inner: Inner,
    /// The boundary fill, run on each view before the iteration that reads it.
    pub fill: Fill<N>,
    /// Test hook: fail after writing back this many slabs.
    pub fail_after: Option<usize>,
}

/// One unknown's buffers, reused by every pass: its chunk twice (Jacobi ping-pong), the
/// carry, and for rotated slabs the upper carry ([`Slabs::upper_carry`]).
#[derive(Default)]
struct Buffers<T> {
    current: Vec<T>,
    next: Vec<T>,
    carry: Vec<T>,
    upper_carry: Vec<T>,
}

/// The buffers of every unknown, in declaration order.
#[derive(Default)]
pub(crate) struct Workspace<T> {
    unknowns: Vec<Buffers<T>>,
}

impl<T: Real> Workspace<T> {
    /// Allocated once, before the clock starts, for `unknowns` unknowns.
    ///
    /// **Errors**: [`Error::OutOfMemory`] when the host cannot hold the buffers.
    pub fn new(slabs: &Slabs, unknowns: usize) -> Result<Self, Error> {
        // No overflow: chunks and carries lie within the grid (`Slabs::over` clamps the height).
        let chunk = slabs.max_chunk() * slabs.plane_len;
        let carry = slabs.ghost(slabs.height) * slabs.plane_len;
        let buffer = |len: usize, what: &'static str| {
            crate::memory::filled(len, T::ZERO, move || format!("the out-of-core {what} ({len} elements)"))
        };
        let unknowns = (0..unknowns)
            .map(|_| {
                Ok(Buffers {
                    current: buffer(chunk, "chunk buffer")?,
                    next: buffer(chunk, "chunk buffer")?,
                    carry: buffer(carry, "carry")?,
                    upper_carry: buffer(if slabs.first == 0 { 0 } else { carry }, "upper carry")?,
                })
            })
            .collect::<Result<_, Error>>()?;
        Ok(Self { unknowns })
    }

    /// Every unknown's `range` of the current buffer (read) and of the next one (written).
    fn views(&mut self, range: &std::ops::Range<usize>) -> (Vec<&[T]>, Vec<&mut [T]>) {
        self.unknowns.iter_mut().map(|b| (&b.current[range.clone()], &mut b.next[range.clone()])).unzip()
    }

    /// Ends an iteration: every next buffer becomes the current one.
    fn swap(&mut self) {
        for b in &mut self.unknowns {
            std::mem::swap(&mut b.current, &mut b.next);
        }
    }
}

impl<S: Stencil<N>, T: Real, const N: usize> Pass<'_, S, T, N> {
    /// Runs `pass.len` iterations on `grids` (every unknown's, in declaration order) in
    /// place, slab by slab. With `pass.measure`, the last iteration measures S(u) − u over
    /// every slab's own planes, i.e. over the interior once; the flat index of a non-finite
    /// value is the grid's. An error after some slabs were written back comes with the number
    /// written ([`Slabs::interrupted`]). `written` is called with the number of slabs written
    /// back after each.
    pub fn run(
        &self,
        grids: &mut [&mut [T]],
        work: &mut Workspace<T>,
        pass: PassPlan,
        written: Written<'_, T>,
        ghosts: Option<Ghosts<'_, T>>,
    ) -> std::result::Result<Option<Difference>, (usize, Error)> {
        let PassPlan { len, measure, .. } = pass;
        let mut ghosts = ghosts;
        let mut bring_ghosts = |grids: &mut [&mut [T]], done: usize| match ghosts.take() {
            Some(ghosts) => ghosts(grids).map_err(|error| (done, error)),
            None => Ok(()),
        };
        // Skewed streaming cycles compute the skewed slabs' plain iterates.
        if self.inner.is_skewed() {
            bring_ghosts(grids, 0)?;
            return self.run_skewed(grids, work, len, measure, written);
        }
        let slabs = self.slabs;
        let mut total = measure.then(Difference::default);
        for (position, s) in slabs.order().enumerate() {
            if self.fail_after == Some(position) {
                return Err((position, Error::injected()));
            }
            if slabs.reads_beyond_own(s, len) {
                bring_ghosts(grids, position)?;
            }
            let chunk = slabs.chunk(s, len);
            let own = slabs.own[s].clone();
            for (u, buffers) in grids.iter().zip(&mut work.unknowns) {
                self.load(s, chunk.clone(), len, u, buffers);
            }
            self.iterate(s, chunk.clone(), pass, work, &mut total)?;
            let local = slabs.elements(&(own.start - chunk.start..own.end - chunk.start));
            for (u, buffers) in grids.iter_mut().zip(&work.unknowns) {
                u[slabs.elements(&own)].copy_from_slice(&buffers.current[local.clone()]);
            }
            written(position + 1, grids);
        }
        bring_ghosts(grids, slabs.own.len())?;
        Ok(total)
    }

    /// Loads slab `s`'s `chunk` of one unknown's grid `u` into its buffers `work` for a pass
    /// of `len`: the lower ghost planes from the carry (they are written back already) unless
    /// the slab is the first of the grid or of the pass; the planes that rotated slabs wrote
    /// back before this one from the upper carry; the rest from the grid. Keeps the carries
    /// for the slabs after it, and copies the chunk into the second buffer (its boundary
    /// values).
    fn load(&self, s: usize, chunk: std::ops::Range<usize>, len: usize, u: &[T], work: &mut Buffers<T>) {
        let slabs = self.slabs;
        let own = slabs.own[s].clone();
        let upper_carry = slabs.upper_carry(len);
        let local =
            |planes: &std::ops::Range<usize>| slabs.elements(&(planes.start - chunk.start..planes.end - chunk.start));
        let lower = chunk.start..own.start;
        if s == 0 || s == slabs.first {
            work.current[local(&lower)].copy_from_slice(&u[slabs.elements(&lower)]);
        } else {
            work.current[local(&lower)].copy_from_slice(&work.carry[..slabs.elements(&lower).len()]);
        }
        let upper = own.start..if s < slabs.first { chunk.end.min(upper_carry.start) } else { chunk.end };
        work.current[local(&upper)].copy_from_slice(&u[slabs.elements(&upper)]);
        if upper.end < chunk.end {
            let carried = upper.end..chunk.end;
            let from = slabs.elements(&(carried.start - upper_carry.start..carried.end - upper_carry.start));
            work.current[local(&carried)].copy_from_slice(&work.upper_carry[from]);
        }
        if s == slabs.first && s > 0 {
            let saved = slabs.elements(&(0..upper_carry.len()));
            work.upper_carry[saved].copy_from_slice(&work.current[local(&upper_carry)]);
        }
        let carry = slabs.carry(s, len);
        work.carry[..slabs.elements(&carry).len()].copy_from_slice(&work.current[local(&carry)]);
        let whole = local(&chunk);
        work.next[whole.clone()].copy_from_slice(&work.current[whole]);
    }

    /// The iterations of `pass` on slab `s` over the shrinking regions of its loaded
    /// `chunk`, their measurement added to `total`; the last iterate ends in `work.current`.
    fn iterate(
        &self,
        s: usize,
        chunk: std::ops::Range<usize>,
        pass: PassPlan,
        work: &mut Workspace<T>,
        total: &mut Option<Difference>,
    ) -> std::result::Result<(), (usize, Error)> {
        let PassPlan { len, measure, .. } = pass;
        let slabs = self.slabs;
        let mut done = 0;
        while done < len {
            // A measured pass ends with one plain iteration over the slab itself, so that the
            // residual covers every interior point once.
            let last_measured = measure && done + 1 == len;
            let cycle = self.inner.cycle_sizes(S::META).filter(|_| !last_measured);
            let steps = cycle.map_or(1, |c| c.sub.min(len - done - usize::from(measure)));
            let view = slabs.region(s, len, done);
            let layout = self.layout(view.len()).map_err(|e| (s, e))?;
            let range = slabs.elements(&(view.start - chunk.start..view.end - chunk.start));
            for buffers in &mut work.unknowns {
                fill(&mut buffers.current[range.clone()], layout.shape, &self.fill.view(&view));
            }
            let global = slabs.elements(&view);
            let (currents, targets) = work.views(&range);
            let fields = self.fields(&global, &currents);
            let difference = match cycle {
                Some(CycleSizes { tile, halo, .. }) => {
                    // The view's ends along axis 0 hold the chunk's older planes (the pyramid
                    // discards what they spoil), except at the grid's own outer layers.
                    let cycle = hierarchical::Cycle {
                        edges: self.fill.cycle_edges(&view),
                        ..hierarchical::Cycle::new(&layout, tile, halo, steps)
                    };
                    hierarchical::cycle::<S, T, N>(&layout, &cycle, &fields, targets, self.params, None)
                        .map_err(|e| (s, e))?
                }
                None => plain::apply_all::<S, T, N>(&layout, &fields, targets, self.params, last_measured),
            };
            add(total, difference, global.start);
            work.swap();
            done += steps;
        }
        Ok(())
    }

    /// The layout of a view of `planes` planes of the grid's slowest axis.
    fn layout(&self, planes: usize) -> Result<Layout<N>, Error> {
        let mut shape = self.shape;
        shape[0] = planes;
        Layout::new(S::META, shape)
    }

    /// The fields over the grid's `elements`, in parameter order, with `unknowns` (the
    /// view's current iterate of every unknown, declaration order) at the unknowns' places.
    fn fields<'f>(&'f self, elements: &std::ops::Range<usize>, unknowns: &[&'f [T]]) -> Vec<&'f [T]> {
        // The unknowns' places come in declaration order.
        let mut unknowns = unknowns.iter();
        let mut next = || *unknowns.next().expect("one view per unknown");
        self.inputs.iter().map(|f| f.map_or_else(&mut next, |grid| &grid[elements.clone()])).collect()
    }

    /// [`run`](Self::run) over skewed slabs: each slab's window holds the planes its
    /// iterations read, iterate t in buffer t mod 2; the window's lower part is the previous
    /// window's upper part (moved down), the rest is loaded from the grid; iteration t
    /// updates [`Slabs::level`]; the slab's last level is written back.
    fn run_skewed(
        &self,
        grids: &mut [&mut [T]],
        work: &mut Workspace<T>,
        len: usize,
        measure: bool,
        written: Written<'_, T>,
    ) -> std::result::Result<Option<Difference>, (usize, Error)> {
        let slabs = self.slabs;
        let r = slabs.radius;
        let mut total = measure.then(Difference::default);
        let mut previous: Option<std::ops::Range<usize>> = None;
        for s in 0..slabs.own.len() {
            if self.fail_after == Some(s) {
                return Err((s, Error::injected()));
            }
            let window = slabs.window(s, len);
            let local = |planes: &std::ops::Range<usize>| {
                slabs.elements(&(planes.start - window.start..planes.end - window.start))
            };
            let fresh = slabs.fresh(s, len);
            for (u, work) in grids.iter().zip(&mut work.unknowns) {
                if let Some(before) = &previous {
                    // The planes below the fresh ones, at every iterate, from the previous window.
                    let kept = slabs.elements(&(window.start - before.start..fresh.start - before.start));
                    work.current.copy_within(kept.clone(), 0);
                    work.next.copy_within(kept, 0);
                }
                // Both buffers, so that the boundary values are in the odd iterates too.
                work.current[local(&fresh)].copy_from_slice(&u[slabs.elements(&fresh)]);
                work.next[local(&fresh)].copy_from_slice(&u[slabs.elements(&fresh)]);
            }
            for t in 1..=len {
                let level = slabs.level(s, len, t);
                if level.is_empty() {
                    continue;
                }
                let view = level.start - r..level.end + r;
                let layout = self.layout(view.len()).map_err(|e| (s, e))?;
                let range = local(&view);
                let global = slabs.elements(&view);
                // The view of iterate t − 1, its outer layers filled.
                for work in &mut work.unknowns {
                    let read = if t % 2 == 1 { &mut work.current } else { &mut work.next };
                    fill(&mut read[range.clone()], layout.shape, &self.fill.view(&view));
                }
                let (sources, targets): (Vec<&[T]>, Vec<&mut [T]>) = work
                    .unknowns
                    .iter_mut()
                    .map(|b| {
                        let (even, odd) = (&mut b.current, &mut b.next);
                        let (source, target) = if t % 2 == 1 { (&*even, odd) } else { (&*odd, even) };
                        (&source[range.clone()], &mut target[range.clone()])
                    })
                    .unzip();
                let fields = self.fields(&global, &sources);
                let measured = measure && t == len;
                let difference = plain::apply_all::<S, T, N>(&layout, &fields, targets, self.params, measured);
                add(&mut total, difference, global.start);
            }
            let last = slabs.level(s, len, len);
            for (u, work) in grids.iter_mut().zip(&work.unknowns) {
                let done = if len.is_multiple_of(2) { &work.current } else { &work.next };
                u[slabs.elements(&last)].copy_from_slice(&done[local(&last)]);
            }
            previous = Some(window);
            written(s + 1, grids);
        }
        Ok(total)
    }
}

/// Adds a view's measurement to the pass's `total`; the view starts at flat index `offset`
/// of the grid.
fn add(total: &mut Option<Difference>, view: Option<Difference>, offset: usize) {
    if let (Some(total), Some(d)) = (total.as_mut(), view) {
        *total = total.merge(Difference { first_non_finite: d.first_non_finite.map(|i| i + offset), ..d });
    }
}

/// The rayon twin of the out-of-core passes: one [`Pass`] and its [`Workspace`].
pub(crate) struct CpuPasses<'p, S: Stencil<N>, T: Real, const N: usize> {
    pub pass: Pass<'p, S, T, N>,
    pub work: Workspace<T>,
}

impl<S: Stencil<N>, T: Real, const N: usize> Passes<T> for CpuPasses<'_, S, T, N> {
    fn pass(
        &mut self,
        grids: &mut [&mut [T]],
        pass: PassPlan,
        ghosts: Option<Ghosts<'_, T>>,
        written: Option<Written<'_, T>>,
    ) -> std::result::Result<Option<Difference>, (usize, Error)> {
        let mut nobody = |_, _: &[&mut [T]]| {};
        self.pass.run(grids, &mut self.work, pass, written.unwrap_or(&mut nobody), ghosts)
    }

    fn synchronize(&mut self) -> Result<(), Error> {
        Ok(())
    }
}
