//! The device side of out-of-core passes over one set of slabs: the kernels, the three
//! streams, the two slots, the carries and the check's buffers, set up once; a pass runs
//! the slabs in order, each loaded, iterated and written back in place, as a pyramid
//! (this file) or as a skewed slab (`skewed.rs`).
//!
//! Three streams overlap the work: `up` copies a slab's chunk (every unknown's planes from
//! its own first plane on, and every read-only field) into one of two device slots, `compute`
//! fills the chunk's lower ghost planes from the carry, keeps the old planes the next slab
//! needs, and runs the slab's iterations over the shrinking regions, and `down` writes the
//! slab's own planes back into the grid in place. While one slot computes, the other is
//! being filled or emptied. Device buffers are ordered across streams by cudarc's event
//! tracking (every buffer records its last read and write); host memory is ordered by hand
//! (`order.rs`): a slab's copy up waits for the previous pass's write-backs of the planes it
//! reads, and the slots alternate across passes. At the seam between two passes
//! (`ahead.rs`) the check is kept in host memory and the next pass's first skewed slab may be
//! computed before the host has read it.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr};

use super::check::{Ahead, CheckHost};
use super::order::PassOrder;
use crate::cuda::device::{Gpu, driver_error};
use crate::cuda::launch::{Args, Kernel, fill, launch};
use crate::cuda::module::{JitTime, Module};
use crate::cuda::options::CudaOptions;
use crate::engine::{Difference, Ghosts, PassPlan, Written};
use crate::kernel::KernelKind;
use crate::plan::fill::Fill;
use crate::plan::launch::{CYCLE_INTS, Cycle, Shape, plain};
use crate::plan::slabs::Slabs;
use crate::plan::stream::StreamBuild;
use crate::schedule::CycleSizes;
use crate::{Error, Inner, Real, Result, ScalarValue, Stencil};

/// One device slot: the chunk of every unknown twice (Jacobi ping-pong, declaration order)
/// and of every read-only field once (`None` at the unknowns' places).
pub(super) struct Slot<T> {
    pub u: Vec<[CudaSlice<T>; 2]>,
    pub fields: Vec<Option<CudaSlice<T>>>,
}

impl<T: DeviceRepr> Slot<T> {
    /// Views of the elements `range` for a launch that reads buffer `from` of every unknown
    /// and writes the other one: (every field with the unknowns' sources at their places,
    /// every unknown's target).
    pub(super) fn views<const N: usize, S: Stencil<N>>(
        &mut self,
        range: Range<usize>,
        from: usize,
    ) -> (Vec<Option<CudaView<'_, T>>>, Vec<CudaViewMut<'_, T>>) {
        let (sources, targets): (Vec<&CudaSlice<T>>, Vec<CudaViewMut<'_, T>>) = self
            .u
            .iter_mut()
            .map(|[a, b]| {
                let (source, target) = if from == 0 { (&*a, b) } else { (&*b, a) };
                (source, target.slice_mut(range.clone()))
            })
            .unzip();
        let unknown = |field: usize| S::META.unknowns.iter().position(|&u| u == field).map(|k| sources[k]);
        let fields = self
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| Some(f.as_ref().or_else(|| unknown(i)).expect("a field or an unknown").slice(range.clone())))
            .collect();
        (fields, targets)
    }
}

/// What runs a slab's iterations: the plain kernel, or cycles of exact temporal blocking
/// (the hierarchical kernel, or the streaming kernel of `stream`'s build).
pub(super) enum Kernels {
    Plain { pass: Kernel, measure: Kernel },
    Cycles { cycle: Kernel, measure: Kernel, sizes: CycleSizes, stream: Option<StreamBuild> },
}

