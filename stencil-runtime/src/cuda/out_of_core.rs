//! The GPU half of [`Schedule::OutOfCore`](crate::Schedule::OutOfCore): the pyramid of
//! papers 000/001 over the slabs of [`Slabs`](crate::plan::slabs::Slabs), with the grid in page-locked host memory.
//!
//! Three streams overlap the work: `up` copies a slab's chunk (the unknown's planes from its
//! own first plane on, and every read-only field) into one of two device slots, `compute`
//! fills the chunk's lower ghost planes from the carry, keeps the old planes the next slab
//! needs, and runs the slab's iterations over the shrinking regions, and `down` writes the
//! slab's own planes back into the grid in place. While one slot computes, the other is
//! being filled or emptied. Device buffers are ordered across streams by cudarc's event
//! tracking (every buffer records its last read and write); host memory is ordered by hand:
//! a pass's first copy waits for the previous pass's last write-back.

use std::ffi::c_void;
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchArgs, LaunchConfig, PushKernelArg, sys,
};

use super::device::{Gpu, driver_error};
use super::nvrtc::Mode;
use super::run::{CycleGeometry, JitTime, Scalars, as_3d, load_module, plain_config, plain_shape};
use crate::cpu::out_of_core::Ghosts;
use crate::cpu::Difference;
use crate::plan::Layout;
use crate::run::monitor::Monitor;
use crate::report::StopReason;
use crate::plan::slabs::Slabs;
use crate::solver::Job;
use crate::{Error, Grid, Inner, Real, Report, Result, SlabProgress, Stencil, model};
use std::time::Duration;

/// The parameters of [`Schedule::OutOfCore`](crate::Schedule::OutOfCore).
pub(crate) struct Config {
    pub slab: Option<usize>,
    pub height: usize,
    pub inner: Inner,
    pub device_memory: Option<usize>,
}

/// One device slot: the chunk of the unknown twice (Jacobi ping-pong) and of every
/// read-only field once (`None` at the unknown's place).
struct Slot<T> {
    u: [CudaSlice<T>; 2],
    fields: Vec<Option<CudaSlice<T>>>,
}

impl<T: cudarc::driver::DeviceRepr> Slot<T> {
    /// Views of the elements `range` for a launch that reads buffer `from` of the unknown and
    /// writes the other one: (source, target, every field).
    fn views(
        &mut self,
        range: Range<usize>,
        from: usize,
    ) -> (CudaView<'_, T>, CudaViewMut<'_, T>, Vec<Option<CudaView<'_, T>>>) {
        let [a, b] = &mut self.u;
        let (source, target) = if from == 0 { (&*a, b) } else { (&*b, a) };
        let fields = self.fields.iter().map(|f| f.as_ref().map(|f| f.slice(range.clone()))).collect();
        (source.slice(range.clone()), target.slice_mut(range), fields)
    }
}

/// Pushes what every generated kernel takes first: the output, the fields in parameter order
/// (`source`, the current iterate, at the unknown's place), the view's extents and the
/// scalars.
fn push_view<'a, T: Real>(
    launch: &mut LaunchArgs<'a>,
    target: &'a mut CudaViewMut<'_, T>,
    (source, fields): (&'a CudaView<'_, T>, &'a [Option<CudaView<'_, T>>]),
    extents: &'a [i64; 3],
    scalars: &'a Scalars<T>,
) {
    launch.arg(target);
    for field in fields {
        launch.arg(field.as_ref().unwrap_or(source));
    }
    launch.arg(&extents[0]).arg(&extents[1]).arg(&extents[2]);
    scalars.push(launch);
}

/// Host memory registered with the driver (page-locked) for the run, unregistered on drop.
pub(super) struct Pinned {
    addresses: Vec<usize>,
}

impl Pinned {
    /// Registers every non-empty slice; a slice the driver refuses stays pageable (its
    /// copies are then staged by the driver and slower), and the reason is returned.
    pub(super) fn register<T>(gpu: &Gpu, slices: &[&[T]]) -> Result<(Self, Option<String>)> {
        gpu.ctx.bind_to_thread().map_err(driver_error("binding the context"))?;
        let mut pinned = Self { addresses: Vec::new() };
        let mut refused = None;
        for slice in slices.iter().filter(|s| !s.is_empty()) {
            let address = slice.as_ptr() as *mut c_void;
            // SAFETY: the range is a live allocation of the caller's, which outlives this
            // guard (it is dropped at the end of the run, before the grids can be); the
            // driver only pins its pages, it does not write to them.
            let result = unsafe { sys::cuMemHostRegister_v2(address, std::mem::size_of_val(*slice), 0) };
            match result {
                sys::CUresult::CUDA_SUCCESS => pinned.addresses.push(address as usize),
                sys::CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => {}
                other => refused = Some(format!("{other:?}")),
            }
        }
        Ok((pinned, refused))
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        for &address in &self.addresses {
            // SAFETY: registered above with the context still current on this thread.
            unsafe { sys::cuMemHostUnregister(address as *mut c_void) };
        }
    }
}

