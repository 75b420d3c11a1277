//! The GPU backend's solver loop for Jacobi stencils: fields uploaded once, two device
//! buffers swapped every iteration, the residual measured by the `_plain_measure` kernel.

use std::ops::Range;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, LaunchArgs, LaunchConfig, PushKernelArg};

use super::cache::{self, Origin};
use super::device::{Gpu, driver_error};
use super::nvrtc::{CompileOptions, Mode};
use crate::plan::Layout;
use crate::run::monitor::Monitor;
use crate::report::StopReason;
use crate::solver::Job;
use crate::stop::StopRule;
use crate::{Error, Grid, Real, Report, Result, ScalarValue, Schedule, Stencil};

/// Launch shape of the plain kernel, `((BLOCK_X, BLOCK_Y), MARCH)`: a BLOCK_X × BLOCK_Y column
/// of threads marching MARCH planes. In 2-D the middle axis has one point, so BLOCK_Y is 1
/// and the block is a row marching along the slow axis; in 1-D every thread has one point.
/// Chosen by a sweep on an H100 (`docs/performance.md`): in 3-D, blocks of 64×4, 64×8, 128×4
/// and 32×16 marching 4 or 8 planes were within 3 % of each other.
fn default_shape(dim: usize) -> ((u32, u32), u32) {
    match dim {
        3 => ((64, 4), 8),
        2 => ((128, 1), 16),
        _ => ((256, 1), 1),
    }
}

/// Environment variable overriding the plain kernel's launch shape, `BLOCK_X,BLOCK_Y,MARCH`
/// (for tuning; the tiled kernel uses the same shape; BLOCK_Y is 1 in 2-D and 1-D, MARCH is 1
/// in 1-D).
pub const SHAPE_VAR: &str = "STENCIL_CUDA_SHAPE";

pub(super) fn plain_shape<const N: usize>() -> Result<((u32, u32), u32)> {
    let default = default_shape(N);
    let Ok(text) = std::env::var(SHAPE_VAR) else { return Ok(default) };
    let parts: Vec<u32> = text.split(',').filter_map(|p| p.trim().parse().ok()).collect();
    match parts[..] {
        // The middle axis of a 2-D grid, and the marching axis of a 1-D grid, have one point.
        [x, y, m] if x > 0 && y > 0 && m > 0 && x * y <= 1024 => {
            Ok(((x, if N == 3 { y } else { 1 }), if N == 1 { 1 } else { m }))
        }
        _ => Err(Error::Launch {
            kernel: "plain".into(),
            reason: format!("{SHAPE_VAR}={text:?} is not BLOCK_X,BLOCK_Y,MARCH with BLOCK_X·BLOCK_Y ≤ 1024"),
        }),
    }
}

/// A shape (missing axes: `fill` = 1) or a radius (`fill` = 0) seen as 3-D, as the kernels
/// see it: a 2-D grid's axes are axes 0 and 2, a 1-D grid is axis 2.
pub(super) fn as_3d(values: &[usize], fill: usize) -> [usize; 3] {
    match *values {
        [a] => [fill, fill, a],
        [a, b] => [a, fill, b],
        [a, b, c] => [a, b, c],
        _ => unreachable!("grids have 1 to 3 axes"),
    }
}

fn blocks(n: usize, per_block: u32) -> usize {
    n.div_ceil(per_block as usize)
}

/// Time spent getting the module, for the report.
pub(crate) struct JitTime {
    pub time: Duration,
    pub origin: Origin,
}

