//! The CUDA engine: a grid kept on the device for the whole run, its planes updated by the
//! generated kernels launched on windows of the buffers (a window of planes seen as a grid
//! of its own), and copies to and from the host on a second stream, so that the copies of
//! the planes exchanged with other ranks overlap the update of the middle planes. With a
//! NCCL link (`cuda/nccl.rs`) those planes are staged in device buffers and sent device to
//! device on the second stream instead.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream};

mod buffers;
mod launches;
mod reference;

use launches::WindowBuffers;

use buffers::{BufferSizes, CycleChecks, untracked};

use crate::cuda::device::{Gpu, Pinned, driver_error};
use crate::cuda::launch::{Kernel, fill, launch};
use crate::cuda::module::JitTime;
use crate::cuda::nccl::{Link, Nccl};
use crate::cuda::options::CudaOptions;
use crate::cuda::sweeper::Sweeper;
use crate::engine::{CycleCheck, Difference, Engine};
use crate::plan::fill::{Fill, FillCopy};
use crate::plan::launch::{Cycle, plain};
use crate::plan::planes::{Exchange, Halo};
use crate::plan::stream::StreamBuild;
use crate::schedule::CycleSizes;
use crate::{Error, Grid, Real, Result, Schedule, Stencil};

/// Measured launches in one iteration at most: the planes sent below, those sent above,
/// and the middle.
const MEASURED_LAUNCHES: usize = 3;

/// The Jacobi kernels of a run: the plain (or tiled) pass, the measuring pass, and for a
/// hierarchical schedule its cycle kernel with its tiles' sizes (the number of
/// subiterations is each cycle's own).
struct Jacobi {
    pass: Kernel,
    measure: Kernel,
    cycle: Option<(Kernel, CycleSizes)>,
    /// Whether cycles over the whole grid run the register kernel (compiled for its rows).
    registers: bool,
    /// For a streaming schedule: what its kernel was compiled with (cycles run it).
    stream: Option<StreamBuild>,
}

/// What an engine is built for.
pub(crate) struct Build<'a, T: Real> {
    /// The run's schedule (the kernels it needs).
    pub schedule: Schedule,
    pub options: CudaOptions,
    /// Whether Jacobi steps or measured sweeps need the second buffer and the Jacobi kernels.
    pub jacobi: bool,
    /// Whether the run is alone (one process): cycles then cover the whole grid and may use
    /// the register kernel.
    pub alone: bool,
    /// Host buffers of the exchanges, page-locked for the run.
    pub halos: Option<&'a Exchange<T>>,
    /// The boundary fill's copies (none for Dirichlet boundaries).
    pub fill: Vec<FillCopy>,
    /// How cycles over the whole grid meet its edges, per kernel axis
    /// ([`CycleEdges::flags`](crate::plan::fill::CycleEdges::flags)).
    pub cycle_edges: [i32; 3],
}

/// A system's further unknown: the user's grid and its two iterates on the device.
struct Unknown<'g, T: Real, const N: usize> {
    grid: &'g mut Grid<T, N>,
    current: CudaSlice<T>,
    next: CudaSlice<T>,
}

/// The user's grid on one GPU, run by stencil `S` (and, for alternating steps, further
/// sweep stencils).
pub(crate) struct GpuEngine<'g, S: Stencil<N>, T: Real, const N: usize> {
    u: &'g mut Grid<T, N>,
    /// A system's further unknowns, in declaration order (plain and tiled passes only).
    more: Vec<Unknown<'g, T, N>>,
    gpu: Gpu,
    compute: Arc<CudaStream>,
    copy: Arc<CudaStream>,
    jacobi: Option<Jacobi>,
    cycle_checks: Option<CycleChecks>,
    /// Whether an inexact cycle of this iteration looked for non-finite values.
    cycle_checked: bool,
    sweepers: Vec<Sweeper<T>>,
    /// The boundary fill's kernel and copies, when there are copies.
    fill: Option<(Kernel, Vec<FillCopy>)>,
    /// Which buffers hold their periodic and Neumann outer layers already.
    layers: Layers,
    /// The boundary conditions where the grid's edges are, for hierarchical cycles.
    edges: Option<Fill<N>>,
    inputs: Vec<Option<CudaSlice<T>>>,
    /// The read-only fields of the further sweep stencils (declaration order, `None` at the
    /// unknown): of sweeper 1, 2, ….
    other_inputs: Vec<Vec<Option<CudaSlice<T>>>>,
    current: CudaSlice<T>,
    next: CudaSlice<T>,
    scalars: Vec<crate::ScalarValue<T>>,
    shape: [usize; N],
    plane_len: usize,
    block: [u32; 3],
    block_max: CudaSlice<f64>,
    block_sum: CudaSlice<f64>,
    first_bad: CudaSlice<u64>,
    /// This iteration's measured launches: the first element of their window and their
    /// entries in the block arrays.
    measured: Vec<(usize, Range<usize>)>,
    marked: Option<CudaEvent>,
    /// Every unknown's iterate at the last check, when a check measures the change since
    /// then (`Engine::keep_reference`).
    reference: Option<reference::Reference<T>>,
    /// The device buffers and communicator of exchanges over NCCL, when the planes go
    /// device to device (else through the host buffers the loop gives `stage`).
    link: Option<Link<T>>,
    /// Time spent getting the kernels, for the report.
    pub jit: JitTime,
    _pinned: Pinned,
    _stencil: std::marker::PhantomData<S>,
}

