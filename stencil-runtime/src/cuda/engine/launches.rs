//! The CUDA engine's launches: the Jacobi kernels it gets, and a launch of them on a window
//! of the buffers (a plain or tiled pass, or an exact hierarchical cycle, with the cycle's
//! edges where the window meets the grid's).

use std::ops::Range;

use cudarc::driver::CudaSlice;

use super::{Build, GpuEngine, Jacobi, MEASURED_LAUNCHES, Unknown};
use crate::cuda::device::{Gpu, driver_error};
use crate::cuda::launch::{Args, Kernel, launch, shell_maps};
use crate::cuda::module::{JitTime, Module};
use crate::cuda::options::HierarchicalKernel;
use crate::kernel::KernelKind;
use crate::plan::fill::FillCopy;
use crate::plan::launch::{CYCLE_INTS, Cycle, Shape, plain, tiled};
use crate::plan::stream::StreamBuild;
use crate::schedule::CycleSizes;
use crate::{Error, Real, Result, ScalarValue, Schedule, Stencil};

impl<S: Stencil<N>, T: Real, const N: usize> GpuEngine<'_, S, T, N> {
    /// How a cycle over the planes `window` meets the grid's edges, per kernel axis.
    pub(super) fn cycle_edges(&self, window: &Range<usize>) -> [i32; 3] {
        self.edges.map_or([0; 3], |fill| fill.cycle_edges(window).flags(S::KERNELS.axes))
    }

    /// The Jacobi kernels and the boundary fill's that `build` asks for, for a grid seen as
    /// `dims`, compiled together into one module.
    pub(super) fn kernels(gpu: &Gpu, build: &Build<'_, T>, dims: [usize; 3]) -> Result<EngineKernels> {
        let plan = if build.jacobi { Some(CyclePlan::new::<S, T, N>(gpu, build, dims)?) } else { None };
        let pass_kind = if build.schedule == Schedule::Tiled { KernelKind::Tiled } else { KernelKind::Plain };
        let mut kinds = Vec::new();
        if let Some(plan) = &plan {
            kinds.extend([pass_kind, KernelKind::PlainMeasure]);
            kinds.extend(plan.whole.as_ref().map(|(cycle, _)| cycle.kind));
        }
        if !build.fill.is_empty() {
            kinds.push(KernelKind::Boundary);
        }
        if kinds.is_empty() {
            return Ok(EngineKernels { jacobi: None, cycle_blocks: 0, fill: None, jit: None });
        }
        let defines = plan.as_ref().map_or_else(Vec::new, CyclePlan::defines);
        let (module, jit) = Module::<S>::load::<T, N>(gpu, &build.options, dims, &kinds, &defines)?;
        let fill = match build.fill.is_empty() {
            true => None,
            false => Some((module.kernel::<N>(KernelKind::Boundary)?, build.fill.clone())),
        };
        let Some(CyclePlan { whole, stream }) = plan else {
            return Ok(EngineKernels { jacobi: None, cycle_blocks: 0, fill, jit: Some(jit) });
        };
        let cycle = match &whole {
            Some((geometry, sizes)) => {
                let kernel = module.kernel::<N>(geometry.kind)?;
                if geometry.kind != KernelKind::HierarchicalRows {
                    kernel.allow_shared(geometry.shape.shared as usize)?;
                }
                Some((kernel, *sizes))
            }
            None => None,
        };
        let registers = whole.as_ref().is_some_and(|(c, _)| c.kind == KernelKind::HierarchicalRows);
        let jacobi = Jacobi {
            pass: module.kernel::<N>(pass_kind)?,
            measure: module.kernel::<N>(KernelKind::PlainMeasure)?,
            cycle,
            registers,
            stream,
        };
        let cycle_blocks = whole.map_or(0, |(c, _)| c.shape.blocks());
        Ok(EngineKernels { jacobi: Some(jacobi), cycle_blocks, fill, jit: Some(jit) })
    }

    pub(super) fn elements(&self, planes: &Range<usize>) -> Range<usize> {
        planes.start * self.plane_len..planes.end * self.plane_len
    }

    pub(super) fn jacobi(&self) -> Result<&Jacobi> {
        self.jacobi.as_ref().ok_or_else(|| Error::Launch {
            kernel: S::META.name.into(),
            reason: "this run has no Jacobi kernels".into(),
        })
    }

    /// The block entries of a measured launch of `blocks` blocks (after this iteration's
    /// others), resetting the flags at the first.
    pub(super) fn entries(&mut self, blocks: usize) -> Result<Range<usize>> {
        if self.measured.is_empty() {
            self.compute
                .memcpy_htod(&[u64::MAX; MEASURED_LAUNCHES], &mut self.first_bad)
                .map_err(driver_error("resetting the check"))?;
        }
        let start = self.measured.last().map_or(0, |(_, e)| e.end);
        Ok(start..start + blocks)
    }

    /// A Jacobi launch of `kernel` in `shape` writing `window`'s interior of the next
    /// iterate, on a view of `dims`, with the cycle kernel's ints `cycle`; `measure`: where
    /// its block entries go (the launch's flag is then the next of this iteration's); `maps`:
    /// the boundary fill's maps of a plain pass that writes the outer layers too.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn launch_window(
        &mut self,
        kernel: &Kernel,
        shape: Shape,
        window: Range<usize>,
        dims: [usize; 3],
        cycle: [i32; CYCLE_INTS],
        measure: bool,
        maps: Option<[[i64; 6]; 3]>,
    ) -> Result<()> {
        let entries = if measure { Some(self.entries(shape.blocks())?) } else { None };
        let slot = self.measured.len();
        let Self { current, next, more, inputs, scalars, block_max, block_sum, first_bad, .. } = self;
        let mut args = window_args(WindowBuffers { current, next, more, inputs, scalars }, window.clone(), dims);
        args.cycle = cycle;
        if let Some(maps) = maps {
            args.fill = maps;
        }
        args.checks = Some(match &entries {
            Some(entries) => (
                block_max.slice_mut(entries.clone()),
                block_sum.slice_mut(entries.clone()),
                first_bad.slice_mut(slot..slot + 1),
            ),
            // Not written by a launch that does not measure.
            None => (block_max.as_view_mut(), block_sum.as_view_mut(), first_bad.as_view_mut()),
        });
        launch(&self.compute, kernel, args, shape)?;
        if let Some(entries) = entries {
            self.measured.push((window.start, entries));
        }
        Ok(())
    }

    /// Updates `planes` into the next iterate, `steps` iterations later (the engine's
    /// `update`), measuring S(u) − u with `measure`.
    pub(super) fn advance(&mut self, planes: Range<usize>, steps: usize, measure: bool) -> Result<()> {
        if planes.is_empty() {
            return Ok(());
        }
        if steps > 1 {
            return self.run_cycle(planes, steps, measure);
        }
        // The kernels run on a window of the buffers: the planes and their neighbours, seen
        // as a grid whose interior is `planes`.
        let r = S::META.radius[0];
        let window = self.elements(&(planes.start - r..planes.end + r));
        let mut shape = self.shape;
        shape[0] = planes.len() + 2 * r;
        let dims = S::KERNELS.view(&shape, 1);
        let jacobi = self.jacobi()?;
        let kernel = if measure { jacobi.measure.clone() } else { jacobi.pass.clone() };
        let launch_shape = match kernel.kind() {
            KernelKind::Tiled => tiled(S::KERNELS, dims, self.block, self.gpu.limits())?,
            _ => plain(S::KERNELS, dims, self.block, kernel.vector(), self.gpu.limits())?,
        };
        // A plain pass over the whole grid writes the next iterate's outer layers too.
        let maps = match &self.fill {
            Some((fill, copies)) if kernel.kind() == KernelKind::Plain && planes == (r..self.shape[0] - r) => {
                Some(shell_maps(fill, S::KERNELS, dims, copies)?.map(|m| m.values()))
            }
            _ => None,
        };
        self.layers.next = maps.is_some();
        self.launch_window(&kernel, launch_shape, window, dims, [0; CYCLE_INTS], measure, maps)
    }

    /// An exact hierarchical cycle of `steps` iterations updating `planes`: the kernel runs
    /// on the window of the planes `steps · r` around them (clipped to the local grid) and
    /// writes the window's interior, of which only `planes` hold the next iterate.
    pub(super) fn run_cycle(&mut self, planes: Range<usize>, steps: usize, measure: bool) -> Result<()> {
        let jacobi = self.jacobi()?;
        let Some((kernel, sizes)) = jacobi.cycle.clone() else {
            return Err(Error::Launch {
                kernel: S::META.name.into(),
                reason: "a cycle of several iterations needs a hierarchical schedule".into(),
            });
        };
        let reach = steps * S::META.radius[0];
        let planes = planes.start.saturating_sub(reach)..(planes.end + reach).min(self.shape[0]);
        let mut shape = self.shape;
        shape[0] = planes.len();
        let dims = S::KERNELS.view(&shape, 1);
        let whole = planes.len() == self.shape[0];
        let registers = jacobi.registers && whole;
        let sizes = CycleSizes { sub: steps, ..sizes };
        let edges = self.cycle_edges(&planes);
        let geometry = match &jacobi.stream {
            Some(stream) => stream.cycle(S::KERNELS, dims, sizes, T::BYTES, self.gpu.limits(), edges)?,
            None => Cycle::new(S::KERNELS, dims, sizes, T::BYTES, registers, self.gpu.limits(), edges)?,
        };
        let cycle = geometry.ints(steps, if measure { steps } else { 0 })?;
        self.layers.next = false;
        self.launch_window(&kernel, geometry.shape, self.elements(&planes), dims, cycle, measure, None)
    }
}