/// The kernels' three extents for a view of `planes` planes (along axis 0) of a grid of
/// `shape`.
fn view_dims<const N: usize>(mut shape: [usize; N], planes: usize) -> [usize; 3] {
    shape[0] = planes;
    as_3d(&shape, 1)
}

/// The host's part in a pass: told of the slabs written back, and asked for the ghost
/// planes ([`Pyramid::pass`]).
type Hooks<'c, T> = (Option<&'c mut dyn FnMut(usize)>, Option<Ghosts<'c, T>>);

/// What runs a slab's iterations: the plain kernel, or the exact hierarchical one.
enum Kernels {
    Plain { pass: CudaFunction, measure: CudaFunction },
    Hierarchical { cycle: CudaFunction, measure: CudaFunction, tile: usize, halo: usize, sub: usize },
}

/// The device side of out-of-core passes over one set of slabs, set up once: the kernels,
/// the three streams, the two slots, the carry and the check's buffers. A pass runs on a
/// host grid of the slabs' shape, in place; [`run`] drives passes over a whole grid, and a
/// distributed rank over its own planes (`cuda::distributed`).
pub(crate) struct Pyramid<'g, S: Stencil<N>, T: Real, const N: usize> {
    gpu: &'g Gpu,
    slabs: Slabs,
    /// The grid's shape (the slabs' planes along axis 0).
    shape: [usize; N],
    kernels: Kernels,
    launch_shape: ((u32, u32), u32),
    up: Arc<CudaStream>,
    compute: Arc<CudaStream>,
    down: Arc<CudaStream>,
    slots: Vec<Slot<T>>,
    carry: CudaSlice<T>,
    /// For rotated slabs (under an MPI rank): [`Slabs::upper_carry`].
    upper_carry: CudaSlice<T>,
    /// Every slab's measuring launch, and its entries in the block arrays.
    measure_configs: Vec<LaunchConfig>,
    block_counts: Vec<usize>,
    block_offsets: Vec<usize>,
    block_max: CudaSlice<f64>,
    block_sum: CudaSlice<f64>,
    first_bad: CudaSlice<u64>,
    scalars: Scalars<T>,
    /// Test hook: fail before running slab `n` of a pass.
    fail_after: Option<usize>,
    _stencil: std::marker::PhantomData<S>,
}

