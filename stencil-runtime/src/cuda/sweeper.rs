//! A sweep stencil's wavefront kernel on a grid (or on windows of planes of one): compiled
//! for its tile, with the pencils and ready flags of every window it sweeps.
//!
//! Where the stencil has a lane kernel (2-D, the antidiagonal hyperplane) and
//! [`WavefrontKernel::Auto`] is asked for, that kernel runs instead: a lane per M lines, a
//! block per 32·M lines taken in the order of a ticket, each block's last line handed to the next
//! block value by value through tagged words (`plan::lanes`). Both give the sequential
//! sweep's bits.
//!
//! The pencil kernel runs *pencils*: a pencil is the set of points whose skewed coordinates
//! (z₁, z₂) lie in one tile of `tile` (× `tile`) lanes, marched along z₀ by one block. Its
//! ready flag counts the planes it has stored; the pencils a pencil reads new values from
//! are those before it on each lane axis, and it waits for their flags. Blocks take pencils
//! from a ticket counter in tile-hyperplane order (p₁ + p₂ ascending), so every pencil waited
//! for belongs to a block that is already running: the launch cannot deadlock however many
//! blocks fit on the device at once.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use super::device::{Gpu, driver_error};
use super::launch::{Args, Kernel, launch};
use super::module::{JitTime, Module};
use super::options::{CudaOptions, WavefrontKernel};
use crate::kernel::KernelKind;
use crate::plan::lanes::{LaneGrid, lanes_fit};
use crate::plan::pencils::{Pencils, Staging};
use crate::{Error, Real, Result, ScalarValue, Schedule, Stencil, StencilMeta};

/// The most sweeps one launch of the pencil kernel runs, each following the one before
/// through the grid. Beyond a few the launch's time is the pencils' work, not its chain.
const SWEEPS_A_LAUNCH: usize = 16;

/// The ready flags (or the lanes' hand-over words) and the ticket counter of one window's
/// blocks, zeroed before every launch, and the pencils' orders uploaded so far.
struct Flags {
    /// By the sweeps a launch runs (the lane kernel's: one placeholder).
    orders: Vec<(usize, CudaSlice<i32>)>,
    progress: CudaSlice<i32>,
    ticket: CudaSlice<u32>,
}

impl Flags {
    /// `words` ready flags (one per pencil and sweep of a launch) or hand-over words.
    fn new(gpu: &Gpu, stream: &Arc<CudaStream>, words: usize) -> Result<Self> {
        Ok(Self {
            orders: vec![(0, gpu.upload(stream, &[0], "the wavefront's pencil order")?)],
            progress: gpu.alloc_zeros(stream, words, "the wavefront's ready flags")?,
            ticket: gpu.alloc_zeros(stream, 1, "the wavefront's ticket")?,
        })
    }

    /// The order of `pencils` for a launch of `sweeps` sweeps, uploaded on first use.
    fn order(&mut self, gpu: &Gpu, stream: &Arc<CudaStream>, pencils: &Pencils, sweeps: usize) -> Result<usize> {
        if let Some(at) = self.orders.iter().position(|(n, _)| *n == sweeps) {
            return Ok(at);
        }
        let order = gpu.upload(stream, &pencils.order(sweeps), "the wavefront's pencil order")?;
        self.orders.push((sweeps, order));
        Ok(self.orders.len() - 1)
    }
}

/// The launch over one window of planes: the pencils, or the lanes.
enum Geometry {
    Pencils(Pencils),
    Lanes(LaneGrid),
}

impl Geometry {
    fn extents(&self) -> [usize; 3] {
        match self {
            Geometry::Pencils(p) => p.extents,
            Geometry::Lanes(l) => l.extents,
        }
    }

    fn flags(&self, gpu: &Gpu, stream: &Arc<CudaStream>) -> Result<Flags> {
        match self {
            Geometry::Pencils(p) => Flags::new(gpu, stream, p.count[0] * p.count[1] * SWEEPS_A_LAUNCH),
            Geometry::Lanes(l) => Flags::new(gpu, stream, l.handoff_words),
        }
    }
}