/// Runs a Jacobi stencil on GPU `device`.
pub(crate) fn run<S: Stencil<N>, T: Real, const N: usize>(
    mut job: Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    device: usize,
    mode: Mode,
) -> Result<Report> {
    let meta = S::META;
    let layout = Layout::new(meta, u.shape())?;
    let gpu = Gpu::open(device)?;
    if meta.is_sweep() {
        return super::wavefront::run(job, u, &gpu, device, &layout, mode);
    }
    if let Schedule::OutOfCore { slab, height, inner, device_memory } = job.schedule {
        let schedule = super::out_of_core::Config { slab, height, inner, device_memory };
        return super::out_of_core::run(job, u, &gpu, device, &layout, mode, schedule);
    }
    let dims = as_3d(&u.shape(), 1);
    let radius = as_3d(meta.radius, 0);
    let tiled = matches!(job.schedule, Schedule::Tiled);
    let geometry = match job.schedule {
        Schedule::Hierarchical { tile, halo, sub } => {
            let registers = std::env::var(HIER_KERNEL_VAR).is_ok_and(|v| v == "shared").then_some(false);
            Some(CycleGeometry::new::<S, T, N>(
                gpu.max_shared_per_block,
                dims,
                radius,
                (tile, halo, sub),
                registers.unwrap_or(true),
            )?)
        }
        _ => None,
    };
    let rows = geometry.as_ref().and_then(|g| g.register_rows).map(|rows| ("HIER_ROWS", rows));
    let (module, jit) = load_module::<S, T, N>(&gpu, mode, dims, rows.as_slice())?;
    let function = |kind: &str| {
        module.load_function(&format!("{}_{kind}", meta.name)).map_err(driver_error("finding a kernel in the module"))
    };
    if let Some(geometry) = geometry {
        let kernel = function(geometry.kernel())?;
        return cycles::<S, T, N>(&mut job, u, &gpu, device, &layout, &geometry, &kernel, jit);
    }
    let (pass, measure) = (function(if tiled { "tiled" } else { "plain" })?, function("plain_measure")?);
    // The plain, measuring and tiled kernels share one launch shape.
    let cfg = plain_config::<S, N>(&gpu, dims, radius, plain_shape::<N>()?)?;
    typed::<S, T, N>(&mut job, u, &gpu, device, &layout, dims, (&pass, cfg), (&measure, cfg), jit)
}

/// Compiles (or takes from the cache) and loads the stencil's module for a grid seen as
/// `dims`, with the plain launch shape and the kernels' own `defines` (the register
/// kernel's rows, the wavefront's tile).
pub(super) fn load_module<S: Stencil<N>, T: Real, const N: usize>(
    gpu: &Gpu,
    mode: Mode,
    dims: [usize; 3],
    defines: &[(&str, usize)],
) -> Result<(std::sync::Arc<cudarc::driver::CudaModule>, JitTime)> {
    let (plain_block, march) = plain_shape::<N>()?;
    // 32-bit index arithmetic is measurably faster; it is exact below 2³¹ points.
    let index = if dims.iter().product::<usize>() < i32::MAX as usize { "int" } else { "long long" };
    let mut options = CompileOptions::new::<T>(mode, gpu.arch.clone())
        .define("INDEX", index)
        .define("BLOCK_X", plain_block.0)
        .define("BLOCK_Y", plain_block.1)
        .define("MARCH", march);
    for &(name, value) in defines {
        options = options.define(name, value);
    }
    let jit_started = Instant::now();
    let compiled = cache::get(S::META.name, S::CUDA_SOURCE, &options, gpu.driver_version)?;
    let origin = compiled.origin;
    let module = gpu
        .ctx
        .load_module(cudarc::nvrtc::Ptx::from_src(compiled.ptx.0))
        .map_err(driver_error("loading the compiled module"))?;
    Ok((module, JitTime { time: jit_started.elapsed(), origin }))
}