impl<'g, S: Stencil<N>, T: Real, const N: usize> Pyramid<'g, S, T, N> {
    /// Compiles the kernels for the largest chunk and allocates the buffers of `slabs` with
    /// `inner` iterations, for a grid of `shape` whose read-only fields are the `Some`s of
    /// `inputs` (parameter order).
    pub(crate) fn new(
        gpu: &'g Gpu,
        mode: Mode,
        (slabs, inner): (Slabs, Inner),
        shape: [usize; N],
        inputs: &[Option<&[T]>],
        params: &S::Params<T>,
        fail_after: Option<usize>,
    ) -> Result<(Self, JitTime)> {
        let meta = S::META;
        let radius = as_3d(meta.radius, 0);
        let view_dims = |planes| view_dims(shape, planes);
        // Read once: the launch shape comes from the environment.
        let launch_shape = plain_shape::<N>()?;
        // Every slab's measuring launch covers its own planes (skewed: its last level, whose
        // size depends on the pass's length; the most blocks any length needs): its blocks get
        // their own entries.
        let measured_planes = |s: usize| {
            if slabs.skewed {
                (1..=slabs.height).map(|len| slabs.level(s, len, len).len()).max().unwrap_or(0)
            } else {
                slabs.own[s].len()
            }
        };
        let measure_configs: Vec<LaunchConfig> = (0..slabs.own.len())
            .map(|s| plain_config::<S, N>(gpu, view_dims(measured_planes(s) + 2 * slabs.radius), radius, launch_shape))
            .collect::<Result<_>>()?;
        let block_counts: Vec<usize> =
            measure_configs.iter().map(|c| (c.grid_dim.0 * c.grid_dim.1 * c.grid_dim.2) as usize).collect();
        let block_offsets: Vec<usize> =
            block_counts.iter().scan(0, |total, &n| Some(std::mem::replace(total, *total + n))).collect();
        let total_blocks: usize = block_counts.iter().sum();

        let chunk_dims = view_dims(slabs.max_chunk());
        let (module, jit) = load_module::<S, T, N>(gpu, mode, chunk_dims, &[])?;
        let function = |kind: &str| {
            module
                .load_function(&format!("{}_{kind}", meta.name))
                .map_err(driver_error("finding a kernel in the module"))
        };
        let kernels = match inner {
            Inner::Hierarchical { tile, halo, sub } => {
                let cycle = function("hier")?;
                let largest = CycleGeometry::new::<S, T, N>(
                    gpu.max_shared_per_block,
                    chunk_dims,
                    radius,
                    (tile, halo, sub),
                    false,
                )?;
                largest.allow_shared_memory(&cycle)?;
                Kernels::Hierarchical { cycle, measure: function("plain_measure")?, tile, halo, sub }
            }
            _ => Kernels::Plain { pass: function("plain")?, measure: function("plain_measure")? },
        };

        // Streams before buffers: cudarc tracks a buffer's uses across streams only when it is
        // allocated with more than one stream in the context.
        let stream = || gpu.ctx.new_stream().map_err(driver_error("creating a stream"));
        let (up, compute, down) = (stream()?, stream()?, stream()?);
        let alloc = |stream: &Arc<CudaStream>, n: usize| gpu.alloc_zeros::<T>(stream, n.max(1), "a slab buffer");
        let chunk_len = slabs.max_chunk() * slabs.plane_len;
        let mut slots = Vec::with_capacity(2);
        for _ in 0..2 {
            slots.push(Slot {
                u: [alloc(&compute, chunk_len)?, alloc(&compute, chunk_len)?],
                fields: inputs
                    .iter()
                    .map(|f| f.map(|_| alloc(&compute, chunk_len)).transpose())
                    .collect::<Result<_>>()?,
            });
        }
        let carry = alloc(&compute, slabs.ghost(slabs.height) * slabs.plane_len)?;
        let upper_carry =
            alloc(&compute, if slabs.first == 0 { 0 } else { slabs.ghost(slabs.height) * slabs.plane_len })?;
        let allocate = |n: usize| gpu.alloc_zeros::<f64>(&compute, n.max(1), "the residual's per-block results");
        let (block_max, block_sum) = (allocate(total_blocks)?, allocate(total_blocks)?);
        let first_bad = gpu.alloc_zeros::<u64>(&compute, slabs.own.len(), "the non-finite flags")?;
        let pyramid = Self {
            gpu,
            slabs,
            shape,
            kernels,
            launch_shape,
            up,
            compute,
            down,
            slots,
            carry,
            upper_carry,
            measure_configs,
            block_counts,
            block_offsets,
            block_max,
            block_sum,
            first_bad,
            scalars: Scalars::new(S::param_values(params)),
            fail_after,
            _stencil: std::marker::PhantomData,
        };
        Ok((pyramid, jit))
    }

    /// The slabs the passes run over.
    pub(crate) fn slabs(&self) -> &Slabs {
        &self.slabs
    }

