//! The GPU side of a distributed run: a rank's grid kept on the device, ranges of planes
//! updated by the plain (or tiled), measuring and hierarchical kernels launched on windows
//! of the buffers, and the planes exchanged with the neighbours copied on a second stream,
//! so that the copies and the messages overlap the update of the middle planes
//! ([`GpuEngine`]). With the out-of-core schedule the grid stays in host memory and the
//! single-process pyramid runs over slabs of the own planes ([`GpuPasses`]).

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, PushKernelArg};

use super::device::{Gpu, driver_error};
use super::nvrtc::Mode;
use super::out_of_core::{Config, Pinned, Pyramid};
use super::run::{CycleGeometry, Scalars, as_3d, load_module, plain_config, plain_shape};
use super::wavefront::{Flags, Pencils, launch_sweep, sweep_kernel, tile_of};
use crate::cpu::Difference;
use crate::cpu::out_of_core::Ghosts;
use crate::distributed::Halo;
use crate::distributed::driver::{Engine, Passes};
use crate::distributed::sweep::{SweepEngine, Sweeps};
use crate::plan::slabs::Slabs;
use crate::{Error, Grid, Inner, Real, Result, Schedule, Stencil};

/// Measured launches in one iteration at most: the planes sent below, those sent above,
/// and the middle.
const MEASURED_LAUNCHES: usize = 3;

/// One rank's grid on one GPU.
pub(crate) struct GpuEngine<'g, S: Stencil<N>, T: Real, const N: usize> {
    u: &'g mut Grid<T, N>,
    gpu: Gpu,
    compute: Arc<CudaStream>,
    copy: Arc<CudaStream>,
    /// The plain kernel, or the tiled one for `Schedule::Tiled`.
    pass: CudaFunction,
    measure: CudaFunction,
    /// For `Schedule::Hierarchical`: its kernel (shared-memory), tile and halo.
    cycle: Option<(CudaFunction, usize, usize)>,
    /// For an inexact one: where a checked cycle's launch writes its block entries (one per
    /// tile of the whole local grid, unread) and its first non-finite value.
    cycle_check: Option<CycleCheck>,
    /// Whether an inexact cycle of this iteration looked for non-finite values.
    cycle_checked: bool,
    /// For a sweep stencil: its wavefront kernel.
    sweeper: Option<Sweeper>,
    inputs: Vec<Option<CudaSlice<T>>>,
    current: CudaSlice<T>,
    next: CudaSlice<T>,
    scalars: Scalars<T>,
    shape: [usize; N],
    plane_len: usize,
    block_shape: ((u32, u32), u32),
    block_max: CudaSlice<f64>,
    block_sum: CudaSlice<f64>,
    first_bad: CudaSlice<u64>,
    /// This iteration's measured launches: the first element of their window and their
    /// entries in the block arrays.
    measured: Vec<(usize, Range<usize>)>,
    marked: Option<CudaEvent>,
    _pinned: Pinned,
    _stencil: std::marker::PhantomData<S>,
}