/// The device side of out-of-core passes over one set of slabs (the module documentation).
pub(crate) struct Pyramid<'g, S: Stencil<N>, T: Real, const N: usize> {
    pub(super) gpu: &'g Gpu,
    pub(super) slabs: Slabs,
    /// The grid's shape (the slabs' planes along axis 0).
    pub(super) shape: [usize; N],
    pub(super) kernels: Kernels,
    /// How a slab's iterations run.
    pub(super) inner: Inner,
    pub(super) block: [u32; 3],
    pub(super) up: Arc<CudaStream>,
    pub(super) compute: Arc<CudaStream>,
    pub(super) down: Arc<CudaStream>,
    pub(super) slots: Vec<Slot<T>>,
    /// Every unknown's carry.
    pub(super) carry: Vec<CudaSlice<T>>,
    /// Skewed streaming cycles: every unknown's planes set aside for the next slab at each
    /// cycle boundary (`Slabs::skirt_planes`; empty otherwise), one store for both slots.
    pub(super) skirts: Vec<CudaSlice<T>>,
    /// For rotated slabs (under an MPI rank), every unknown's [`Slabs::upper_carry`].
    pub(super) upper_carry: Vec<CudaSlice<T>>,
    /// Every slab's measuring launch, and its entries in the block arrays.
    pub(super) measure_shapes: Vec<Shape>,
    pub(super) block_offsets: Vec<usize>,
    pub(super) block_max: CudaSlice<f64>,
    pub(super) block_sum: CudaSlice<f64>,
    pub(super) first_bad: CudaSlice<u64>,
    pub(super) scalars: Vec<ScalarValue<T>>,
    /// Test hook: fail before running slab `n` of a pass (none unless set).
    pub(super) fail_after: Option<usize>,
    /// How a pass's copies wait for the passes before it.
    pub(super) order: PassOrder,
    /// The next pass's first skewed slab, computed on the device before the host has read
    /// the check of the pass before (see [`compute_ahead`](Self::compute_ahead)).
    pub(super) ahead: Option<Ahead>,
    /// The check of the last measured pass, copied into page-locked host memory as the pass
    /// ends (the next pass's first slab may overwrite the device's buffers meanwhile).
    pub(super) check_host: Option<CheckHost>,
    /// The boundary kernel and fill, when a side is periodic or Neumann: every view is
    /// filled before the iteration that reads it.
    pub(super) fill: Option<(Kernel, Fill<N>)>,
    pub(super) _stencil: std::marker::PhantomData<S>,
}

impl<S: Stencil<N>, T: Real, const N: usize> Drop for Pyramid<'_, S, T, N> {
    fn drop(&mut self) {
        // A copy of the next pass's first slab may still be reading the grid, whose pages are
        // unlocked once the passes are dropped.
        let _ = self.synchronize();
    }
}

/// Every slab's measuring launch, over its own planes (skewed: its last level, whose size
/// depends on the pass's length; the most blocks any length needs), so that its blocks get
/// entries of their own.
fn measure_shapes<S: Stencil<N>, const N: usize>(
    slabs: &Slabs,
    shape: [usize; N],
    block: [u32; 3],
    gpu: &Gpu,
) -> Result<Vec<Shape>> {
    let measured_planes = |s: usize| {
        if slabs.skewed {
            (1..=slabs.height).map(|len| slabs.level(s, len, len).len()).max().unwrap_or(0)
        } else {
            slabs.own[s].len()
        }
    };
    (0..slabs.own.len())
        .map(|s| {
            plain(S::KERNELS, view_dims::<S, N>(shape, measured_planes(s) + 2 * slabs.radius), block, 1, gpu.limits())
        })
        .collect()
}

/// The launch of a cycle of `sizes` over a view seen as `dims` whose regions meet the
/// grid's edges as `edges` says: the streaming kernel's, or the hierarchical kernel's in
/// shared memory.
fn cycle_geometry<S: Stencil<N>, const N: usize>(
    stream: Option<&StreamBuild>,
    dims: [usize; 3],
    sizes: CycleSizes,
    elem: usize,
    gpu: &Gpu,
    edges: [i32; 3],
) -> Result<Cycle> {
    match stream {
        Some(stream) => stream.cycle(S::KERNELS, dims, sizes, elem, gpu.limits(), edges),
        None => Cycle::new(S::KERNELS, dims, sizes, elem, false, gpu.limits(), edges),
    }
}