/// The launch of the plain (and measuring, and tiled) kernel of launch shape `shape` (from
/// [`plain_shape`]) over the interior of a grid seen as `dims` with `radius`, checked against
/// the device's limits.
pub(super) fn plain_config<S: Stencil<N>, const N: usize>(
    gpu: &Gpu,
    dims: [usize; 3],
    radius: [usize; 3],
    (plain_block, march): ((u32, u32), u32),
) -> Result<LaunchConfig> {
    let interior: [usize; 3] = std::array::from_fn(|a| dims[a] - 2 * radius[a]);
    let (x, y, z) =
        (blocks(interior[2], plain_block.0), blocks(interior[1], plain_block.1), blocks(interior[0], march));
    let limit = gpu.max_grid_yz as usize;
    if x > i32::MAX as usize || y > limit || z > limit {
        return Err(Error::Launch {
            kernel: format!("{}_plain", S::META.name),
            reason: format!("a grid of {x}×{y}×{z} blocks exceeds the device's limits (y and z ≤ {limit})"),
        });
    }
    let threads = plain_block.0 * plain_block.1;
    if threads > gpu.max_threads_per_block {
        return Err(Error::Launch {
            kernel: format!("{}_plain", S::META.name),
            reason: format!("{threads} threads per block, the device allows {}", gpu.max_threads_per_block),
        });
    }
    Ok(LaunchConfig {
        grid_dim: (x as u32, y as u32, z as u32),
        block_dim: (plain_block.0, plain_block.1, 1),
        shared_mem_bytes: 0,
    })
}

#[allow(clippy::too_many_arguments)]
fn typed<S: Stencil<N>, T: Real, const N: usize>(
    job: &mut Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    gpu: &Gpu,
    device: usize,
    layout: &Layout<N>,
    dims: [usize; 3],
    (pass, pass_cfg): (&cudarc::driver::CudaFunction, LaunchConfig),
    (measure, measure_cfg): (&cudarc::driver::CudaFunction, LaunchConfig),
    jit: JitTime,
) -> Result<Report> {
    let blocks_measured =
        (measure_cfg.grid_dim.0 as usize) * (measure_cfg.grid_dim.1 as usize) * (measure_cfg.grid_dim.2 as usize);
    let mut state = DeviceState::upload(gpu, job, u, dims, blocks_measured)?;
    let stop = job.stop;
    let points = layout.interior_points();
    let mut monitor = Monitor::for_job(job, points);
    let mut iteration = monitor.first_iteration();
    let stop_reason = loop {
        if stop.max_iterations.is_some_and(|max| iteration >= max) {
            break StopReason::IterationLimit;
        }
        iteration += 1;
        let check = stop.checks_at(iteration);
        let (function, cfg) = if check { (measure, measure_cfg) } else { (pass, pass_cfg) };
        if check {
            state.reset_check(gpu)?;
        }
        let mut launch = gpu.stream.launch_builder(function);
        state.push_args(&mut launch, &[], check);
        // SAFETY: the arguments match the kernel's signature, which is generated from the
        // same stencil (output, fields in order, the three extents as long long, the scalars
        // in order, and for the measuring kernel the two block arrays and the index); the
        // launch shape is the one the kernel was compiled for, and every index it computes
        // lies inside the buffers (the interior of an n0 × n1 × n2 grid).
        unsafe { launch.launch(cfg) }.map_err(driver_error("launching a kernel"))?;
        state.swap();
        if !check {
            continue;
        }
        let measured = state.read_check(gpu, u, iteration, stop)?;
        if monitor
            .check_and_save::<S, T, N>(iteration, Some(measured), (u, iteration), |u| state.copy_to_host(gpu, u))?
        {
            break StopReason::Converged;
        }
    };
    state.finish(gpu, job, u, device, monitor, (iteration, stop_reason), jit)
}

/// Environment variable choosing the hierarchical kernel: `shared` forces the shared-memory
/// kernel where the register kernel would run (for comparisons); unset or `auto`, the register
/// kernel runs wherever it applies.
pub const HIER_KERNEL_VAR: &str = "STENCIL_CUDA_HIER";

/// Registers per thread that the register kernel may spend on its columns (32-bit words).
const REGISTER_COLUMN_WORDS: usize = 128;