/// The engine's two streams: the updates', and the copies' (and NCCL's) at the highest
/// priority, so that the kernels NCCL runs there to send the ghost planes take the
/// multiprocessors the middle planes' update frees, instead of waiting for the whole update
/// and delaying the next iteration.
fn streams(gpu: &Gpu) -> Result<(Arc<CudaStream>, Arc<CudaStream>)> {
    let compute = gpu.ctx.new_stream().map_err(driver_error("creating a stream"))?;
    let (_, highest) =
        cudarc::driver::result::stream::get_priority_range().map_err(driver_error("reading the stream priorities"))?;
    let copy = gpu.ctx.new_stream_with_priority(highest).map_err(driver_error("creating a stream"))?;
    Ok((compute, copy))
}

/// Which buffers hold their periodic and Neumann outer layers already: the next iterate's
/// when a plain pass over the whole grid wrote them, the current's after a fill or after the
/// swap that follows such a pass; and whether the next buffers were filled once (`settled`).
#[derive(Clone, Copy, Debug, Default)]
struct Layers {
    current: bool,
    next: bool,
    settled: bool,
}

impl<'g, S: Stencil<N>, T: Real, const N: usize> GpuEngine<'g, S, T, N> {
    /// Uploads `u` and `S`'s read-only fields `inputs` (`None` at the unknown) to `gpu`
    /// and gets the kernels `build` asks for.
    pub fn new(
        u: &'g mut Grid<T, N>,
        inputs: &[Option<&[T]>],
        params: &S::Params<T>,
        gpu: Gpu,
        build: Build<'_, T>,
    ) -> Result<Self> {
        let shape = u.shape();
        let dims = S::KERNELS.view(&shape, 1);
        let scalars = S::param_values(params);
        let block = build.options.plain_block(S::KERNELS, N);
        // The measuring kernel's launch over the whole grid: one thread per point.
        let whole = plain(S::KERNELS, dims, block, 1, gpu.limits())?;
        let launches::EngineKernels { jacobi, cycle_blocks, fill, mut jit } = Self::kernels(&gpu, &build, dims)?;
        let mut sweepers = Vec::new();
        if S::META.is_sweep() {
            let (sweeper, sweep_jit) =
                Sweeper::new::<S, N>(&gpu, &build.options, shape, build.schedule, scalars.clone())?;
            sweepers.push(sweeper);
            jit = Some(jit.map_or(sweep_jit, |j| j.and(sweep_jit)));
        }
        let inexact =
            matches!(build.schedule, Schedule::Hierarchical { .. }) && !build.schedule.is_exact_blocking(S::META);
        let blocks = (MEASURED_LAUNCHES * whole.blocks()).max(cycle_blocks);
        let sizes = BufferSizes {
            second: build.jacobi,
            blocks,
            cycle_blocks: (inexact && !build.alone).then_some(cycle_blocks),
        };
        let buffers = buffers::allocate(&gpu, u, inputs, sizes)?;
        let (compute, copy) = streams(&gpu)?;
        let halos: Vec<&[T]> = match build.halos {
            Some(Exchange { send, recv }) => vec![&send.lower, &send.upper, &recv.lower, &recv.upper],
            None => Vec::new(),
        };
        let (pinned, _) = Pinned::register(&gpu, &halos)?;
        let jit = jit.unwrap_or(JitTime { time: std::time::Duration::ZERO, origin: crate::report::Origin::Memory });
        Ok(Self {
            u,
            more: Vec::new(),
            gpu,
            compute,
            copy,
            jacobi,
            cycle_checks: buffers.cycle_checks,
            cycle_checked: false,
            sweepers,
            fill,
            layers: Layers::default(),
            edges: None,
            inputs: buffers.inputs,
            other_inputs: Vec::new(),
            current: buffers.current,
            next: buffers.next,
            scalars,
            shape,
            plane_len: shape[1..].iter().product(),
            block,
            block_max: buffers.block_max,
            block_sum: buffers.block_sum,
            first_bad: buffers.first_bad,
            measured: Vec::new(),
            marked: None,
            reference: None,
            link: None,
            jit,
            _pinned: pinned,
            _stencil: std::marker::PhantomData,
        })
    }