/// The kernels' three extents for a view of `planes` planes (along axis 0) of a grid of
/// `shape`.
pub(super) fn view_dims<S: Stencil<N>, const N: usize>(mut shape: [usize; N], planes: usize) -> [usize; 3] {
    shape[0] = planes;
    S::KERNELS.view(&shape, 1)
}

/// Pyramid slab `s`'s chunk in a pass of `len`, and the parts of it copied up from the
/// host: (the lower ghost planes, the planes from its own first on, the chunk). Before a
/// rotated pass's first slab the upper part stops where the upper carry begins.
pub(super) fn pyramid_parts(slabs: &Slabs, s: usize, len: usize) -> (Range<usize>, Range<usize>, Range<usize>) {
    let chunk = slabs.chunk(s, len);
    let own = &slabs.own[s];
    let end = if s < slabs.first { chunk.end.min(slabs.upper_carry(len).start) } else { chunk.end };
    (chunk.start..own.start, own.start..end, chunk)
}

impl<'g, S: Stencil<N>, T: Real, const N: usize> Pyramid<'g, S, T, N> {
    /// The pass's kernels for chunks seen as `chunk_dims` at most, and the fill's when
    /// `fill` has copies, compiled together.
    fn kernels(
        gpu: &Gpu,
        options: &CudaOptions,
        slabs: &Slabs,
        inner: Inner,
        fill: &Fill<N>,
        chunk_dims: [usize; 3],
    ) -> Result<(Kernels, Option<Kernel>, JitTime)> {
        let sizes = inner.cycle_sizes(S::META);
        // The regions meet the same edges on axes 1 and 2 in every view; on axis 0 the first
        // and the last views meet the grid's own.
        let planes = fill.shape[0];
        let edges = [0..slabs.max_chunk(), planes.saturating_sub(slabs.max_chunk())..planes]
            .map(|view| fill.cycle_edges(&view).flags(S::KERNELS.axes));
        let edges: [i32; 3] = std::array::from_fn(|k| edges[0][k] | edges[1][k]);
        let stream = match (inner, sizes) {
            (Inner::Streaming { .. } | Inner::SkewedStreaming { .. }, Some(sizes)) => {
                Some(StreamBuild::new(S::KERNELS, chunk_dims, sizes, options.stream_block_threads(), edges, T::BYTES))
            }
            _ => None,
        };
        let pass = match (inner, sizes) {
            (Inner::Streaming { .. } | Inner::SkewedStreaming { .. }, _) => KernelKind::Streaming,
            (_, Some(_)) => KernelKind::Hierarchical,
            _ => KernelKind::Plain,
        };
        let mut kinds = vec![KernelKind::PlainMeasure, pass];
        if fill.any() {
            kinds.push(KernelKind::Boundary);
        }
        let defines = stream.iter().flat_map(StreamBuild::defines).collect::<Vec<_>>();
        let (module, jit) = Module::<S>::load::<T, N>(gpu, options, chunk_dims, &kinds, &defines)?;
        let measure = module.kernel::<N>(KernelKind::PlainMeasure)?;
        let kernels = match sizes {
            Some(sizes) => {
                let cycle = module.kernel::<N>(pass)?;
                // The largest chunk's cycle bounds every launch's shared memory.
                let largest = cycle_geometry::<S, N>(stream.as_ref(), chunk_dims, sizes, T::BYTES, gpu, edges)?;
                cycle.allow_shared(largest.shape.shared as usize)?;
                Kernels::Cycles { cycle, measure, sizes, stream }
            }
            None => Kernels::Plain { pass: module.kernel::<N>(KernelKind::Plain)?, measure },
        };
        let fill_kernel = if fill.any() { Some(module.kernel::<N>(KernelKind::Boundary)?) } else { None };
        Ok((kernels, fill_kernel, jit))
    }