impl<'g, S: Stencil<N>, T: Real, const N: usize> GpuEngine<'g, S, T, N> {
    /// Uploads `u` and the read-only fields to GPU `device` and registers the exchange
    /// buffers (page-locked, so that their copies run asynchronously at full speed).
    pub(crate) fn new(
        u: &'g mut Grid<T, N>,
        inputs: &[Option<&[T]>],
        params: &S::Params<T>,
        (device, mode, schedule): (usize, Mode, Schedule),
        (send, recv): (&Halo<T>, &Halo<T>),
    ) -> Result<Self> {
        let gpu = Gpu::open(device)?;
        let shape = u.shape();
        let dims = as_3d(&shape, 1);
        let (module, _) = load_module::<S, T, N>(&gpu, mode, dims, &[])?;
        let function = |kind: &str| {
            module
                .load_function(&format!("{}_{kind}", S::META.name))
                .map_err(driver_error("finding a kernel in the module"))
        };
        let pass = function(if schedule == Schedule::Tiled { "tiled" } else { "plain" })?;
        let measure = function("plain_measure")?;
        let mut cycle_blocks = None;
        let cycle = match schedule {
            Schedule::Hierarchical { tile, halo, sub } => {
                let kernel = function("hier")?;
                // The whole local grid is the largest window: its shared memory bounds every
                // launch's (which depends on the tile and halo, not on the cycle's length).
                let largest = CycleGeometry::new::<S, T, N>(
                    gpu.max_shared_per_block,
                    dims,
                    as_3d(S::META.radius, 0),
                    (tile, halo, sub),
                    false,
                )?;
                largest.allow_shared_memory(&kernel)?;
                cycle_blocks = (!schedule.is_exact_blocking(S::META)).then(|| largest.blocks());
                Some((kernel, tile, halo))
            }
            _ => None,
        };
        let sweeper = match S::META.is_sweep() {
            true => Some(Sweeper::new::<S, T, N>(&gpu, mode, shape, schedule)?.0),
            false => None,
        };
        let block_shape = plain_shape::<N>()?;
        let whole = plain_config::<S, N>(&gpu, dims, as_3d(S::META.radius, 0), block_shape)?;
        let blocks = whole.grid_dim.0 as usize * whole.grid_dim.1 as usize * whole.grid_dim.2 as usize;
        // Buffers before streams: cudarc then leaves their synchronisation across the two
        // streams to this engine (events below), instead of making every use of a buffer
        // wait for every earlier one, which would serialise the copies and the update.
        let stream = &gpu.stream;
        let upload = |data: &[T]| gpu.upload(stream, data, "a grid");
        let allocate = |n: usize| gpu.alloc_zeros::<f64>(stream, n, "the residual's per-block results");
        // The buffers are allocated without cudarc's event tracking: with it, every use of a
        // buffer on one stream waits for its last use on the other, so the copies of the
        // planes sent would wait for the update of the middle planes (the same buffer) and
        // nothing would overlap. The engine orders its two streams itself (events in
        // `stage` and `unstage`), waits for the allocations below before using the buffers
        // on another stream, and waits for both streams before they are freed (`Drop`).
        let tracking = gpu.ctx.is_event_tracking();
        // SAFETY: see above; tracking is restored at once, so only these buffers are
        // untracked.
        unsafe { gpu.ctx.disable_event_tracking() };
        let allocated = (|| {
            let inputs = inputs.iter().map(|f| f.map(upload).transpose()).collect::<Result<Vec<_>>>()?;
            let (current, next) = (upload(u.as_slice())?, upload(u.as_slice())?);
            let sums = (allocate(MEASURED_LAUNCHES * blocks)?, allocate(MEASURED_LAUNCHES * blocks)?);
            let first_bad = gpu.upload(stream, &[u64::MAX; MEASURED_LAUNCHES], "the non-finite flags")?;
            let cycle_check = cycle_blocks
                .map(|blocks| {
                    Ok(CycleCheck {
                        block_max: allocate(blocks)?,
                        block_sum: allocate(blocks)?,
                        first_bad: gpu.upload(stream, &[u64::MAX], "the non-finite flag")?,
                    })
                })
                .transpose()?;
            stream.synchronize().map_err(driver_error("waiting for the device"))?;
            Ok((inputs, current, next, sums, first_bad, cycle_check))
        })();
        if tracking {
            // SAFETY: turns tracking back on for buffers allocated from now on.
            unsafe { gpu.ctx.enable_event_tracking() };
        }
        let (inputs, current, next, (block_max, block_sum), first_bad, cycle_check) = allocated?;
        let new_stream = || gpu.ctx.new_stream().map_err(driver_error("creating a stream"));
        let (compute, copy) = (new_stream()?, new_stream()?);
        let (pinned, _) = Pinned::register(&gpu, &[&send.lower, &send.upper, &recv.lower, &recv.upper])?;
        Ok(Self {
            u,
            gpu,
            compute,
            copy,
            pass,
            measure,
            cycle,
            cycle_check,
            cycle_checked: false,
            sweeper,
            inputs,
            current,
            next,
            scalars: Scalars::new(S::param_values(params)),
            shape,
            plane_len: shape[1..].iter().product(),
            block_shape,
            block_max,
            block_sum,
            first_bad,
            measured: Vec::new(),
            marked: None,
            _pinned: pinned,
            _stencil: std::marker::PhantomData,
        })
    }