    /// This engine with a system's further unknowns `more` (declaration order) uploaded,
    /// each with a second buffer.
    pub fn with_unknowns(mut self, more: Vec<&'g mut Grid<T, N>>) -> Result<Self> {
        let (gpu, stream) = (&self.gpu, &self.gpu.stream);
        for grid in more {
            let (current, next) = untracked(gpu, || {
                Ok((gpu.upload(stream, grid.as_slice(), "a grid")?, gpu.upload(stream, grid.as_slice(), "a grid")?))
            })?;
            self.more.push(Unknown { grid, current, next });
        }
        stream.synchronize().map_err(driver_error("waiting for the device"))?;
        Ok(self)
    }

    /// This engine with its ghost planes sent and received over `nccl` (device to device),
    /// `sides` values on the side of the rank below and of the rank above (every unknown's
    /// planes); unchanged for `None`.
    pub fn with_link(mut self, nccl: Option<std::rc::Rc<Nccl>>, sides: (usize, usize)) -> Result<Self> {
        if let Some(nccl) = nccl {
            let gpu = &self.gpu;
            self.link = Some(untracked(gpu, || Link::new(gpu, &gpu.stream, nccl, sides))?);
        }
        Ok(self)
    }

    /// Copies `planes` (the host buffers, or the link's: its planes received, or with
    /// `sent` those it sent) into the planes `lower` and `upper` of every unknown's current
    /// buffer, on the copy stream; the next update waits for them.
    fn unstage_from(&mut self, lower: Range<usize>, upper: Range<usize>, planes: &Halo<T>, sent: bool) -> Result<()> {
        self.layers.current = false;
        let (lower, upper) = (self.elements(&lower), self.elements(&upper));
        let copy = &self.copy;
        let targets: Vec<&mut CudaSlice<T>> =
            std::iter::once(&mut self.current).chain(self.more.iter_mut().map(|m| &mut m.current)).collect();
        match &self.link {
            Some(link) => link.unstage(copy, targets, &lower, &upper, sent)?,
            None => {
                for (k, target) in targets.into_iter().enumerate() {
                    for (from, part) in [(&planes.lower, &lower), (&planes.upper, &upper)] {
                        let from = &from[k * part.len()..][..part.len()];
                        copy.memcpy_htod(from, &mut target.slice_mut(part.clone()))
                            .map_err(driver_error("copying to the device"))?;
                    }
                }
            }
        }
        // The next update reads the ghost planes.
        self.compute.join(copy).map_err(driver_error("ordering the copies"))
    }

    /// This engine with its hierarchical cycles' working regions meeting the grid's edges
    /// as `fill` says.
    pub fn with_edges(mut self, fill: Fill<N>) -> Self {
        self.edges = Some(fill);
        self
    }

    /// Adds sweep stencil `B`, with its read-only fields (declaration order, `None` at the
    /// unknown) and parameters: `sweep(k, …)` sweeps with the k-th stencil added (the
    /// engine's own is 0).
    pub fn with_sweeps<B: Stencil<N>>(
        mut self,
        inputs: &[Option<&[T]>],
        params: &B::Params<T>,
        schedule: Schedule,
        options: &CudaOptions,
    ) -> Result<Self> {
        let (sweeper, jit) = Sweeper::new::<B, N>(&self.gpu, options, self.shape, schedule, B::param_values(params))?;
        let stream = &self.gpu.stream;
        let fields = inputs.iter().map(|f| f.map(|f| self.gpu.upload(stream, f, "a grid")).transpose());
        self.other_inputs.push(fields.collect::<Result<_>>()?);
        stream.synchronize().map_err(driver_error("waiting for the device"))?;
        self.sweepers.push(sweeper);
        self.jit = self.jit.and(jit);
        Ok(self)
    }