    /// Compiles the kernels for the largest chunk and allocates the buffers of `slabs` with
    /// `inner` iterations, for a grid of `fill.shape` whose read-only fields are the `Some`s
    /// of `inputs` (parameter order), its views filled by `fill`.
    pub(crate) fn new(
        gpu: &'g Gpu,
        options: &CudaOptions,
        slabs: Slabs,
        inner: Inner,
        fill: Fill<N>,
        inputs: &[Option<&[T]>],
        params: &S::Params<T>,
    ) -> Result<(Self, JitTime)> {
        let shape = fill.shape;
        let block = options.plain_block(S::KERNELS, N);
        let measure_shapes = measure_shapes::<S, N>(&slabs, shape, block, gpu)?;
        let block_offsets: Vec<usize> =
            measure_shapes.iter().scan(0, |total, s| Some(std::mem::replace(total, *total + s.blocks()))).collect();
        let total_blocks: usize = measure_shapes.iter().map(Shape::blocks).sum();
        let chunk_dims = view_dims::<S, N>(shape, slabs.max_chunk());
        let (kernels, fill_kernel, jit) = Self::kernels(gpu, options, &slabs, inner, &fill, chunk_dims)?;
        // Streams before buffers: cudarc tracks a buffer's uses across streams only when it is
        // allocated with more than one stream in the context.
        let stream = || gpu.ctx.new_stream().map_err(driver_error("creating a stream"));
        let (up, compute, down) = (stream()?, stream()?, stream()?);
        let alloc = |n: usize| gpu.alloc_zeros::<T>(&compute, n.max(1), "a slab buffer");
        let chunk_len = slabs.max_chunk() * slabs.plane_len;
        let unknowns = 0..S::META.unknowns.len();
        let mut slots = Vec::with_capacity(2);
        for _ in 0..2 {
            let fields = inputs.iter().map(|f| f.map(|_| alloc(chunk_len)).transpose()).collect::<Result<_>>()?;
            let u = unknowns.clone().map(|_| Ok([alloc(chunk_len)?, alloc(chunk_len)?])).collect::<Result<_>>()?;
            slots.push(Slot { u, fields });
        }
        let skirts = match slabs.skirt_planes() {
            0 => Vec::new(),
            planes => unknowns.clone().map(|_| alloc(planes * slabs.plane_len)).collect::<Result<_>>()?,
        };
        let carry_len = slabs.ghost(slabs.height) * slabs.plane_len;
        let carry = unknowns.clone().map(|_| alloc(carry_len)).collect::<Result<_>>()?;
        let upper_len = if slabs.first == 0 { 0 } else { carry_len };
        let upper_carry = unknowns.map(|_| alloc(upper_len)).collect::<Result<_>>()?;
        let allocate = |n: usize| gpu.alloc_zeros::<f64>(&compute, n.max(1), "the residual's per-block results");
        let (block_max, block_sum) = (allocate(total_blocks)?, allocate(total_blocks)?);
        let first_bad = gpu.alloc_zeros::<u64>(&compute, slabs.own.len(), "the non-finite flags")?;
        let pyramid = Self {
            gpu,
            slabs,
            shape,
            kernels,
            inner,
            block,
            up,
            compute,
            down,
            slots,
            carry,
            skirts,
            upper_carry,
            measure_shapes,
            block_offsets,
            block_max,
            block_sum,
            first_bad,
            scalars: S::param_values(params),
            fail_after: None,
            order: PassOrder::default(),
            ahead: None,
            check_host: None,
            fill: fill_kernel.map(|kernel| (kernel, fill)),
            _stencil: std::marker::PhantomData,
        };
        Ok((pyramid, jit))
    }