/// The tile of a sweep's schedule on the GPU and whether it was asked for: `Wavefront {
/// tile }`'s, or the default one for `Plain` (the sequential sweep, whose values a wavefront
/// computes).
pub(crate) fn tile_of(meta: &'static StencilMeta, schedule: Schedule) -> Result<(usize, bool)> {
    match schedule {
        Schedule::Wavefront { tile } => Ok((tile, true)),
        Schedule::Plain | Schedule::Auto => match Schedule::Auto.resolve(meta)? {
            Schedule::Wavefront { tile } => Ok((tile, false)),
            _ => unreachable!("`Auto` resolves to a wavefront for sweeps"),
        },
        other => Err(Error::InvalidSchedule {
            schedule: other.to_string(),
            stencil: meta.name,
            reason: "a sweep stencil runs `Plain` or `Wavefront` on the GPU".into(),
        }),
    }
}

/// One sweep stencil of a run on the GPU.
pub(crate) struct Sweeper<T: Real> {
    meta: &'static StencilMeta,
    manifest: &'static crate::kernel::KernelManifest,
    kernel: Kernel,
    /// The tile the pencil kernel was compiled for, the planes between ready flags and the
    /// planes of its shared-memory window (0 where the lane kernel runs).
    pub tile: usize,
    chunk: usize,
    window: usize,
    /// The lines a lane owns where the lane kernel runs (`None`: the pencils run).
    lanes: Option<usize>,
    /// The sweeps one launch may run: several for the pencil kernel's helper warps (compute
    /// capability 8.0 on), else one.
    sweeps_a_launch: usize,
    /// The geometry and flags of each window swept so far, by its number of planes.
    windows: Vec<(usize, Geometry, Flags)>,
    scalars: Vec<ScalarValue<T>>,
}

impl<T: Real> Sweeper<T> {
    /// `S`'s wavefront kernel for a grid of `shape` under `schedule`, with `scalars`, and the
    /// time taken to get it: the lane kernel where `options` allow it and the stencil has one
    /// whose windows fit, else the pencil kernel. A pencils' tile that was not asked for
    /// (`Plain`, `Auto`) is halved until its windows fit, unless a window is asked for. One
    /// wider than the grid's longest axis (in skewed coordinates, at most the sum of the axes
    /// times the largest skew factor plus one) is lowered to it: its pencils hold the whole
    /// of every lane extent either way, so the sweep is the same.
    pub fn new<S: Stencil<N>, const N: usize>(
        gpu: &Gpu,
        options: &CudaOptions,
        shape: [usize; N],
        schedule: Schedule,
        scalars: Vec<ScalarValue<T>>,
    ) -> Result<(Self, JitTime)> {
        let meta = S::META;
        let (tile, explicit) = tile_of(meta, schedule)?;
        let skew_sum = 1 + meta.sweep.as_ref().map_or(0, |s| s.skew.iter().map(|&c| c as usize).sum::<usize>());
        let longest = shape.iter().sum::<usize>().saturating_mul(skew_sum.saturating_mul(skew_sum));
        let mut tile = tile.min(longest.max(1));
        let lanes = match options.wavefront_kernel {
            WavefrontKernel::Auto => lanes_fit(S::KERNELS, T::BYTES, gpu.limits(), options.lines_a_lane()),
            _ => None,
        };
        // The lane kernel has no tile: the pencils' geometry is computed only where they run.
        let (kind, defines, launch, chunk, window) = if let Some(lines) = lanes {
            let launch = LaneGrid::new(S::KERNELS, &shape, T::BYTES, lines)?.shape;
            (KernelKind::Lanes, vec![("LN_LINES", lines)], launch, 0, 0)
        } else {
            let pencils = loop {
                let limits = gpu.limits();
                match Pencils::new(meta, S::KERNELS, &shape, tile, options.staging(), T::BYTES, limits) {
                    Err(Error::Launch { .. }) if !explicit && tile > 1 && options.wavefront_window.is_none() => {
                        tile /= 2
                    }
                    result => break result?,
                }
            };
            let defines = vec![("WF_TILE", tile), ("WF_CHUNK", pencils.chunk), ("WF_WIN", pencils.window)];
            (KernelKind::Wavefront, defines, pencils.shape, pencils.chunk, pencils.window)
        };
        let (shared, threads) = (launch.shared as usize, launch.block[0]);
        let (module, jit) = Module::<S>::load::<T, N>(gpu, options, S::KERNELS.view(&shape, 1), &[kind], &defines)?;
        let kernel = module.kernel::<N>(kind)?;
        kernel.allow_shared(shared)?;
        if log::log_enabled!(log::Level::Debug) {
            // A diagnostic only: a driver that cannot say the occupancy does not stop the sweep.
            let blocks = match kernel.blocks_per_multiprocessor(threads, shared) {
                Ok(blocks) => blocks.to_string(),
                Err(e) => format!("unknown ({e})"),
            };
            log::debug!(
                "`{}` sweeps with the {kind:?} kernel, {defines:?}: {shared} B of shared memory and {threads} threads a \
                 block, blocks a multiprocessor: {blocks}",
                meta.name
            );
        }
        let windows = Vec::new();
        let sweeps_a_launch = if lanes.is_none() && gpu.limits().major >= 8 { SWEEPS_A_LAUNCH } else { 1 };
        let manifest = S::KERNELS;
        let sweeper = Self { meta, manifest, kernel, tile, chunk, window, lanes, sweeps_a_launch, windows, scalars };
        Ok((sweeper, jit))
    }