    /// The device's name, for the report.
    pub(crate) fn device_name(&self) -> &str {
        &self.gpu.name
    }

    fn elements(&self, planes: &Range<usize>) -> Range<usize> {
        planes.start * self.plane_len..planes.end * self.plane_len
    }

    /// An exact hierarchical cycle of `steps` iterations updating `planes`: the kernel runs
    /// on the window of the planes `steps · r` around them (clipped to the local grid) and
    /// writes the window's interior, of which only `planes` hold the next iterate.
    fn run_cycle(&mut self, planes: Range<usize>, steps: usize) -> Result<()> {
        let Some((kernel, tile, halo)) = &self.cycle else {
            return Err(Error::Launch {
                kernel: format!("{}_hier", S::META.name),
                reason: "a cycle of several iterations needs a hierarchical schedule".into(),
            });
        };
        let reach = steps * S::META.radius[0];
        let planes = planes.start.saturating_sub(reach)..(planes.end + reach).min(self.shape[0]);
        let window = self.elements(&planes);
        let mut shape = self.shape;
        shape[0] = planes.len();
        let dims = as_3d(&shape, 1);
        let geometry = CycleGeometry::new::<S, T, N>(
            self.gpu.max_shared_per_block,
            dims,
            as_3d(S::META.radius, 0),
            (*tile, *halo, steps),
            false,
        )?;
        let extents = dims.map(|n| n as i64);
        let ints = geometry.ints(steps, 0);
        let mut out = self.next.slice_mut(window.clone());
        let fields: Vec<_> =
            self.inputs.iter().map(|f| f.as_ref().unwrap_or(&self.current).slice(window.clone())).collect();
        let mut launch = self.compute.launch_builder(kernel);
        launch.arg(&mut out);
        for field in &fields {
            launch.arg(field);
        }
        launch.arg(&extents[0]).arg(&extents[1]).arg(&extents[2]);
        self.scalars.push(&mut launch);
        for value in &ints {
            launch.arg(value);
        }
        launch.arg(&mut self.block_max).arg(&mut self.block_sum).arg(&mut self.first_bad);
        // SAFETY: the arguments match `<name>_hier`'s signature (output, the fields in
        // declaration order with the current iterate for the unknown, the extents, the
        // scalars, tile, halos, subiterations, the measure flag — 0: the block arrays and the
        // flag are not written). Every buffer is a window of the same planes, the extents are
        // the window's, the kernel indexes only inside them, and its shared memory is within
        // the limit set in `new` (the whole local grid's geometry, the largest).
        unsafe { launch.launch(geometry.config) }.map(|_| ()).map_err(driver_error("launching a kernel"))
    }
}

/// The buffers a checked inexact cycle writes: its block entries and its first non-finite
/// value (a flat index of the local grid).
struct CycleCheck {
    block_max: CudaSlice<f64>,
    block_sum: CudaSlice<f64>,
    first_bad: CudaSlice<u64>,
}

/// A sweep stencil's wavefront kernel, compiled for the rank's grid, and the pencils and
/// ready flags of each window it has swept (by its number of planes).
struct Sweeper {
    kernel: CudaFunction,
    _module: Arc<CudaModule>,
    /// The lanes per tile axis, the planes between ready flags and the planes of the
    /// shared-memory window the kernel was compiled for.
    tile: usize,
    chunk: usize,
    window: usize,
    windows: Vec<(usize, Pencils, Flags)>,
}

impl Sweeper {
    /// `S`'s wavefront kernel for a grid of `shape` under `schedule`, and the time taken to
    /// get it.
    fn new<S: Stencil<N>, T: Real, const N: usize>(
        gpu: &Gpu,
        mode: Mode,
        shape: [usize; N],
        schedule: Schedule,
    ) -> Result<(Self, std::time::Duration)> {
        let (pencils, module, kernel, jit) = sweep_kernel::<S, T, N>(gpu, mode, shape, tile_of(S::META, schedule)?)?;
        let (tile, chunk, window) = (pencils.lanes[0], pencils.chunk, pencils.window);
        Ok((Self { kernel, _module: module, tile, chunk, window, windows: Vec::new() }, jit.time))
    }