/// The launch of the hierarchical kernel for one grid and configuration.
pub(super) struct CycleGeometry {
    dims: [usize; 3],
    /// `Some(rows)` when the register kernel `_hier_rows` runs (1-D and 2-D, a working region
    /// at most one warp wide whose columns fit the register budget), with the region's rows.
    register_rows: Option<usize>,
    /// Tile edge and halo per axis, clipped to the grid (same semantics, fits an `int`).
    pub(super) tile: i32,
    pub(super) halo: [i32; 3],
    /// The planes of the grid's axis 0 whose cores the tiles cover, `[lo0, hi0)`: the
    /// interior unless [`cores_of_axis_0`](Self::cores_of_axis_0) says otherwise.
    cores0: (i32, i32),
    /// The kernel's axis that is the grid's axis 0 (2 for a 1-D grid, seen as 1 × 1 × n).
    axis0: usize,
    sub: usize,
    pub(super) shared_bytes: usize,
    pub(super) config: LaunchConfig,
}

impl CycleGeometry {
    /// `registers`: whether the register kernel may run where it applies.
    pub(super) fn new<S: Stencil<N>, T: Real, const N: usize>(
        max_shared: usize,
        dims: [usize; 3],
        radius: [usize; 3],
        (tile, halo, sub): (usize, usize, usize),
        registers: bool,
    ) -> Result<Self> {
        let kernel = format!("{}_hier", S::META.name);
        let fail = |reason: String| Error::Launch { kernel: kernel.clone(), reason };
        let interior: [usize; 3] = std::array::from_fn(|a| dims[a] - 2 * radius[a]);
        let largest = dims.iter().copied().max().unwrap_or(1);
        // A tile or halo beyond the grid is clipped to it by the kernel anyway.
        let tile = tile.min(largest);
        let halo: [usize; 3] = std::array::from_fn(|a| if radius[a] == 0 { 0 } else { halo.min(largest) });
        let extent: [usize; 3] = std::array::from_fn(|a| (tile.min(interior[a]) + 2 * halo[a]).min(dims[a]));
        let tiles: [usize; 3] = std::array::from_fn(|a| interior[a].div_ceil(tile));
        if tiles[2] > i32::MAX as usize || tiles[1] > 65535 || tiles[0] > 65535 {
            return Err(fail(format!("{}×{}×{} tiles exceed the device's grid limits", tiles[0], tiles[1], tiles[2])));
        }
        // The read-only fields read off the point: staged in shared memory, or held in registers.
        let staged = S::META
            .fields
            .iter()
            .enumerate()
            .filter(|&(i, f)| i != S::META.unknown && f.offsets.iter().any(|o| o.iter().any(|&d| d != 0)))
            .count();
        // The register kernel holds the unknown and the staged fields (those read off the point).
        let held = 1 + staged;
        let register_rows = (N <= 2
            && registers
            && extent[2] <= 32
            && extent[0] * held * T::BYTES.div_ceil(4) <= REGISTER_COLUMN_WORDS)
            .then_some(extent[0]);
        let axis0 = if N == 1 { 2 } else { 0 };
        if dims[axis0] > i32::MAX as usize {
            return Err(fail(format!("{} planes do not fit the kernel's `int`", dims[axis0])));
        }
        let cores0 = (radius[axis0] as i32, (dims[axis0] - radius[axis0]) as i32);
        if register_rows.is_some() {
            return Ok(Self {
                dims,
                register_rows,
                tile: tile as i32,
                halo: halo.map(|h| h as i32),
                cores0,
                axis0,
                sub,
                shared_bytes: 0,
                config: LaunchConfig {
                    grid_dim: (tiles[2] as u32, 1, tiles[0] as u32),
                    block_dim: (32, 1, 1),
                    shared_mem_bytes: 0,
                },
            });
        }
        let volume: usize = extent.iter().product();
        // The unknown twice (double buffer), and once every staged field.
        let shared_bytes = (2 + staged) * volume * T::BYTES;
        if shared_bytes > max_shared {
            return Err(fail(format!(
                "a working region of {}×{}×{} points (tile {tile} and halo {} on each side) needs {shared_bytes} B of \
                 shared memory ({} arrays of {} B), and the device allows {max_shared} B per block: use a smaller \
                 tile or halo",
                extent[0],
                extent[1],
                extent[2],
                halo.iter().max().unwrap_or(&0),
                2 + staged,
                volume * T::BYTES
            )));
        }
        // Threads: powers of two up to 512, the fast axis first, at least one warp (the
        // kernel's reduction works on whole warps).
        let bx = extent[2].next_power_of_two().min(64);
        let by = extent[1].next_power_of_two().min(512 / bx);
        let bz = extent[0].next_power_of_two().min(512 / (bx * by));
        let bx = bx * (32 / (bx * by * bz)).max(1);
        let config = LaunchConfig {
            grid_dim: (tiles[2] as u32, tiles[1] as u32, tiles[0] as u32),
            block_dim: (bx as u32, by as u32, bz as u32),
            shared_mem_bytes: shared_bytes as u32,
        };
        Ok(Self {
            dims,
            register_rows: None,
            tile: tile as i32,
            halo: halo.map(|h| h as i32),
            cores0,
            axis0,
            sub,
            shared_bytes,
            config,
        })
    }