    /// The slabs the passes run over.
    pub(crate) fn slabs(&self) -> &Slabs {
        &self.slabs
    }

    /// Runs `pass.len` iterations (at most the slabs' height) on `host` (every unknown's
    /// grid, declaration order) in place, slab by slab; `inputs` are the read-only fields over
    /// the same grid (parameter order, `None` for the unknowns). With `pass.measure`, the last
    /// iteration measures S(u) − u over every slab's own planes, and the pass waits for the
    /// device and returns the measurement (the flat index of a non-finite value is a grid's). `written`, if any, is told how many slabs are
    /// written back as their copies finish (one slab behind the work enqueued). `ghosts`, if
    /// any, is called on the host once, before the first slab that reads beyond the own
    /// planes is enqueued (the slabs before it run meanwhile), or after the last. An error
    /// comes with the number of slabs whose write-back was enqueued
    /// ([`Slabs::interrupted`]).
    pub(crate) fn pass(
        &mut self,
        host: &mut [&mut [T]],
        inputs: &[Option<&[T]>],
        pass: PassPlan,
        written: Option<Written<'_, T>>,
        ghosts: Option<Ghosts<'_, T>>,
    ) -> std::result::Result<Option<Difference>, (usize, Error)> {
        let mut enqueued = 0;
        let result = self.enqueue(host, inputs, pass, &mut enqueued, written, ghosts);
        if let Err(error) = result {
            // What was enqueued is written once the copies finish (they do not run after a
            // sticky device error; the count is then an upper bound, as the error says).
            let _ = self.down.synchronize();
            return Err((enqueued, error));
        }
        if !pass.measure {
            return Ok(None);
        }
        // Every write-back is enqueued; an error reading the check is the device's own.
        self.measured(pass.len).map(Some).map_err(|error| (self.slabs.own.len(), error))
    }

    /// Waits for every copy and kernel.
    pub(crate) fn synchronize(&self) -> Result<()> {
        for stream in [&self.up, &self.compute, &self.down] {
            stream.synchronize().map_err(driver_error("waiting for the device"))?;
        }
        Ok(())
    }

    /// Enqueues a pass (see [`pass`](Self::pass)), counting the write-backs in `enqueued`.
    fn enqueue(
        &mut self,
        host: &mut [&mut [T]],
        inputs: &[Option<&[T]>],
        pass: PassPlan,
        enqueued: &mut usize,
        mut written: Option<Written<'_, T>>,
        mut ghosts: Option<Ghosts<'_, T>>,
    ) -> Result<()> {
        let len = pass.len;
        let ahead = self.take_ahead(len, pass.measure)?;
        if pass.measure && ahead.is_none() {
            self.reset_check()?;
        }
        // Write-backs whose end has not been told yet.
        let mut in_flight = std::collections::VecDeque::new();
        let count = self.slabs.own.len();
        let first = self.order.start(count);
        for (position, s) in self.slabs.order().enumerate() {
            if self.fail_after == Some(position) {
                return Err(Error::injected());
            }
            let position = first + position;
            self.order.wait_for_slot(position, &[&self.compute])?;
            if self.slabs.reads_beyond_own(s, len)
                && let Some(ghosts) = ghosts.take()
            {
                ghosts(host)?;
            }
            if !self.order.take_prefetched(position, first, len) {
                self.upload(s, position, host, inputs, len, false)?;
            }
            let computed = if position == first { ahead.map(|a| a.last) } else { None };
            let written_back = match (self.slabs.skewed, computed) {
                (true, Some(last)) => self.skewed_down(s, position, host, len, last)?,
                (true, None) => {
                    let last = self.skewed_compute(s, position, pass)?;
                    self.skewed_down(s, position, host, len, last)?
                }
                (false, _) => self.pyramid_slab(s, position, host, pass)?,
            };
            self.order.written_back(position, written_back, &self.down)?;
            *enqueued = position - first + 1;
            if *enqueued == count {
                if pass.measure {
                    self.keep_check()?;
                }
                if pass.prefetch_next {
                    // Before waiting for any write-back here, so that the device works on
                    // while the host waits.
                    self.prefetch(host, inputs, len)?;
                    self.compute_ahead(host, inputs, pass)?;
                }
            }
            if let Some(callback) = written.as_deref_mut() {
                // Told when the copy has finished, one slab behind the work enqueued so
                // that the device always has the next slab to run.
                in_flight.push_back(self.down.record_event(None).map_err(driver_error("recording an event"))?);
                while in_flight.len() > usize::from(*enqueued < count) {
                    let done = in_flight.pop_front().expect("not empty");
                    done.synchronize().map_err(driver_error("waiting for a copy"))?;
                    callback(*enqueued - in_flight.len(), host);
                }
            }
        }
        if count == 0 && pass.measure {
            self.keep_check()?;
        }
        match ghosts {
            Some(ghosts) => ghosts(host),
            None => Ok(()),
        }
    }