    /// Sweeps local interior `planes` of `current` (a grid of `shape`) in place on `stream`,
    /// with the read-only fields `inputs` and the stencil's `scalars`.
    fn sweep<S: Stencil<N>, T: Real, const N: usize>(
        &mut self,
        (gpu, stream): (&Gpu, &Arc<CudaStream>),
        (current, shape): (&mut CudaSlice<T>, [usize; N]),
        (inputs, scalars): (&[&CudaSlice<T>], &Scalars<T>),
        planes: Range<usize>,
    ) -> Result<()> {
        if planes.is_empty() {
            return Ok(());
        }
        // The kernel runs on a window of the buffers: the planes and the `r` around them,
        // seen as a grid whose interior is `planes`.
        let r = S::META.radius[0];
        let plane_len: usize = shape[1..].iter().product();
        let window = planes.start - r..planes.end + r;
        let elements = window.start * plane_len..window.end * plane_len;
        let found = self.windows.iter().position(|(len, ..)| *len == window.len());
        let at = match found {
            Some(at) => at,
            None => {
                let mut shape = shape;
                shape[0] = window.len();
                let limits = (gpu.max_threads_per_block as usize, gpu.max_shared_per_block);
                let pencils = Pencils::new::<S, T, N>(shape, self.tile, Some(self.chunk), limits)?;
                if pencils.window != self.window {
                    return Err(Error::Launch {
                        kernel: format!("{}_wavefront", S::META.name),
                        reason: format!(
                            "a window of {} planes needs {} planes of shared memory, the kernel has {}",
                            window.len(),
                            pencils.window,
                            self.window
                        ),
                    });
                }
                let flags = Flags::new(gpu, stream, &pencils)?;
                self.windows.push((window.len(), pencils, flags));
                self.windows.len() - 1
            }
        };
        let (_, pencils, flags) = &mut self.windows[at];
        let mut u = current.slice_mut(elements.clone());
        let inputs: Vec<_> = inputs.iter().map(|f| f.slice(elements.clone())).collect();
        launch_sweep(stream, (&mut u, &inputs, scalars), flags, pencils, &self.kernel)
    }
}

impl<S: Stencil<N>, T: Real, const N: usize> Sweeps<T> for GpuEngine<'_, S, T, N> {
    fn sweep(&mut self, which: usize, planes: Range<usize>) -> Result<()> {
        debug_assert_eq!(which, 0, "one stencil");
        let Some(sweeper) = self.sweeper.as_mut() else {
            return Err(Error::Launch {
                kernel: format!("{}_wavefront", S::META.name),
                reason: "only a sweep stencil sweeps".into(),
            });
        };
        let inputs: Vec<&CudaSlice<T>> = self.inputs.iter().flatten().collect();
        sweeper.sweep::<S, T, N>(
            (&self.gpu, &self.compute),
            (&mut self.current, self.shape),
            (&inputs, &self.scalars),
            planes,
        )
    }

    fn read(&mut self, planes: Range<usize>, into: &mut [T]) -> Result<()> {
        read_planes(&self.compute, &self.current, self.elements(&planes), into)
    }

    fn write(&mut self, planes: Range<usize>, from: &[T]) -> Result<()> {
        let elements = self.elements(&planes);
        write_planes(&self.compute, &mut self.current, elements, from)
    }
}

impl<S: Stencil<N>, T: Real, const N: usize> SweepEngine<T> for GpuEngine<'_, S, T, N> {
    fn find_non_finite(&mut self, own: Range<usize>, _part: Range<usize>) -> Result<Option<usize>> {
        // As one process on the GPU: the measuring kernel's first non-finite S(u).
        self.update(own, 1, true)?;
        Ok(self.difference()?.first_non_finite)
    }
}

/// One stencil of [`GpuSweeps`]: its kernel, its read-only fields and its scalars.
struct Swept<T: Real> {
    sweeper: Sweeper,
    inputs: Vec<CudaSlice<T>>,
    scalars: Scalars<T>,
}