    /// Runs `len` iterations (at most the slabs' height) on `host` in place, slab by slab;
    /// `inputs` are the read-only fields over the same grid (parameter order, `None` for the
    /// unknown). With `check`, the last iteration measures S(u) − u over every slab's own
    /// planes, and the pass waits for the device and returns the measurement (the flat index
    /// of a non-finite value is `host`'s). `written`, if any, is told how many slabs are
    /// written back as their copies finish (one slab behind the work enqueued). `ghosts`, if
    /// any, is called on the host once, before the first slab that reads beyond the own
    /// planes is enqueued (the slabs before it run meanwhile), or after the last. An error
    /// comes with the number of slabs whose write-back was enqueued
    /// ([`Slabs::interrupted`]).
    pub(crate) fn pass(
        &mut self,
        host: &mut [T],
        inputs: &[Option<&[T]>],
        (len, check): (usize, bool),
        (written, ghosts): Hooks<'_, T>,
    ) -> std::result::Result<Option<Difference>, (usize, Error)> {
        let mut enqueued = 0;
        let result = self.enqueue(host, inputs, (len, check), &mut enqueued, (written, ghosts));
        if let Err(error) = result {
            // What was enqueued is written once the copies finish (they do not run after a
            // sticky device error; the count is then an upper bound, as the error says).
            let _ = self.down.synchronize();
            return Err((enqueued, error));
        }
        if !check {
            return Ok(None);
        }
        // Every write-back is enqueued; an error reading the check is the device's own.
        self.measured(len).map(Some).map_err(|error| (self.slabs.own.len(), error))
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
        host: &mut [T],
        inputs: &[Option<&[T]>],
        (len, check): (usize, bool),
        enqueued: &mut usize,
        (mut written, mut ghosts): Hooks<'_, T>,
    ) -> Result<()> {
        let gpu = self.gpu;
        let radius = as_3d(S::META.radius, 0);
        let grid_shape = self.shape;
        let view_dims = |planes| view_dims(grid_shape, planes);
        let Self {
            slabs,
            kernels,
            launch_shape,
            up,
            compute,
            down,
            slots,
            carry,
            upper_carry,
            measure_configs,
            block_counts,
            block_offsets,
            block_max,
            block_sum,
            first_bad,
            scalars,
            fail_after,
            ..
        } = self;
        let (slabs, shape, scalars) = (&*slabs, *launch_shape, &*scalars);
        if check {
            compute
                .memcpy_htod(&vec![u64::MAX; slabs.own.len()], first_bad)
                .map_err(driver_error("resetting the check"))?;
            // A skewed slab's measured level may use fewer blocks than reserved.
            compute.memset_zeros(block_max).map_err(driver_error("resetting the check"))?;
            compute.memset_zeros(block_sum).map_err(driver_error("resetting the check"))?;
        }
        // The chunks read planes that the previous pass wrote back.
        up.join(down).map_err(driver_error("ordering the copies"))?;
        // Write-backs whose end has not been told yet.
        let mut in_flight = std::collections::VecDeque::new();
        let kept_above = slabs.upper_carry(len);
        // Per slot, the end of the write-back of the last slab that used it. cudarc keeps one
        // read event per buffer, so a later read on another stream (a skewed slab's window
        // copied by the next slab) hides the write-back's read: the next slab in the slot
        // waits for it explicitly before writing there.
        let mut written_back: [Option<cudarc::driver::CudaEvent>; 2] = [None, None];
        for (position, s) in slabs.order().enumerate() {
            if *fail_after == Some(position) {
                return Err(Error::injected());
            }
            if let Some(event) = &written_back[position % 2] {
                up.wait(event).map_err(driver_error("ordering the copies"))?;
                compute.wait(event).map_err(driver_error("ordering the copies"))?;
            }
            if slabs.reads_beyond_own(s, len)
                && let Some(ghosts) = ghosts.take()
            {
                ghosts(host)?;
            }
            if slabs.skewed {
                let (even, odd) = slots.split_at_mut(1);
                let (slot, previous) = if s % 2 == 0 { (&mut even[0], &odd[0]) } else { (&mut odd[0], &even[0]) };
                let window = slabs.window(s, len);
                let local =
                    |planes: &Range<usize>| slabs.elements(&(planes.start - window.start..planes.end - window.start));
                let fresh = slabs.fresh(s, len);
                // Up: the fresh planes of the unknown and of every field.
                up.memcpy_htod(&host[slabs.elements(&fresh)], &mut slot.u[0].slice_mut(local(&fresh)))
                    .map_err(driver_error("copying a slab to the device"))?;
                for (field, buffer) in inputs.iter().zip(slot.fields.iter_mut()) {
                    if let (Some(data), Some(buffer)) = (field, buffer) {
                        up.memcpy_htod(&data[slabs.elements(&fresh)], &mut buffer.slice_mut(local(&fresh)))
                            .map_err(driver_error("copying a field to the device"))?;
                    }
                }
                // Compute: the planes below the fresh ones from the previous window (both
                // iterates and the fields), the fresh planes into the odd buffer too (their
                // boundary values), then the levels.
                if s > 0 {
                    let before = slabs.window(s - 1, len);
                    let kept = slabs.elements(&(window.start - before.start..fresh.start - before.start));
                    let into = 0..kept.len();
                    for (from, to) in previous.u.iter().zip(slot.u.iter_mut()) {
                        compute
                            .memcpy_dtod(&from.slice(kept.clone()), &mut to.slice_mut(into.clone()))
                            .map_err(driver_error("copying the carry"))?;
                    }
                    for (from, to) in previous.fields.iter().zip(slot.fields.iter_mut()) {
                        if let (Some(from), Some(to)) = (from, to) {
                            compute
                                .memcpy_dtod(&from.slice(kept.clone()), &mut to.slice_mut(into.clone()))
                                .map_err(driver_error("copying the carry"))?;
                        }
                    }
                }
                let [first, second] = &mut slot.u;
                compute
                    .memcpy_dtod(&first.slice(local(&fresh)), &mut second.slice_mut(local(&fresh)))
                    .map_err(driver_error("copying a slab"))?;
                let Kernels::Plain { pass, measure } = kernels else { unreachable!("skewed slabs run plain") };
                for t in 1..=len {
                    let level = slabs.level(s, len, t);
                    if level.is_empty() {
                        continue;
                    }
                    let view = level.start - slabs.radius..level.end + slabs.radius;
                    let range = local(&view);
                    let (source, mut target, fields) = slot.views(range, (t - 1) % 2);
                    let measured = check && t == len;
                    let config = plain_config::<S, N>(gpu, view_dims(view.len()), radius, shape)?;
                    let entries = block_offsets[s]..block_offsets[s] + block_counts[s].max(1);
                    let mut maxes = block_max.slice_mut(entries.clone());
                    let mut sums = block_sum.slice_mut(entries);
                    let mut bad = first_bad.slice_mut(s..s + 1);
                    let extents = view_dims(view.len()).map(|n| n as i64);
                    let mut launch = compute.launch_builder(if measured { measure } else { pass });
                    push_view(&mut launch, &mut target, (&source, &fields), &extents, scalars);
                    if measured {
                        launch.arg(&mut maxes).arg(&mut sums).arg(&mut bad);
                    }
                    // SAFETY: the plain (or measuring) kernel's signature: output, fields in
                    // order with the previous iterate for the unknown, the view's extents,
                    // the scalars, and for the measuring kernel the slab's block entries
                    // (at least as many as this launch's blocks) and its flag. Every view
                    // covers the same planes inside its window buffer.
                    unsafe { launch.launch(config) }.map_err(driver_error("launching a kernel"))?;
                }
                // Down: the last level, in place.
                let last = slabs.level(s, len, len);
                down.memcpy_dtoh(&slot.u[len % 2].slice(local(&last)), &mut host[slabs.elements(&last)])
                    .map_err(driver_error("copying a slab to the host"))?;
                written_back[position % 2] = Some(down.record_event(None).map_err(driver_error("recording an event"))?);
            } else {
                let slot = &mut slots[position % 2];
                let chunk = slabs.chunk(s, len);
                let own = slabs.own[s].clone();
                let local =
                    |planes: &Range<usize>| slabs.elements(&(planes.start - chunk.start..planes.end - chunk.start));

                // Up: the chunk from its own first plane on, and every field's chunk. The lower
                // ghost planes are written back already; they come from the carry (slab 0's are
                // boundary or ghost planes, never written, and the first slab of a rotated pass
                // finds them not written yet: they come from the grid). Before a rotated pass's
                // first slab, the planes that it and the slabs after it write back come from
                // the upper carry.
                let lower = chunk.start..own.start;
                let upper = own.start..if s < slabs.first { chunk.end.min(kept_above.start) } else { chunk.end };
                if s == 0 || s == slabs.first {
                    up.memcpy_htod(&host[slabs.elements(&lower)], &mut slot.u[0].slice_mut(local(&lower)))
                        .map_err(driver_error("copying a slab to the device"))?;
                }
                up.memcpy_htod(&host[slabs.elements(&upper)], &mut slot.u[0].slice_mut(local(&upper)))
                    .map_err(driver_error("copying a slab to the device"))?;
                for (field, buffer) in inputs.iter().zip(slot.fields.iter_mut()) {
                    if let (Some(data), Some(buffer)) = (field, buffer) {
                        up.memcpy_htod(&data[slabs.elements(&chunk)], &mut buffer.slice_mut(local(&chunk)))
                            .map_err(driver_error("copying a field to the device"))?;
                    }
                }

                // Compute: the carries in, the next slab's carry out (and a rotated pass's upper
                // carry), the second buffer, iterations.
                let [first, second] = &mut slot.u;
                if s != 0 && s != slabs.first {
                    compute
                        .memcpy_dtod(
                            &carry.slice(0..lower.len() * slabs.plane_len),
                            &mut first.slice_mut(local(&lower)),
                        )
                        .map_err(driver_error("copying the carry"))?;
                }
                if upper.end < chunk.end {
                    let carried = upper.end..chunk.end;
                    let from = slabs.elements(&(carried.start - kept_above.start..carried.end - kept_above.start));
                    compute
                        .memcpy_dtod(&upper_carry.slice(from), &mut first.slice_mut(local(&carried)))
                        .map_err(driver_error("copying the carry"))?;
                }
                if s == slabs.first && s > 0 {
                    compute
                        .memcpy_dtod(
                            &first.slice(local(&kept_above)),
                            &mut upper_carry.slice_mut(0..kept_above.len() * slabs.plane_len),
                        )
                        .map_err(driver_error("copying the carry"))?;
                }
                let kept = slabs.carry(s, len);
                compute
                    .memcpy_dtod(&first.slice(local(&kept)), &mut carry.slice_mut(0..kept.len() * slabs.plane_len))
                    .map_err(driver_error("copying the carry"))?;
                compute
                    .memcpy_dtod(&first.slice(local(&chunk)), &mut second.slice_mut(local(&chunk)))
                    .map_err(driver_error("copying a chunk"))?;
                let mut current = 0;
                let mut done = 0;
                while done < len {
                    // A measured pass ends with one plain iteration over the slab itself, so that
                    // the residual covers every interior point once (as in the CPU twin).
                    let last_measured = check && done + 1 == len;
                    let steps = match *kernels {
                        Kernels::Hierarchical { sub, .. } if !last_measured => sub.min(len - done - usize::from(check)),
                        _ => 1,
                    };
                    let view = slabs.region(s, len, done);
                    let range = local(&view);
                    let (source, mut target, fields) = slot.views(range, current);
                    let extents = view_dims(view.len()).map(|n| n as i64);
                    let (function, launch_config, ints) = match kernels {
                        Kernels::Plain { measure, .. } | Kernels::Hierarchical { measure, .. } if last_measured => {
                            (measure, measure_configs[s], None)
                        }
                        Kernels::Plain { pass, .. } => {
                            (pass, plain_config::<S, N>(gpu, view_dims(view.len()), radius, shape)?, None)
                        }
                        Kernels::Hierarchical { cycle, tile, halo, .. } => {
                            let geometry = CycleGeometry::new::<S, T, N>(
                                gpu.max_shared_per_block,
                                view_dims(view.len()),
                                radius,
                                (*tile, *halo, steps),
                                false,
                            )?;
                            (cycle, geometry.config, Some(geometry.ints(steps, 0)))
                        }
                    };
                    let entries = block_offsets[s]..block_offsets[s] + block_counts[s].max(1);
                    let mut maxes = block_max.slice_mut(entries.clone());
                    let mut sums = block_sum.slice_mut(entries);
                    let mut bad = first_bad.slice_mut(s..s + 1);
                    let mut launch = compute.launch_builder(function);
                    push_view(&mut launch, &mut target, (&source, &fields), &extents, scalars);
                    // The hierarchical kernel's ints, and the block arrays that both the measuring
                    // and the hierarchical kernels take.
                    if let Some(ints) = &ints {
                        for value in ints {
                            launch.arg(value);
                        }
                    }
                    if last_measured || ints.is_some() {
                        launch.arg(&mut maxes).arg(&mut sums).arg(&mut bad);
                    }
                    // SAFETY: the arguments match the kernel's signature, generated from the same
                    // stencil (output, fields in order with the current iterate for the unknown,
                    // the view's extents, the scalars, the hierarchical kernel's ints, the block
                    // arrays). Every view covers the planes of `view` inside its chunk buffer,
                    // the kernel indexes only inside those extents, and the measuring launch has
                    // the block entries reserved for this slab (the hierarchical kernel runs with
                    // measure = 0 and writes none).
                    unsafe { launch.launch(launch_config) }.map_err(driver_error("launching a kernel"))?;
                    current ^= 1;
                    done += steps;
                }

                // Down: the slab's own planes, in place.
                down.memcpy_dtoh(&slot.u[current].slice(local(&own)), &mut host[slabs.elements(&own)])
                    .map_err(driver_error("copying a slab to the host"))?;
                written_back[position % 2] = Some(down.record_event(None).map_err(driver_error("recording an event"))?);
            }
            *enqueued = position + 1;
            if let Some(callback) = written.as_deref_mut() {
                // Told when the copy has finished, one slab behind the work enqueued so
                // that the device always has the next slab to run.
                in_flight.push_back(down.record_event(None).map_err(driver_error("recording an event"))?);
                while in_flight.len() > usize::from(position + 1 < slabs.own.len()) {
                    let done = in_flight.pop_front().expect("not empty");
                    done.synchronize().map_err(driver_error("waiting for a copy"))?;
                    callback(*enqueued - in_flight.len());
                }
            }
        }
        match ghosts {
            Some(ghosts) => ghosts(host),
            None => Ok(()),
        }
    }