    /// Pyramid slab `s` (at `position`), its chunk on the device: the carries, its
    /// iterations over the shrinking regions, its own planes down; returns the planes
    /// written back.
    fn pyramid_slab(
        &mut self,
        s: usize,
        position: usize,
        host: &mut [&mut [T]],
        pass: PassPlan,
    ) -> Result<Range<usize>> {
        let len = pass.len;
        let slabs = &self.slabs;
        let kept_above = slabs.upper_carry(len);
        let (lower, upper, chunk) = pyramid_parts(slabs, s, len);
        let own = slabs.own[s].clone();
        let local = |planes: &Range<usize>| slabs.elements(&(planes.start - chunk.start..planes.end - chunk.start));
        let slot = &mut self.slots[position % 2];
        // Compute: the carries in, the next slab's carry out (and a rotated pass's upper carry),
        // the second buffer.
        let compute = &self.compute;
        let dtod = |from: &CudaView<'_, T>, to: &mut CudaViewMut<'_, T>| {
            compute.memcpy_dtod(from, to).map_err(driver_error("copying the carry"))
        };
        // The slot before is not read here: its fields may be copied over from now on.
        self.order.fields_read(position, compute)?;
        let carries = self.carry.iter_mut().zip(&mut self.upper_carry);
        for ([first, second], (carry, upper_carry)) in slot.u.iter_mut().zip(carries) {
            if s != 0 && s != slabs.first {
                dtod(&carry.slice(0..lower.len() * slabs.plane_len), &mut first.slice_mut(local(&lower)))?;
            }
            if upper.end < chunk.end {
                let carried = upper.end..chunk.end;
                let from = slabs.elements(&(carried.start - kept_above.start..carried.end - kept_above.start));
                dtod(&upper_carry.slice(from), &mut first.slice_mut(local(&carried)))?;
            }
            if s == slabs.first && s > 0 {
                let into = 0..kept_above.len() * slabs.plane_len;
                dtod(&first.slice(local(&kept_above)), &mut upper_carry.slice_mut(into))?;
            }
            let kept = slabs.carry(s, len);
            dtod(&first.slice(local(&kept)), &mut carry.slice_mut(0..kept.len() * slabs.plane_len))?;
            dtod(&first.slice(local(&chunk)), &mut second.slice_mut(local(&chunk)))?;
        }
        let current = self.iterate_chunk(s, position, chunk.clone(), pass)?;
        // Down: the slab's own planes, in place.
        let slab_local = self.slabs.elements(&(own.start - chunk.start..own.end - chunk.start));
        let slot = &self.slots[position % 2];
        for (host, buffers) in host.iter_mut().zip(&slot.u) {
            self.down
                .memcpy_dtoh(&buffers[current].slice(slab_local.clone()), &mut host[self.slabs.elements(&own)])
                .map_err(driver_error("copying a slab to the host"))?;
        }
        Ok(own)
    }