    /// Sweeps local interior `planes` of `current` (a grid of `shape`) in place on `stream`
    /// `sweeps` times, with the read-only fields `fields` (declaration order, the unknown's
    /// place `None`). The pencil kernel runs up to [`SWEEPS_A_LAUNCH`] of them in one launch,
    /// each sweep's pencils following the sweep before's through the grid; the values are the
    /// same as one sweep after another.
    #[allow(clippy::too_many_arguments)]
    pub fn sweep<const N: usize>(
        &mut self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        current: &mut CudaSlice<T>,
        shape: [usize; N],
        fields: &[Option<&CudaSlice<T>>],
        planes: Range<usize>,
        sweeps: usize,
    ) -> Result<()> {
        if planes.is_empty() {
            return Ok(());
        }
        // The kernel runs on a window of the buffers: the planes and the `r` around them,
        // seen as a grid whose interior is `planes`.
        let r = self.meta.radius[0];
        let plane_len: usize = shape[1..].iter().product();
        let window = planes.start - r..planes.end + r;
        let elements = window.start * plane_len..window.end * plane_len;
        let at = match self.windows.iter().position(|(len, ..)| *len == window.len()) {
            Some(at) => at,
            None => self.add_window(gpu, stream, shape, window.len())?,
        };
        let (_, geometry, flags) = &mut self.windows[at];
        let mut left = sweeps;
        while left > 0 {
            let now = left.min(self.sweeps_a_launch);
            left -= now;
            let (order, count, origin, shape) = match geometry {
                Geometry::Pencils(p) => {
                    let order = flags.order(gpu, stream, p, now)?;
                    (order, p.count.map(|c| c as i32), p.origin.map(|o| o as i32), p.shape_of(now))
                }
                Geometry::Lanes(l) => (0, [0, 0], [0, 0], l.shape),
            };
            stream.memset_zeros(&mut flags.progress).map_err(driver_error("clearing the ready flags"))?;
            stream.memset_zeros(&mut flags.ticket).map_err(driver_error("clearing the ready flags"))?;
            let views = fields.iter().map(|f| f.map(|f| f.slice(elements.clone()))).collect();
            let extents = geometry.extents().map(|n| n as i64);
            let mut args = Args::new(extents, views, &self.scalars);
            args.in_place = Some(current.slice_mut(elements.clone()));
            let order = flags.orders[order].1.as_view();
            args.pencils = Some((order, flags.progress.as_view_mut(), flags.ticket.as_view_mut(), count, origin));
            launch(stream, &self.kernel, args, shape)?;
        }
        Ok(())
    }

    /// The pencils and flags of a window of `planes` planes.
    fn add_window<const N: usize>(
        &mut self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        mut shape: [usize; N],
        planes: usize,
    ) -> Result<usize> {
        shape[0] = planes;
        if let Some(lines) = self.lanes {
            let geometry = Geometry::Lanes(LaneGrid::new(self.manifest, &shape, T::BYTES, lines)?);
            let flags = geometry.flags(gpu, stream)?;
            self.windows.push((planes, geometry, flags));
            return Ok(self.windows.len() - 1);
        }
        let staging = Staging { chunk: Some(self.chunk), window: Some(self.window) };
        let pencils = Pencils::new(self.meta, self.manifest, &shape, self.tile, staging, T::BYTES, gpu.limits())?;
        let geometry = Geometry::Pencils(pencils);
        let flags = geometry.flags(gpu, stream)?;
        self.windows.push((planes, geometry, flags));
        Ok(self.windows.len() - 1)
    }
}