    /// Waits for a checked pass of `len` iterations and reads its measurement.
    fn measured(&mut self, len: usize) -> Result<Difference> {
        self.compute.synchronize().map_err(driver_error("waiting for the device"))?;
        self.down.synchronize().map_err(driver_error("waiting for the device"))?;
        let slabs = &self.slabs;
        let bad = self.compute.clone_dtoh(&self.first_bad).map_err(driver_error("reading the check"))?;
        let first_non_finite = bad
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b != u64::MAX)
            .map(|(s, &b)| {
                let view_start = if slabs.skewed {
                    slabs.level(s, len, len).start - slabs.radius
                } else {
                    slabs.region(s, len, len - 1).start
                };
                b as usize + view_start * slabs.plane_len
            })
            .min();
        let maxes = self.compute.clone_dtoh(&self.block_max).map_err(driver_error("reading the residual"))?;
        let sums = self.compute.clone_dtoh(&self.block_sum).map_err(driver_error("reading the residual"))?;
        Ok(Difference {
            max_abs: maxes.iter().copied().fold(0.0, f64::max),
            sum_sq: sums.iter().sum::<f64>(),
            first_non_finite,
        })
    }
}

/// Runs a Jacobi stencil by passes of the out-of-core pyramid on GPU `device`, with the
/// stopping rules of the CPU twin (`cpu::run_slabs`).
pub(super) fn run<S: Stencil<N>, T: Real, const N: usize>(
    mut job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    gpu: &Gpu,
    device: usize,
    layout: &Layout<N>,
    mode: Mode,
    config: Config,
) -> Result<Report> {
    let meta = S::META;
    let arrays = 2 + job.inputs.iter().flatten().count();
    let (free, _) = gpu.ctx.mem_get_info().map_err(driver_error("reading the free device memory"))?;
    let limit = config.device_memory.unwrap_or(free / 10 * 9);
    let model_shape = model::Shape {
        planes: layout.shape[0],
        radius: meta.radius[0],
        plane_len: layout.shape[1..].iter().product(),
        plane_interior: (1..N).map(|a| layout.shape[a] - 2 * meta.radius[a]).product(),
        fields: arrays - 2,
        elem: T::BYTES,
    };
    let mut skewed = config.inner == Inner::Skewed;
    let interior = meta.radius[0]..layout.shape[0] - meta.radius[0];
    let slabs_of = |height, slab, skewed| {
        crate::cpu::slabs_for(layout, interior.clone(), height, (slab, Some(limit)), (arrays, T::BYTES), skewed)
    };
    // A configuration given in full is checked before anything runs.
    let given = if job.model_chooses { None } else { Some(slabs_of(config.height, config.slab, skewed)?) };
    let view_dims = |planes| view_dims(layout.shape, planes);

    let mut host_slices: Vec<&[T]> = job.inputs.iter().flatten().copied().collect();
    host_slices.push(u.as_slice());
    let (pinned, refused) = Pinned::register(gpu, &host_slices)?;
    if let Some(reason) = refused {
        eprintln!("stencil: the grid could not be page-locked ({reason}); copies will be slower");
    }
    let scalars = Scalars::new(S::param_values(&job.params));
    let (costs, probe_jit) =
        probe::<S, T, N>(gpu, mode, u.as_mut_slice(), &model_shape, limit / arrays, &view_dims, &scalars)?;
    let slabs = match given {
        Some(slabs) => slabs,
        None => {
            // `Auto`: the better of the pyramid and the skewed slabs, by the model.
            let pyramid = model::best(&model_shape, limit, arrays, &costs, false);
            let skew = model::best(&model_shape, limit, arrays, &costs, true);
            skewed = match (pyramid, skew) {
                (Some((.., p)), Some((.., k))) => k <= p,
                (None, Some(_)) => true,
                _ => false,
            };
            let (height, width, _) = model::best(&model_shape, limit, arrays, &costs, skewed).ok_or_else(|| {
                let smallest = Slabs::new(model_shape.planes, model_shape.radius, model_shape.plane_len, 1, 1);
                crate::Error::DeviceMemory {
                    needed: smallest.buffer_bytes(arrays, T::BYTES),
                    limit,
                    reason: smallest.describe_buffers(arrays),
                }
            })?;
            slabs_of(height, Some(width), skewed)?
        }
    };
    let inner = if skewed { Inner::Skewed } else { config.inner };
    let (mut pyramid, mut jit) = Pyramid::<S, T, N>::new(
        gpu,
        mode,
        (slabs, inner),
        layout.shape,
        &job.inputs,
        &job.params,
        job.fail_after_slabs,
    )?;
    // The probe's module (compiled for its few planes) is part of the start-up too.
    jit.time += probe_jit.time;
    if probe_jit.origin == super::cache::Origin::Compiled {
        jit.origin = probe_jit.origin;
    }
    let slabs = pyramid.slabs().clone();
    if job.model_chooses && !job.check_every_given {
        // Checked once per pass of the height the model chose, not of the one `Auto` named.
        job.stop.check_every = slabs.height;
    }
    let stop = job.stop;
    let inputs: Vec<Option<&[T]>> = job.inputs.clone();
    let mut on_slab = job.on_slab.take();
    let tell_slabs = on_slab.is_some();
    let mut monitor = Monitor::for_job(&mut job, layout.interior_points());
    let mut iteration = monitor.first_iteration();
    let mut passes = Vec::new();
    let stop_reason = loop {
        let Some(plan) = stop.next_cycle(iteration, slabs.height, true) else { break StopReason::IterationLimit };
        let len = plan.len;
        iteration += len;
        passes.push(len);
        let pass_start = iteration - len;
        let mut told = |slab| {
            if let Some(callback) = on_slab.as_mut() {
                let elapsed = monitor.elapsed();
                callback(&SlabProgress { pass_start, pass_end: iteration, slab, slabs: slabs.own.len(), elapsed });
            }
        };
        let written = tell_slabs.then_some(&mut told as &mut dyn FnMut(usize));
        let measured = pyramid
            .pass(u.as_mut_slice(), &inputs, (len, plan.measure_step.is_some()), (written, None))
            .map_err(|(written, e)| slabs.interrupted(pass_start..iteration, written, monitor.last_checkpoint(), e))?;
        // The pass's write-backs are done: the grid holds its iterate.
        monitor.holds(iteration);
        let Some(d) = measured else { continue };
        if let Some(at) = d.first_non_finite {
            return Err(stop.non_finite(u, at, iteration));
        }
        // A checkpoint needs nothing copied: the write-backs are done (waited for above).
        if monitor.check_and_save::<S, T, N>(
            plan.record_at,
            Some((d.max_abs, d.sum_sq.sqrt())),
            (u, iteration),
            |_| Ok(()),
        )? {
            break StopReason::Converged;
        }
    };
    pyramid.synchronize()?;
    let wall = monitor.elapsed();
    drop(pyramid);
    drop(pinned);
    let mut report = monitor.into_report::<S, T, N>(
        format!("cuda device {device} ({})", gpu.name),
        slabs.resolved(job.schedule),
        u.shape(),
        (iteration, stop_reason),
        wall,
        Some((jit.time, jit.origin)),
    );
    let predicted = model::predict(&model_shape, &slabs, &passes, &costs);
    let done: usize = passes.iter().sum();
    let best = model::best(&model_shape, limit, arrays, &costs, skewed).map(|(height, width, per_iteration)| {
        (height, width, Duration::try_from_secs_f64(per_iteration * done as f64).unwrap_or(Duration::MAX))
    });
    report.model = best.map(|best| model::ModelReport { costs, predicted, best });
    Ok(report)
}