    /// The iterations of `pass` on pyramid slab `s` (at `position`) over the
    /// shrinking regions of its `chunk`; returns the buffer that holds the last iterate.
    fn iterate_chunk(&mut self, s: usize, position: usize, chunk: Range<usize>, pass: PassPlan) -> Result<usize> {
        let PassPlan { len, measure: check, .. } = pass;
        let (gpu, shape, block) = (self.gpu, self.shape, self.block);
        let mut current = 0;
        let mut done = 0;
        while done < len {
            // A measured pass ends with one plain iteration over the slab itself, so that the
            // residual covers every interior point once (as in the CPU twin).
            let last_measured = check && done + 1 == len;
            let steps = match self.kernels {
                Kernels::Cycles { sizes, .. } if !last_measured => sizes.sub.min(len - done - usize::from(check)),
                _ => 1,
            };
            let view = self.slabs.region(s, len, done);
            let dims = view_dims::<S, N>(shape, view.len());
            let (kernel, launch_shape, cycle) = match &self.kernels {
                Kernels::Plain { measure, .. } | Kernels::Cycles { measure, .. } if last_measured => {
                    (measure, self.measure_shapes[s], [0; CYCLE_INTS])
                }
                Kernels::Plain { pass, .. } => {
                    (pass, plain(S::KERNELS, dims, block, pass.vector(), gpu.limits())?, [0; CYCLE_INTS])
                }
                Kernels::Cycles { cycle, sizes, stream, .. } => {
                    let sizes = CycleSizes { sub: steps, ..*sizes };
                    // As in the CPU twin: the view's own ends along axis 0 are no edges.
                    let edges = self.fill.as_ref().map_or([0; 3], |(_, f)| f.cycle_edges(&view).flags(S::KERNELS.axes));
                    let geometry = cycle_geometry::<S, N>(stream.as_ref(), dims, sizes, T::BYTES, gpu, edges)?;
                    (cycle, geometry.shape, geometry.ints(steps, 0)?)
                }
            };
            let kernel = kernel.clone();
            self.launch_view((s, position), &chunk, view, current, &kernel, (launch_shape, cycle))?;
            current ^= 1;
            done += steps;
        }
        Ok(current)
    }

    /// Launches `kernel` of slab `s` (at `position`) on `view` (planes within
    /// `window`) with `shape` and `cycle`'s integers, from buffer `from` into the other, the
    /// view's outer layers filled first.
    pub(super) fn launch_view(
        &mut self,
        (s, position): (usize, usize),
        window: &Range<usize>,
        view: Range<usize>,
        from: usize,
        kernel: &Kernel,
        (shape, cycle): (Shape, [i32; CYCLE_INTS]),
    ) -> Result<()> {
        let range = self.slabs.elements(&(view.start - window.start..view.end - window.start));
        let dims = view_dims::<S, N>(self.shape, view.len());
        if let Some((boundary, views)) = &self.fill {
            for buffers in &mut self.slots[position % 2].u {
                let grid = buffers[from].slice_mut(range.clone());
                fill(&self.compute, boundary, S::KERNELS, grid, dims, &views.view(&view))?;
            }
        }
        let entries = self.block_offsets[s]..self.block_offsets[s] + self.measure_shapes[s].blocks().max(1);
        let (fields, targets) = self.slots[position % 2].views::<N, S>(range, from);
        let mut args = Args::new(dims.map(|n| n as i64), fields, &self.scalars);
        args.set_outputs(targets);
        args.cycle = cycle;
        args.checks = Some((
            self.block_max.slice_mut(entries.clone()),
            self.block_sum.slice_mut(entries),
            self.first_bad.slice_mut(s..s + 1),
        ));
        launch(&self.compute, kernel, args, shape)
    }
}