    /// The same launch for the tiles whose cores cover `planes` of axis 0 only (a part of
    /// the interior starting at a tile's edge), the working regions still clipped at the grid.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(super) fn cores_of_axis_0(mut self, planes: Range<usize>) -> Self {
        debug_assert!(planes.start >= self.cores0.0 as usize && planes.end <= self.cores0.1 as usize);
        self.cores0 = (planes.start as i32, planes.end as i32);
        let tiles = planes.len().div_ceil(self.tile as usize) as u32;
        match self.axis0 {
            0 => self.config.grid_dim.2 = tiles,
            _ => self.config.grid_dim.0 = tiles,
        }
        self
    }

    /// The kernel's integer arguments after the scalars: tile, the cores of axis 0, the halos,
    /// the subiterations and the measure flag (`measure − 1` is the measured subiteration; 0:
    /// none).
    pub(super) fn ints(&self, sub: usize, measure: usize) -> [i32; 8] {
        let [h0, h1, h2] = self.halo;
        [self.tile, self.cores0.0, self.cores0.1, h0, h1, h2, sub as i32, measure as i32]
    }

    /// Lets `kernel` (this geometry's) use the dynamic shared memory it needs, beyond the
    /// default limit.
    pub(super) fn allow_shared_memory(&self, kernel: &cudarc::driver::CudaFunction) -> Result<()> {
        kernel
            .set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                self.shared_bytes as i32,
            )
            .map_err(driver_error("raising the kernel's shared-memory limit"))
    }

    /// The kernel's name after the stencil's.
    pub(super) fn kernel(&self) -> &'static str {
        if self.register_rows.is_some() { "hier_rows" } else { "hier" }
    }

    /// Blocks launched: one per tile.
    pub(super) fn blocks(&self) -> usize {
        let (x, y, z) = self.config.grid_dim;
        x as usize * y as usize * z as usize
    }
}