/// The model's constants, measured at start-up on the grid's own planes (not timed with
/// the run): the best of a few copies of up to 64 planes of `host` (page-locked) to the
/// device and back (the same values, so `host` is unchanged), of a device-to-device copy,
/// and of plain-kernel launches over them. The probe's buffers (three of the same planes)
/// fit `per_buffer` bytes each, and are freed before the run allocates its own.
fn probe<S: Stencil<N>, T: Real, const N: usize>(
    gpu: &Gpu,
    mode: Mode,
    host: &mut [T],
    shape: &model::Shape,
    per_buffer: usize,
    view_dims: &dyn Fn(usize) -> [usize; 3],
    scalars: &Scalars<T>,
) -> Result<(model::Costs, super::run::JitTime)> {
    const REPEATS: usize = 3;
    const LAUNCHES: usize = 5;
    let meta = S::META;
    let plane_bytes = shape.plane_len * shape.elem;
    let fewest = (2 * shape.radius + 1).min(shape.planes);
    let planes = (per_buffer / plane_bytes.max(1)).min(64).min(shape.planes).max(fewest);
    let len = planes * shape.plane_len;
    let bytes = (len * shape.elem) as f64;
    let stream = &gpu.stream;
    let alloc = || gpu.alloc_zeros::<T>(stream, len, "a probe buffer");
    let (mut a, mut b, field) = (alloc()?, alloc()?, alloc()?);
    let best_of = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        let mut best = f64::INFINITY;
        for _ in 0..REPEATS {
            let started = std::time::Instant::now();
            f()?;
            stream.synchronize().map_err(driver_error("waiting for the device"))?;
            best = best.min(started.elapsed().as_secs_f64());
        }
        Ok(best)
    };
    let up = best_of(&mut || stream.memcpy_htod(&host[..len], &mut a).map_err(driver_error("probing copies")))?;
    let down = best_of(&mut || stream.memcpy_dtoh(&a, &mut host[..len]).map_err(driver_error("probing copies")))?;
    let device_copy = best_of(&mut || stream.memcpy_dtod(&a, &mut b).map_err(driver_error("probing copies")))?;

    let dims = view_dims(planes);
    let (module, jit) = load_module::<S, T, N>(gpu, mode, dims, &[])?;
    let plain = module
        .load_function(&format!("{}_plain", meta.name))
        .map_err(driver_error("finding a kernel in the module"))?;
    let config = plain_config::<S, N>(gpu, dims, as_3d(meta.radius, 0), plain_shape::<N>()?)?;
    let [e0, e1, e2] = dims.map(|n| n as i64);
    let kernel = best_of(&mut || {
        for _ in 0..LAUNCHES {
            let mut launch = stream.launch_builder(&plain);
            launch.arg(&mut b);
            for index in 0..meta.fields.len() {
                launch.arg(if index == meta.unknown { &a } else { &field });
            }
            launch.arg(&e0).arg(&e1).arg(&e2);
            scalars.push(&mut launch);
            // SAFETY: the plain kernel's signature (output, fields in order, extents,
            // scalars), over buffers of `dims` points each; it indexes inside them.
            unsafe { launch.launch(config) }.map_err(driver_error("launching a kernel"))?;
        }
        Ok(())
    })?;
    let updated = ((planes - 2 * shape.radius) * shape.plane_interior * LAUNCHES) as f64;
    let costs = model::Costs {
        up: up / bytes,
        down: down / bytes,
        update: kernel / updated.max(1.0),
        device_copy: device_copy / bytes,
    };
    Ok((costs, jit))
}