    /// `count` sweeps of `planes` with stencil `which`, as many a launch as its sweeper runs.
    fn sweeps_at_once(&mut self, which: usize, planes: Range<usize>, count: usize) -> Result<()> {
        self.layers.current = false;
        let Self { gpu, compute, sweepers, inputs, other_inputs, current, shape, .. } = self;
        let sweeper = sweepers.get_mut(which).ok_or_else(|| Error::Launch {
            kernel: S::META.name.into(),
            reason: format!("this run has no sweep stencil {which}"),
        })?;
        let fields = match which {
            0 => &inputs[..],
            k => &other_inputs[k - 1][..],
        };
        let fields: Vec<Option<&CudaSlice<T>>> = fields.iter().map(Option::as_ref).collect();
        sweeper.sweep(gpu, compute, current, *shape, &fields, planes, count)
    }

    /// The tile of the first sweeper (for the report of a sweep run).
    pub fn sweep_tile(&self) -> Option<usize> {
        self.sweepers.first().map(|s| s.tile)
    }
}

impl<S: Stencil<N>, T: Real, const N: usize> Drop for GpuEngine<'_, S, T, N> {
    fn drop(&mut self) {
        // The buffers are untracked (see `buffers`): no use on either stream may outlive them.
        let _ = self.copy.synchronize();
        let _ = self.compute.synchronize();
    }
}