/// Runs a Jacobi stencil by cycles of hierarchical subiterations, with the stopping rules
/// of the CPU twin (`cpu::run_cycles`): a checked cycle measures ρ of the iterate it starts
/// from and looks for non-finite values in the iterate it produces.
#[allow(clippy::too_many_arguments)]
fn cycles<S: Stencil<N>, T: Real, const N: usize>(
    job: &mut Job<'_, '_, S, T, N>,
    u: &mut Grid<T, N>,
    gpu: &Gpu,
    device: usize,
    layout: &Layout<N>,
    geometry: &CycleGeometry,
    kernel: &cudarc::driver::CudaFunction,
    jit: JitTime,
) -> Result<Report> {
    let meta = S::META;
    geometry.allow_shared_memory(kernel)?;
    let mut state = DeviceState::upload(gpu, job, u, geometry.dims, geometry.blocks())?;
    let stop = job.stop;
    let points = layout.interior_points();
    let mut monitor = Monitor::for_job(job, points);
    let mut iteration = monitor.first_iteration();
    let exact = job.schedule.is_exact_blocking(meta);
    // An exact cycle may end anywhere (it is plain iterations): at most what the kernel's
    // `int` counts. An inexact one is the schedule's definition, so it must fit as it is.
    let sub = if exact { geometry.sub.min(i32::MAX as usize) } else { geometry.sub };
    let stop_reason = loop {
        let Some(plan) = stop.next_cycle(iteration, sub, exact) else { break StopReason::IterationLimit };
        if plan.len > i32::MAX as usize {
            return Err(Error::Launch {
                kernel: format!("{}_{}", meta.name, geometry.kernel()),
                reason: format!("an inexact cycle of {} subiterations does not fit the kernel's `int`", plan.len),
            });
        }
        iteration += plan.len;
        let check = plan.measure_step.is_some();
        if check {
            state.reset_check(gpu)?;
        }
        // The kernel measures in subiteration `measure − 1` (0: it does not measure).
        let ints = geometry.ints(plan.len, plan.measure_step.map_or(0, |step| step + 1));
        let mut launch = gpu.stream.launch_builder(kernel);
        // The block arrays are passed on every cycle: the kernel's signature has them.
        state.push_args(&mut launch, &ints, true);
        // SAFETY: the arguments match `<name>_hier`'s signature, generated from the same
        // stencil (output, fields in order with the current iterate for the unknown, the
        // extents, the scalars, then tile, the cores of axis 0 (the interior), halos,
        // subiterations, the measure flag, the two
        // block arrays with one entry per launched block, and the index). The dynamic shared
        // memory is what the kernel indexes (checked against the device's limit, which the
        // attribute above opts into), and every global index it computes lies in the grid.
        unsafe { launch.launch(geometry.config) }.map_err(driver_error("launching a kernel"))?;
        state.swap();
        if !check {
            continue;
        }
        let measured = state.read_check(gpu, u, iteration, stop)?;
        if monitor
            .check_and_save::<S, T, N>(plan.record_at, Some(measured), (u, iteration), |u| state.copy_to_host(gpu, u))?
        {
            break StopReason::Converged;
        }
    };
    state.finish(gpu, job, u, device, monitor, (iteration, stop_reason), jit)
}

/// A kernel's scalar parameters, kept alive for the launches that reference them.
pub(super) struct Scalars<T> {
    values: Vec<ScalarValue<T>>,
}

impl<T: Real> Scalars<T> {
    pub(super) fn new(values: Vec<ScalarValue<T>>) -> Self {
        Self { values }
    }

    /// Pushes the scalars in declaration order, as the generated kernels take them.
    pub(super) fn push<'a>(&'a self, launch: &mut cudarc::driver::LaunchArgs<'a>) {
        for v in &self.values {
            match v {
                ScalarValue::Real(x) => launch.arg(x),
                ScalarValue::I32(x) => launch.arg(x),
            };
        }
    }
}

/// A run's state on the device: the read-only fields, the two iterates (swapped after every
/// launch), the scalar arguments, and the measuring kernels' outputs.
pub(super) struct DeviceState<T: Real> {
    pub(super) inputs: Vec<Option<CudaSlice<T>>>,
    pub(super) current: CudaSlice<T>,
    next: CudaSlice<T>,
    pub(super) scalars: Scalars<T>,
    extents: [i64; 3],
    block_max: CudaSlice<f64>,
    block_sum: CudaSlice<f64>,
    first_bad: CudaSlice<u64>,
}

impl<T: Real> DeviceState<T> {
    /// Uploads the fields and the iterate (twice) of a grid seen as `dims`, with room for
    /// `blocks` per-block results.
    pub(super) fn upload<S: Stencil<N>, const N: usize>(
        gpu: &Gpu,
        job: &Job<'_, '_, S, T, N>,
        u: &Grid<T, N>,
        dims: [usize; 3],
        blocks: usize,
    ) -> Result<Self> {
        let stream = &gpu.stream;
        let upload = |data: &[T]| gpu.upload(stream, data, "a grid");
        let allocate = || gpu.alloc_zeros::<f64>(stream, blocks, "the residual's per-block results");
        Ok(Self {
            inputs: job.inputs.iter().map(|f| f.map(upload).transpose()).collect::<Result<_>>()?,
            current: upload(u.as_slice())?,
            next: upload(u.as_slice())?,
            scalars: Scalars::new(S::param_values(&job.params)),
            extents: dims.map(|n| n as i64),
            block_max: allocate()?,
            block_sum: allocate()?,
            first_bad: gpu.upload(stream, &[u64::MAX], "the non-finite flag")?,
        })
    }