/// A rank's grid on one GPU, swept by two stencils in turn (alternating steps): no Jacobi
/// kernels and one stream, since every message of the pipeline waits for its sweep.
pub(crate) struct GpuSweeps<'g, A: Stencil<N>, B: Stencil<N>, T: Real, const N: usize> {
    u: &'g mut Grid<T, N>,
    gpu: Gpu,
    current: CudaSlice<T>,
    shape: [usize; N],
    stencils: (Swept<T>, Swept<T>),
    _stencils: std::marker::PhantomData<(A, B)>,
}

impl<'g, A: Stencil<N>, B: Stencil<N>, T: Real, const N: usize> GpuSweeps<'g, A, B, T, N> {
    /// Uploads `u` and each stencil's read-only fields (`None` at the unknown) to GPU
    /// `device` and gets both kernels; returns the time the kernels took.
    pub(crate) fn new(
        u: &'g mut Grid<T, N>,
        params: (&A::Params<T>, &B::Params<T>),
        fields: crate::steps::FieldPair<'_, T>,
        (device, mode, schedule): (usize, Mode, Schedule),
    ) -> Result<(Self, std::time::Duration)> {
        let gpu = Gpu::open(device)?;
        let shape = u.shape();
        let (first, jit_first) = Sweeper::new::<A, T, N>(&gpu, mode, shape, schedule)?;
        let (second, jit_second) = Sweeper::new::<B, T, N>(&gpu, mode, shape, schedule)?;
        let stream = &gpu.stream;
        let upload = |data: &[T]| gpu.upload(stream, data, "a grid");
        let uploads = |fields: &[Option<&[T]>]| fields.iter().flatten().map(|f| upload(f)).collect::<Result<Vec<_>>>();
        let current = upload(u.as_slice())?;
        let stencils = (
            Swept { sweeper: first, inputs: uploads(fields.0)?, scalars: Scalars::new(A::param_values(params.0)) },
            Swept { sweeper: second, inputs: uploads(fields.1)?, scalars: Scalars::new(B::param_values(params.1)) },
        );
        stream.synchronize().map_err(driver_error("waiting for the device"))?;
        let sweeps = Self { u, gpu, current, shape, stencils, _stencils: std::marker::PhantomData };
        Ok((sweeps, jit_first + jit_second))
    }

    /// The device's name, for the report.
    pub(crate) fn device_name(&self) -> &str {
        &self.gpu.name
    }

    /// Waits for every sweep.
    pub(crate) fn wait(&mut self) -> Result<()> {
        self.gpu.stream.synchronize().map_err(driver_error("waiting for the device"))
    }

    /// Waits for every sweep and leaves the grid in the user's.
    pub(crate) fn finish(self) -> Result<()> {
        let stream = &self.gpu.stream;
        stream.memcpy_dtoh(&self.current, self.u.as_mut_slice()).map_err(driver_error("copying to the host"))?;
        stream.synchronize().map_err(driver_error("waiting for the device"))
    }

    fn elements(&self, planes: &Range<usize>) -> Range<usize> {
        let plane_len: usize = self.shape[1..].iter().product();
        planes.start * plane_len..planes.end * plane_len
    }
}

impl<A: Stencil<N>, B: Stencil<N>, T: Real, const N: usize> Sweeps<T> for GpuSweeps<'_, A, B, T, N> {
    fn sweep(&mut self, which: usize, planes: Range<usize>) -> Result<()> {
        let at = (&self.gpu, &self.gpu.stream);
        let grid = (&mut self.current, self.shape);
        match which {
            0 => {
                let Swept { sweeper, inputs, scalars } = &mut self.stencils.0;
                let inputs: Vec<&CudaSlice<T>> = inputs.iter().collect();
                sweeper.sweep::<A, T, N>(at, grid, (&inputs, scalars), planes)
            }
            _ => {
                let Swept { sweeper, inputs, scalars } = &mut self.stencils.1;
                let inputs: Vec<&CudaSlice<T>> = inputs.iter().collect();
                sweeper.sweep::<B, T, N>(at, grid, (&inputs, scalars), planes)
            }
        }
    }

    fn read(&mut self, planes: Range<usize>, into: &mut [T]) -> Result<()> {
        read_planes(&self.gpu.stream, &self.current, self.elements(&planes), into)
    }

    fn write(&mut self, planes: Range<usize>, from: &[T]) -> Result<()> {
        let elements = self.elements(&planes);
        write_planes(&self.gpu.stream, &mut self.current, elements, from)
    }
}