/// The kernels an engine gets, and the time taken to get them (none without kernels).
pub(super) struct EngineKernels {
    pub jacobi: Option<Jacobi>,
    /// The block entries the whole grid's cycles need.
    pub cycle_blocks: usize,
    pub fill: Option<(Kernel, Vec<FillCopy>)>,
    pub jit: Option<JitTime>,
}

/// A schedule's cycles over the whole local grid (the largest window: its geometry bounds
/// every launch's shared memory, which depends on the tile and halo, not on the cycle's
/// length), and what a streaming kernel is compiled with.
struct CyclePlan {
    whole: Option<(Cycle, CycleSizes)>,
    stream: Option<StreamBuild>,
}

impl CyclePlan {
    fn new<S: Stencil<N>, T: Real, const N: usize>(gpu: &Gpu, build: &Build<'_, T>, dims: [usize; 3]) -> Result<Self> {
        let edges = build.cycle_edges;
        Ok(match build.schedule {
            Schedule::Hierarchical { tile, halo, sub } => {
                let registers = build.alone && build.options.hierarchical_kernel == HierarchicalKernel::Auto;
                let sizes = CycleSizes { tile, halo, sub };
                let cycle = Cycle::new(S::KERNELS, dims, sizes, T::BYTES, registers, gpu.limits(), edges)?;
                Self { whole: Some((cycle, sizes)), stream: None }
            }
            streaming @ Schedule::Streaming { .. } => {
                let sizes = streaming.cycle_sizes(S::META).expect("a streaming schedule has cycle sizes");
                let stream =
                    StreamBuild::new(S::KERNELS, dims, sizes, build.options.stream_block_threads(), edges, T::BYTES);
                let cycle = stream.cycle(S::KERNELS, dims, sizes, T::BYTES, gpu.limits(), edges)?;
                Self { whole: Some((cycle, sizes)), stream: Some(stream) }
            }
            _ => Self { whole: None, stream: None },
        })
    }