    /// Clears the non-finite flag before a measuring launch.
    pub(super) fn reset_check(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.stream.memcpy_htod(&[u64::MAX], &mut self.first_bad).map_err(driver_error("resetting the check"))
    }

    /// The arguments in the order of every generated kernel: the output (next iterate), the
    /// fields in declaration order with the current iterate for the unknown, the three
    /// extents, the scalars, then `extra` (the kernel's own ints), then, with `check`, the
    /// two block arrays and the non-finite flag.
    pub(super) fn push_args<'a>(&'a mut self, launch: &mut LaunchArgs<'a>, extra: &'a [i32], check: bool) {
        launch.arg(&mut self.next);
        for input in &self.inputs {
            launch.arg(input.as_ref().unwrap_or(&self.current));
        }
        let [n0, n1, n2] = &self.extents;
        launch.arg(n0).arg(n1).arg(n2);
        self.scalars.push(launch);
        for value in extra {
            launch.arg(value);
        }
        if check {
            launch.arg(&mut self.block_max).arg(&mut self.block_sum).arg(&mut self.first_bad);
        }
    }

    /// After a launch: the iterate it wrote becomes the current one.
    fn swap(&mut self) {
        std::mem::swap(&mut self.current, &mut self.next);
    }

    /// After a measuring launch: [`Error::NonFinite`] (with `u` holding the whole iterate) if
    /// a non-finite value was flagged, else (L∞, L2) of the per-block partial results.
    pub(super) fn read_check<const N: usize>(
        &self,
        gpu: &Gpu,
        u: &mut Grid<T, N>,
        iteration: usize,
        stop: StopRule,
    ) -> Result<(f64, f64)> {
        let stream = &gpu.stream;
        let bad = stream.clone_dtoh(&self.first_bad).map_err(driver_error("reading the check"))?[0];
        if bad != u64::MAX {
            stream.memcpy_dtoh(&self.current, u.as_mut_slice()).map_err(driver_error("copying to the host"))?;
            return Err(stop.non_finite(u, bad as usize, iteration));
        }
        let maxes = stream.clone_dtoh(&self.block_max).map_err(driver_error("reading the residual"))?;
        let sums = stream.clone_dtoh(&self.block_sum).map_err(driver_error("reading the residual"))?;
        Ok((maxes.iter().copied().fold(0.0, f64::max), sums.iter().sum::<f64>().sqrt()))
    }

    /// Copies the current iterate into `u` (for a checkpoint).
    pub(super) fn copy_to_host<const N: usize>(&self, gpu: &Gpu, u: &mut Grid<T, N>) -> Result<()> {
        gpu.stream.memcpy_dtoh(&self.current, u.as_mut_slice()).map_err(driver_error("copying to the host"))?;
        gpu.stream.synchronize().map_err(driver_error("waiting for the device"))
    }

    /// Ends the run: waits for the device, stops the clock, copies the current iterate into
    /// `u`, and reports.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish<S: Stencil<N>, const N: usize>(
        self,
        gpu: &Gpu,
        job: &Job<'_, '_, S, T, N>,
        u: &mut Grid<T, N>,
        device: usize,
        monitor: Monitor<'_, '_>,
        ended: (usize, StopReason),
        jit: JitTime,
    ) -> Result<Report> {
        gpu.stream.synchronize().map_err(driver_error("waiting for the device"))?;
        let wall = monitor.elapsed();
        gpu.stream.memcpy_dtoh(&self.current, u.as_mut_slice()).map_err(driver_error("copying to the host"))?;
        Ok(monitor.into_report::<S, T, N>(
            format!("cuda device {device} ({})", gpu.name),
            job.schedule,
            u.shape(),
            ended,
            wall,
            Some((jit.time, jit.origin)),
        ))
    }
}