/// Copies `elements` of `buffer` into `into` on `stream`, and waits until they are there.
fn read_planes<T: Real>(
    stream: &Arc<CudaStream>,
    buffer: &CudaSlice<T>,
    elements: Range<usize>,
    into: &mut [T],
) -> Result<()> {
    stream.memcpy_dtoh(&buffer.slice(elements), into).map_err(driver_error("copying to the host"))?;
    stream.synchronize().map_err(driver_error("waiting for the device"))
}

/// Copies `from` into `elements` of `buffer` on `stream`, and waits (`from` may be reused as
/// soon as this returns).
fn write_planes<T: Real>(
    stream: &Arc<CudaStream>,
    buffer: &mut CudaSlice<T>,
    elements: Range<usize>,
    from: &[T],
) -> Result<()> {
    stream.memcpy_htod(from, &mut buffer.slice_mut(elements)).map_err(driver_error("copying to the device"))?;
    stream.synchronize().map_err(driver_error("waiting for the device"))
}

impl<S: Stencil<N>, T: Real, const N: usize> Drop for GpuEngine<'_, S, T, N> {
    fn drop(&mut self) {
        // The buffers are untracked (see `new`): no use on either stream may outlive them.
        let _ = self.copy.synchronize();
        let _ = self.compute.synchronize();
    }
}