    /// The definitions the cycle kernel is compiled with: the register kernel's rows, or
    /// the streaming kernel's levels and extents.
    fn defines(&self) -> Vec<(&'static str, usize)> {
        let rows = self.whole.as_ref().filter(|(c, _)| c.kind == KernelKind::HierarchicalRows).map(|(c, _)| c.rows);
        let mut defines: Vec<(&str, usize)> = rows.map(|rows| ("HIER_ROWS", rows)).into_iter().collect();
        defines.extend(self.stream.iter().flat_map(StreamBuild::defines));
        defines
    }
}

/// The buffers a Jacobi launch reads and writes.
pub(super) struct WindowBuffers<'a, 'g, T: Real, const N: usize> {
    pub current: &'a CudaSlice<T>,
    pub next: &'a mut CudaSlice<T>,
    pub more: &'a mut [Unknown<'g, T, N>],
    pub inputs: &'a [Option<CudaSlice<T>>],
    pub scalars: &'a [ScalarValue<T>],
}

/// The arguments of a Jacobi launch on `window` of the buffers, seen as a grid of `dims`: every
/// field (each unknown's current iterate at its place) and every unknown's next iterate.
pub(super) fn window_args<'a, T: Real, const N: usize>(
    buffers: WindowBuffers<'a, '_, T, N>,
    window: Range<usize>,
    dims: [usize; 3],
) -> Args<'a, T> {
    let WindowBuffers { current, next, more, inputs, scalars } = buffers;
    let mut currents = vec![current];
    let mut more_outputs = Vec::new();
    for Unknown { current, next, .. } in more {
        currents.push(&*current);
        more_outputs.push(next.slice_mut(window.clone()));
    }
    let mut unknowns = currents.into_iter();
    let fields =
        inputs.iter().map(|f| f.as_ref().or_else(|| unknowns.next()).map(|f| f.slice(window.clone()))).collect();
    let mut args = Args::new(dims.map(|n| n as i64), fields, scalars);
    args.output = Some(next.slice_mut(window));
    args.more_outputs = more_outputs;
    args
}