impl<S: Stencil<N>, T: Real, const N: usize> Engine<T, N> for GpuEngine<'_, S, T, N> {
    const QUEUED: bool = true;

    fn update(&mut self, planes: Range<usize>, steps: usize, measure: bool) -> Result<()> {
        // Against the reference, the change is measured after the update.
        let against_reference = measure && self.reference.is_some();
        self.advance(planes.clone(), steps, measure && !against_reference)?;
        if against_reference && !planes.is_empty() {
            self.changed_since_reference(planes)?;
        }
        Ok(())
    }

    fn keep_reference(&mut self) -> Result<()> {
        self.keep()
    }

    fn inexact_cycle(&mut self, cores: Range<usize>, len: usize, check: CycleCheck) -> Result<()> {
        self.layers.next = false;
        if cores.is_empty() {
            return Ok(());
        }
        let jacobi = self.jacobi()?;
        let Some((kernel, sizes)) = jacobi.cycle.clone() else {
            unreachable!("inexact cycles run under a hierarchical schedule only")
        };
        // The kernel runs on the whole local grid, so that the working regions are clipped
        // only where the whole grid's are; its tiles along axis 0 are those of `cores`.
        let dims = S::KERNELS.view(&self.shape, 1);
        let sizes = CycleSizes { sub: len, ..sizes };
        let edges = self.cycle_edges(&(0..self.shape[0]));
        let geometry = Cycle::new(S::KERNELS, dims, sizes, T::BYTES, jacobi.registers, self.gpu.limits(), edges)?
            .cores_of_axis_0(cores);
        let whole = 0..self.shape[0] * self.plane_len;
        match check {
            CycleCheck::Residual => {
                let cycle = geometry.ints(len, 1)?;
                return self.launch_window(&kernel, geometry.shape, whole, dims, cycle, true, None);
            }
            CycleCheck::None => {
                let cycle = geometry.ints(len, 0)?;
                return self.launch_window(&kernel, geometry.shape, whole, dims, cycle, false, None);
            }
            CycleCheck::NonFinite => {}
        }
        // Across ranks, a checked cycle writes its own block entries (unread) and flag.
        let first = !self.cycle_checked;
        let Some(checks) = self.cycle_checks.as_mut() else {
            unreachable!("inexact cycles across ranks have their check buffers")
        };
        if first {
            // The first of the iteration's checked launches resets the flag.
            self.compute
                .memcpy_htod(&[u64::MAX], &mut checks.first_bad)
                .map_err(driver_error("resetting the check"))?;
        }
        let Self { current, next, more, inputs, scalars, .. } = self;
        let whole = 0..current.len();
        let mut args = launches::window_args(WindowBuffers { current, next, more, inputs, scalars }, whole, dims);
        args.cycle = geometry.ints(len, 1)?;
        args.checks =
            Some((checks.block_max.as_view_mut(), checks.block_sum.as_view_mut(), checks.first_bad.as_view_mut()));
        launch(&self.compute, &kernel, args, geometry.shape)?;
        self.cycle_checked = true;
        Ok(())
    }

    fn sweep(&mut self, which: usize, planes: Range<usize>) -> Result<()> {
        self.sweeps_at_once(which, planes, 1)
    }

    fn sweeps(&mut self, which: usize, planes: Range<usize>, count: usize) -> Result<()> {
        if self.fill.is_some() {
            // Periodic and Neumann layers are filled between sweeps.
            for k in 0..count {
                if k > 0 {
                    self.fill()?;
                }
                self.sweeps_at_once(which, planes.clone(), 1)?;
            }
            return Ok(());
        }
        self.sweeps_at_once(which, planes, count)
    }

    fn mark(&mut self) -> Result<()> {
        self.marked = Some(self.compute.record_event(None).map_err(driver_error("recording an event"))?);
        Ok(())
    }

    fn stage(&mut self, lower: Range<usize>, upper: Range<usize>, send: &mut Halo<T>, next: bool) -> Result<()> {
        // The copies wait for the marked updates (the planes they read), or for everything.
        let ready = match (next, self.marked.take()) {
            (true, Some(event)) => event,
            _ => self.compute.record_event(None).map_err(driver_error("recording an event"))?,
        };
        self.copy.wait(&ready).map_err(driver_error("ordering the copies"))?;
        // A system's unknowns one after another, in declaration order.
        let (lower, upper) = (self.elements(&lower), self.elements(&upper));
        let sources: Vec<&CudaSlice<T>> = match next {
            true => std::iter::once(&self.next).chain(self.more.iter().map(|m| &m.next)).collect(),
            false => std::iter::once(&self.current).chain(self.more.iter().map(|m| &m.current)).collect(),
        };
        let copy = &self.copy;
        if let Some(link) = &mut self.link {
            link.stage(copy, &sources, &lower, &upper)?;
            // An update queued after this (a cycle's middle) may write these planes.
            return self.compute.join(copy).map_err(driver_error("ordering the copies"));
        }
        for (k, source) in sources.into_iter().enumerate() {
            let into = &mut send.lower[k * lower.len()..][..lower.len()];
            copy.memcpy_dtoh(&source.slice(lower.clone()), into).map_err(driver_error("copying to the host"))?;
            let into = &mut send.upper[k * upper.len()..][..upper.len()];
            copy.memcpy_dtoh(&source.slice(upper.clone()), into).map_err(driver_error("copying to the host"))?;
        }
        copy.synchronize().map_err(driver_error("waiting for the device"))
    }

    fn swap(&mut self) {
        self.layers.current = std::mem::take(&mut self.layers.next);
        std::mem::swap(&mut self.current, &mut self.next);
        for Unknown { current, next, .. } in &mut self.more {
            std::mem::swap(current, next);
        }
    }

    fn fill(&mut self) -> Result<()> {
        let Some((kernel, copies)) = &self.fill else { return Ok(()) };
        if self.layers.current {
            return Ok(());
        }
        let dims = S::KERNELS.view(&self.shape, 1);
        // Once, the next buffers too: their outer points where a periodic or Neumann layer
        // meets a Dirichlet one copy Dirichlet values, which no pass writes.
        let both = !self.layers.settled;
        let more = self.more.iter_mut().flat_map(|m| [Some(&mut m.current), both.then_some(&mut m.next)]);
        let buffers = [Some(&mut self.current), both.then_some(&mut self.next)].into_iter().chain(more);
        for buffer in buffers.flatten() {
            fill(&self.compute, kernel, S::KERNELS, buffer.as_view_mut(), dims, copies)?;
        }
        self.layers = Layers { current: true, next: false, settled: true };
        Ok(())
    }

    fn unstage(&mut self, lower: Range<usize>, upper: Range<usize>, recv: &Halo<T>) -> Result<()> {
        self.unstage_from(lower, upper, recv, false)
    }

    fn send_on_device(&mut self, neighbours: (Option<usize>, Option<usize>)) -> Result<bool> {
        let Some(link) = &mut self.link else { return Ok(false) };
        link.post(&self.copy, neighbours)?;
        Ok(true)
    }

    fn restore(&mut self, lower: Range<usize>, upper: Range<usize>, sent: &Halo<T>) -> Result<()> {
        // The copies wait for the updates that may have left other values in these planes.
        let updated = self.compute.record_event(None).map_err(driver_error("recording an event"))?;
        self.copy.wait(&updated).map_err(driver_error("ordering the copies"))?;
        self.unstage_from(lower, upper, sent, true)
    }

    fn read(&mut self, planes: Range<usize>, into: &mut [T]) -> Result<()> {
        let elements = self.elements(&planes);
        let stream = &self.compute;
        stream.memcpy_dtoh(&self.current.slice(elements), into).map_err(driver_error("copying to the host"))?;
        stream.synchronize().map_err(driver_error("waiting for the device"))
    }

    fn write(&mut self, planes: Range<usize>, from: &[T]) -> Result<()> {
        self.layers.current = false;
        let elements = self.elements(&planes);
        let stream = &self.compute;
        stream
            .memcpy_htod(from, &mut self.current.slice_mut(elements))
            .map_err(driver_error("copying to the device"))?;
        // `from` may be reused as soon as this returns.
        stream.synchronize().map_err(driver_error("waiting for the device"))
    }

    fn difference(&mut self) -> Result<Difference> {
        let measured = std::mem::take(&mut self.measured);
        let cycle_checked = std::mem::take(&mut self.cycle_checked);
        let Some(used) = measured.last().map(|(_, entries)| entries.end) else { return Ok(Difference::default()) };
        let stream = &self.compute;
        let read = |what: &CudaSlice<f64>| {
            stream.clone_dtoh(&what.slice(0..used)).map_err(driver_error("reading the residual"))
        };
        let (maxes, sums) = (read(&self.block_max)?, read(&self.block_sum)?);
        let bad = stream.clone_dtoh(&self.first_bad).map_err(driver_error("reading the check"))?;
        let mut first_non_finite = measured
            .iter()
            .zip(&bad)
            .filter(|&(_, &at)| at != u64::MAX)
            .map(|((start, _), &at)| start + at as usize)
            .min();
        if let Some(check) = self.cycle_checks.as_ref().filter(|_| cycle_checked) {
            // The iterate the cycle wrote, not the measuring update's.
            let bad = stream.clone_dtoh(&check.first_bad).map_err(driver_error("reading the check"))?;
            first_non_finite = bad.first().filter(|&&at| at != u64::MAX).map(|&at| at as usize);
        }
        Ok(Difference {
            max_abs: maxes.iter().copied().fold(0.0, f64::max),
            sum_sq: sums.iter().sum(),
            first_non_finite,
        })
    }

    fn find_non_finite(&mut self, own: Range<usize>, _part: Range<usize>) -> Result<Option<usize>> {
        // As one process on the GPU: the measuring kernel's first non-finite S(u).
        self.update(own, 1, true)?;
        Ok(self.difference()?.first_non_finite)
    }

    fn value_at(&mut self, at: usize) -> Result<f64> {
        // Of a system, the first unknown's value there that is not finite.
        let mut values = Vec::new();
        for current in std::iter::once(&self.current).chain(self.more.iter().map(|m| &m.current)) {
            let value =
                self.compute.clone_dtoh(&current.slice(at..at + 1)).map_err(driver_error("copying to the host"))?;
            values.extend(value.first().map(|v| v.to_f64()));
        }
        let first = values.first().copied().ok_or_else(|| Error::Cuda {
            what: "reading a value".into(),
            message: "the copy returned nothing".into(),
        })?;
        Ok(values.into_iter().find(|v| !v.is_finite()).unwrap_or(first))
    }

    fn wait(&mut self) -> Result<()> {
        self.copy.synchronize().map_err(driver_error("waiting for the device"))?;
        self.compute.synchronize().map_err(driver_error("waiting for the device"))
    }

    fn host(&mut self) -> Result<&mut Grid<T, N>> {
        self.wait()?;
        self.compute.memcpy_dtoh(&self.current, self.u.as_mut_slice()).map_err(driver_error("copying to the host"))?;
        self.compute.synchronize().map_err(driver_error("waiting for the device"))?;
        Ok(self.u)
    }

    fn hosts(&mut self) -> Result<Vec<&Grid<T, N>>> {
        self.host()?;
        for Unknown { grid, current, .. } in &mut self.more {
            self.compute.memcpy_dtoh(current, grid.as_mut_slice()).map_err(driver_error("copying to the host"))?;
        }
        self.compute.synchronize().map_err(driver_error("waiting for the device"))?;
        Ok(std::iter::once(&*self.u).chain(self.more.iter().map(|m| &*m.grid)).collect())
    }

    fn finish(&mut self) -> Result<()> {
        self.hosts().map(drop)
    }
}