impl<S: Stencil<N>, T: Real, const N: usize> Engine<T> for GpuEngine<'_, S, T, N> {
    const QUEUED: bool = true;

    fn update(&mut self, planes: Range<usize>, steps: usize, measure: bool) -> Result<()> {
        if planes.is_empty() {
            return Ok(());
        }
        if steps > 1 {
            return self.run_cycle(planes, steps);
        }
        let r = S::META.radius[0];
        // The kernels run on a window of the buffers: the planes and their neighbours, seen
        // as a grid whose interior is `planes`.
        let window = self.elements(&(planes.start - r..planes.end + r));
        let mut shape = self.shape;
        shape[0] = planes.len() + 2 * r;
        let dims = as_3d(&shape, 1);
        let config = plain_config::<S, N>(&self.gpu, dims, as_3d(S::META.radius, 0), self.block_shape)?;
        let extents = dims.map(|n| n as i64);
        if measure && self.measured.is_empty() {
            self.compute
                .memcpy_htod(&[u64::MAX; MEASURED_LAUNCHES], &mut self.first_bad)
                .map_err(driver_error("resetting the check"))?;
        }
        let slot = self.measured.len();
        let entries = {
            let (x, y, z) = config.grid_dim;
            let start = self.measured.last().map_or(0, |(_, e)| e.end);
            start..start + x as usize * y as usize * z as usize
        };
        let mut out = self.next.slice_mut(window.clone());
        let fields: Vec<_> =
            self.inputs.iter().map(|f| f.as_ref().unwrap_or(&self.current).slice(window.clone())).collect();
        let mut launch = self.compute.launch_builder(if measure { &self.measure } else { &self.pass });
        launch.arg(&mut out);
        for field in &fields {
            launch.arg(field);
        }
        launch.arg(&extents[0]).arg(&extents[1]).arg(&extents[2]);
        self.scalars.push(&mut launch);
        let mut check = measure.then(|| {
            (
                self.block_max.slice_mut(entries.clone()),
                self.block_sum.slice_mut(entries.clone()),
                self.first_bad.slice_mut(slot..slot + 1),
            )
        });
        if let Some((maxes, sums, bad)) = check.as_mut() {
            launch.arg(maxes).arg(sums).arg(bad);
        }
        // SAFETY: the arguments match the generated kernel's signature (output, the fields in
        // declaration order with the current iterate for the unknown, the three extents, the
        // scalars, and for the measuring kernel the two block arrays with one entry per
        // launched block and the non-finite flag). Every buffer is a window of `planes ± r`
        // planes, the extents are the window's, and the kernel only indexes inside them.
        unsafe { launch.launch(config) }.map_err(driver_error("launching a kernel"))?;
        if measure {
            self.measured.push((window.start, entries));
        }
        Ok(())
    }

    fn inexact_cycle(&mut self, cores: Range<usize>, len: usize, check: bool) -> Result<()> {
        if cores.is_empty() {
            return Ok(());
        }
        let Some((kernel, tile, halo)) = &self.cycle else {
            unreachable!("inexact cycles run under a hierarchical schedule only")
        };
        // The kernel runs on the whole local grid, so that the working regions are clipped
        // only where the whole grid's are; its tiles along axis 0 are those of `cores`.
        let dims = as_3d(&self.shape, 1);
        let radius = as_3d(S::META.radius, 0);
        let geometry =
            CycleGeometry::new::<S, T, N>(self.gpu.max_shared_per_block, dims, radius, (*tile, *halo, len), false)?
                .cores_of_axis_0(cores);
        let ints = geometry.ints(len, usize::from(check));
        let extents = dims.map(|n| n as i64);
        let check_buffers = self.cycle_check.as_mut().filter(|_| check);
        let mut launch = self.compute.launch_builder(kernel);
        launch.arg(&mut self.next);
        let fields: Vec<_> = self.inputs.iter().map(|f| f.as_ref().unwrap_or(&self.current)).collect();
        for field in &fields {
            launch.arg(*field);
        }
        launch.arg(&extents[0]).arg(&extents[1]).arg(&extents[2]);
        self.scalars.push(&mut launch);
        for value in &ints {
            launch.arg(value);
        }
        match check_buffers {
            Some(buffers) => {
                // The first of the iteration's checked launches resets the flag.
                if !self.cycle_checked {
                    self.compute
                        .memcpy_htod(&[u64::MAX], &mut buffers.first_bad)
                        .map_err(driver_error("resetting the check"))?;
                }
                launch.arg(&mut buffers.block_max).arg(&mut buffers.block_sum).arg(&mut buffers.first_bad);
            }
            // Not written when the kernel does not measure.
            None => {
                launch.arg(&mut self.block_max).arg(&mut self.block_sum).arg(&mut self.first_bad);
            }
        }
        // SAFETY: the arguments match `<name>_hier`'s signature (output, the fields in
        // declaration order with the current iterate for the unknown, the extents, the
        // scalars, tile, the cores of axis 0, halos, subiterations, the measure flag, the block
        // arrays and the flag). The buffers are the whole local grid's and the extents are
        // its own; `cores` lies in its interior, so the kernel indexes only inside them. A
        // measuring launch has one block entry per tile of the whole local grid, at least
        // one per launched block; the shared memory is within the limit set in `new`.
        unsafe { launch.launch(geometry.config) }.map_err(driver_error("launching a kernel"))?;
        self.cycle_checked |= check;
        Ok(())
    }

    fn restore(&mut self, lower: Range<usize>, upper: Range<usize>, sent: &Halo<T>) -> Result<()> {
        // The copies wait for the updates that may have left other values in these planes.
        let updated = self.compute.record_event(None).map_err(driver_error("recording an event"))?;
        self.copy.wait(&updated).map_err(driver_error("ordering the copies"))?;
        self.unstage(lower, upper, sent)
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
        let (lower, upper) = (self.elements(&lower), self.elements(&upper));
        let source = if next { &self.next } else { &self.current };
        let copy = &self.copy;
        copy.memcpy_dtoh(&source.slice(lower), &mut send.lower[..]).map_err(driver_error("copying to the host"))?;
        copy.memcpy_dtoh(&source.slice(upper), &mut send.upper[..]).map_err(driver_error("copying to the host"))?;
        copy.synchronize().map_err(driver_error("waiting for the device"))
    }

    fn swap(&mut self) {
        std::mem::swap(&mut self.current, &mut self.next);
    }

    fn unstage(&mut self, lower: Range<usize>, upper: Range<usize>, recv: &Halo<T>) -> Result<()> {
        let (lower, upper) = (self.elements(&lower), self.elements(&upper));
        let copy = &self.copy;
        copy.memcpy_htod(&recv.lower[..], &mut self.current.slice_mut(lower))
            .map_err(driver_error("copying to the device"))?;
        copy.memcpy_htod(&recv.upper[..], &mut self.current.slice_mut(upper))
            .map_err(driver_error("copying to the device"))?;
        // The next update reads the ghost planes.
        self.compute.join(copy).map_err(driver_error("ordering the copies"))
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
        if let Some(check) = self.cycle_check.as_ref().filter(|_| cycle_checked) {
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

    fn wait(&mut self) -> Result<()> {
        self.copy.synchronize().map_err(driver_error("waiting for the device"))?;
        self.compute.synchronize().map_err(driver_error("waiting for the device"))
    }

    fn finish(mut self) -> Result<()> {
        self.wait()?;
        self.compute.memcpy_dtoh(&self.current, self.u.as_mut_slice()).map_err(driver_error("copying to the host"))?;
        self.compute.synchronize().map_err(driver_error("waiting for the device"))
    }

    fn value_at(&mut self, at: usize) -> Result<f64> {
        let value =
            self.compute.clone_dtoh(&self.current.slice(at..at + 1)).map_err(driver_error("copying to the host"))?;
        value
            .first()
            .map(|v| v.to_f64())
            .ok_or_else(|| Error::Cuda { what: "reading a value".into(), message: "the copy returned nothing".into() })
    }
}

/// The out-of-core schedule underneath a rank: the pyramid of a single-process run on GPU
/// `device`, over slabs of the rank's own planes in its host grid (page-locked for the run).
/// The chunks of the first and last slabs read the ghost planes, which are never written
/// back; each pass ends when its last slab is back in host memory, ready to be sent.
pub(crate) struct GpuPasses<'g, 'i, S: Stencil<N>, T: Real, const N: usize> {
    pyramid: Pyramid<'g, S, T, N>,
    inputs: Vec<Option<&'i [T]>>,
    _pinned: Pinned,
}

impl<'g, 'i, S: Stencil<N>, T: Real, const N: usize> GpuPasses<'g, 'i, S, T, N> {
    /// Sets up the passes over slabs of the own planes `own` of `u`: of `slab` planes, or
    /// the widest whose buffers fit `device_memory` (`None`: 90 % of what `gpu` has free),
    /// with `height` iterations at most, `inner` ones in each slab.
    pub(crate) fn new(
        (gpu, mode): (&'g Gpu, Mode),
        u: &Grid<T, N>,
        inputs: Vec<Option<&'i [T]>>,
        params: &S::Params<T>,
        own: Range<usize>,
        Config { slab, height, inner, device_memory }: Config,
    ) -> Result<Self> {
        let layout = crate::plan::Layout::new(S::META, u.shape())?;
        let arrays = 2 + inputs.iter().flatten().count();
        let limit = match device_memory {
            Some(limit) => limit,
            None => gpu.ctx.mem_get_info().map_err(driver_error("reading the free device memory"))?.0 / 10 * 9,
        };
        let slabs = crate::cpu::slabs_for(
            &layout,
            own,
            height,
            (slab, Some(limit)),
            (arrays, T::BYTES),
            inner == Inner::Skewed,
        )?;
        let mut host: Vec<&[T]> = inputs.iter().flatten().copied().collect();
        host.push(u.as_slice());
        let (pinned, refused) = Pinned::register(gpu, &host)?;
        if let Some(reason) = refused {
            eprintln!("stencil: the grid could not be page-locked ({reason}); copies will be slower");
        }
        let (pyramid, _) = Pyramid::new(gpu, mode, (slabs, inner), u.shape(), &inputs, params, None)?;
        Ok(Self { pyramid, inputs, _pinned: pinned })
    }

    /// The slabs the passes run over.
    pub(crate) fn slabs(&self) -> &Slabs {
        self.pyramid.slabs()
    }
}

impl<S: Stencil<N>, T: Real, const N: usize> Passes<T> for GpuPasses<'_, '_, S, T, N> {
    fn pass(
        &mut self,
        u: &mut [T],
        (len, measure): (usize, bool),
        ghosts: Ghosts<'_, T>,
    ) -> std::result::Result<Option<Difference>, (usize, Error)> {
        let measured = self.pyramid.pass(u, &self.inputs, (len, measure), (None, Some(ghosts)))?;
        // The planes sent are read from host memory as soon as the pass returns.
        self.pyramid.synchronize().map_err(|error| (self.pyramid.slabs().own.len(), error))?;
        Ok(measured)
    }
}
