//! The one place the generated kernels are launched: every argument is pushed in the order,
//! and with the type, that the kernel's manifest entry gives (`kernel.rs`), and every buffer
//! is checked to hold what the launch's extents and blocks reach.

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaModule, CudaStream, CudaView, CudaViewMut, DevicePtr, LaunchConfig, PushKernelArg,
};

use super::device::driver_error;
use crate::kernel::{KernelKind, KernelManifest, KernelSpec, ParamRole, ParamType};
use crate::plan::fill::{FillCopy, ShellMap};
use crate::plan::launch::{CYCLE_INTS, Shape, fill_shape};
use crate::{Error, Real, Result, ScalarValue};

/// A generated kernel, loaded, with its manifest entry.
#[derive(Clone, Debug)]
pub(crate) struct Kernel {
    function: CudaFunction,
    spec: &'static KernelSpec,
    /// Points each thread computes along the contiguous axis (the plain pass's `VEC`; 1 for
    /// every other kernel).
    vector: u32,
}

impl Kernel {
    /// What it computes.
    pub fn kind(&self) -> KernelKind {
        self.spec.kind
    }

    /// The kernel of kind `kind` of `manifest`, from `module` (compiled from its stencil's
    /// translation unit).
    pub fn load(module: &Arc<CudaModule>, manifest: &'static KernelManifest, kind: KernelKind) -> Result<Self> {
        let spec = manifest.kernel(kind).ok_or_else(|| Error::Launch {
            kernel: format!("{kind:?}"),
            reason: "the stencil's translation unit has no such kernel".into(),
        })?;
        let function = module.load_function(spec.symbol).map_err(driver_error("finding a kernel in the module"))?;
        Ok(Self { function, spec, vector: 1 })
    }

    /// The kernel compiled with `vector` points per thread (its module's `VEC`).
    pub fn with_vector(self, vector: u32) -> Self {
        Self { vector, ..self }
    }

    /// Points each thread computes along the contiguous axis.
    pub fn vector(&self) -> u32 {
        self.vector
    }

    /// Lets the kernel use `bytes` of dynamic shared memory, beyond the default limit.
    pub fn allow_shared(&self, bytes: usize) -> Result<()> {
        self.function
            .set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
            .map_err(driver_error("raising the kernel's shared-memory limit"))
    }

    /// How many blocks of `threads` threads and `shared` bytes of dynamic shared memory a
    /// multiprocessor holds at once, as the driver computes it for this kernel.
    pub fn blocks_per_multiprocessor(&self, threads: u32, shared: usize) -> Result<u32> {
        self.function
            .occupancy_max_active_blocks_per_multiprocessor(threads, shared, None)
            .map_err(driver_error("asking the kernel's occupancy"))
    }

    /// The loaded function's parameters as the driver sees them: (offset, size) of each.
    pub fn loaded_params(&self) -> Result<Vec<(usize, usize)>> {
        let mut params = Vec::new();
        for index in 0.. {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: the function handle is alive (held by `self`) and both pointers are
            // valid for writes; an index past the last parameter returns an error code.
            let result = unsafe {
                cudarc::driver::sys::cuFuncGetParamInfo(self.function.cu_function(), index, &mut offset, &mut size)
            };
            if result != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
                break;
            }
            params.push((offset, size));
        }
        Ok(params)
    }
}

/// The buffers a measuring launch writes: per block max |·| and Σ(·)², and the first
/// non-finite index.
pub(crate) type Checks<'a> = (CudaViewMut<'a, f64>, CudaViewMut<'a, f64>, CudaViewMut<'a, u64>);

/// A wavefront's pencil order, ready flags, ticket counter, pencils on the two lane axes and
/// their origins on them.
pub(crate) type PencilArgs<'a> = (CudaView<'a, i32>, CudaViewMut<'a, i32>, CudaViewMut<'a, u32>, [i32; 2], [i32; 2]);

/// The values of one launch, by the role the manifest gives them.
pub(crate) struct Args<'a, T: Real> {
    /// The next iterate (of the first unknown).
    pub output: Option<CudaViewMut<'a, T>>,
    /// The next iterates of a system's further unknowns, in declaration order.
    pub more_outputs: Vec<CudaViewMut<'a, T>>,
    /// Per field in declaration order (the current iterate at the unknown's place).
    pub fields: Vec<Option<CudaView<'a, T>>>,
    /// The unknown, updated in place (a wavefront).
    pub in_place: Option<CudaViewMut<'a, T>>,
    /// The view's extents on the kernel's three axes.
    pub extents: [i64; 3],
    pub scalars: &'a [ScalarValue<T>],
    /// A cycle's tile, cores' first and last plane, halos, subiterations and measure flag.
    pub cycle: [i32; CYCLE_INTS],
    pub checks: Option<Checks<'a>>,
    pub pencils: Option<PencilArgs<'a>>,
    /// A boundary fill's maps per kernel axis (`ShellMap::values`); by default every side
    /// keeps its values.
    pub fill: [[i64; 6]; 3],
}

impl<'a, T: Real> Args<'a, T> {
    /// The arguments of a kernel over a view of `extents` whose fields are `fields`.
    pub fn new(extents: [i64; 3], fields: Vec<Option<CudaView<'a, T>>>, scalars: &'a [ScalarValue<T>]) -> Self {
        Self {
            output: None,
            more_outputs: Vec::new(),
            fields,
            in_place: None,
            extents,
            scalars,
            cycle: [0; CYCLE_INTS],
            checks: None,
            pencils: None,
            fill: extents.map(|n| ShellMap::keeping(n as usize).values()),
        }
    }

    /// Sets the next iterates of every unknown, in declaration order.
    pub fn set_outputs(&mut self, outputs: Vec<CudaViewMut<'a, T>>) {
        let mut outputs = outputs.into_iter();
        self.output = outputs.next();
        self.more_outputs = outputs.collect();
    }
}

/// The C type a role's value has on the Rust side, for the manifest's to be checked against.
fn pushed_type<T: Real>(role: ParamRole, declared: ParamType, scalars: &[ScalarValue<T>]) -> Option<ParamType> {
    Some(match role {
        ParamRole::Output | ParamRole::OutputOf(_) => ParamType::RealPtr,
        // The wavefront's unknown is written in place; every other field is read only.
        ParamRole::Field(_) if declared == ParamType::RealPtr => ParamType::RealPtr,
        ParamRole::Field(_) => ParamType::ConstRealPtr,
        ParamRole::Extent(_) => ParamType::LongLong,
        ParamRole::Scalar(i) => match scalars.get(i)? {
            ScalarValue::Real(_) => ParamType::Real,
            ScalarValue::I32(_) => ParamType::Int,
        },
        ParamRole::BlockMax | ParamRole::BlockSum => ParamType::DoublePtr,
        ParamRole::FirstBad => ParamType::U64Ptr,
        ParamRole::PencilOrder => ParamType::ConstIntPtr,
        ParamRole::PencilProgress => ParamType::IntPtr,
        ParamRole::Ticket => ParamType::UIntPtr,
        ParamRole::FillLow(_)
        | ParamRole::FillLowFrom(_)
        | ParamRole::FillLowStep(_)
        | ParamRole::FillHigh(_)
        | ParamRole::FillHighFrom(_)
        | ParamRole::FillHighStep(_) => ParamType::LongLong,
        _ => ParamType::Int,
    })
}

/// That every buffer of `args` holds what a launch of `shape` over its extents reaches.
fn check_sizes<T: Real>(spec: &KernelSpec, args: &Args<'_, T>, shape: &Shape) -> Result<()> {
    let fail = |what: &str, len: usize, needed: usize| Error::Launch {
        kernel: spec.symbol.into(),
        reason: format!("{what} holds {len} elements, and the launch reaches {needed}"),
    };
    let points = args.extents.iter().map(|&n| n.max(0) as usize).product::<usize>();
    let views = args.fields.iter().flatten().map(|v| v.len());
    let outputs = args.output.iter().chain(&args.more_outputs).chain(&args.in_place).map(|v| v.len());
    if let Some(len) = views.chain(outputs).find(|&len| len < points) {
        return Err(fail("a grid buffer", len, points));
    }
    // The measuring kernels write one entry per block; a cycle only when it measures.
    let measures = spec.kind == KernelKind::PlainMeasure || args.cycle[7] > 0;
    if let Some((max, sum, bad)) = args.checks.as_ref().filter(|_| measures) {
        let blocks = shape.blocks();
        if let Some(len) = [max.len(), sum.len()].into_iter().find(|&len| len < blocks) {
            return Err(fail("a block array", len, blocks));
        }
        if bad.is_empty() {
            return Err(fail("the non-finite flag", 0, 1));
        }
    }
    if let Some((order, progress, ticket, ..)) = args.pencils.as_ref() {
        // One flag per block; the pencil kernel reads a pair of the order per block too.
        let blocks = shape.blocks();
        let ordered = spec.params.iter().any(|p| p.role == ParamRole::PencilOrder);
        let order_needed = if ordered { 2 * blocks } else { 0 };
        if order.len() < order_needed || progress.len() < blocks || ticket.is_empty() {
            return Err(fail("the blocks' order or flags", order.len().min(progress.len()), order_needed.max(blocks)));
        }
    }
    Ok(())
}

/// That every grid buffer of `args` starts on a vector of the kernel's width (the whole
/// planes its windows start at keep the alignment of the allocation; this is the check).
fn check_alignment<T: Real>(stream: &CudaStream, kernel: &Kernel, args: &Args<'_, T>) -> Result<()> {
    if kernel.vector == 1 {
        return Ok(());
    }
    let bytes = kernel.vector as u64 * T::BYTES as u64;
    let views = args.fields.iter().flatten().map(|v| v.device_ptr(stream).0);
    let outputs = args.output.iter().chain(&args.more_outputs).map(|v| v.device_ptr(stream).0);
    match views.chain(outputs).find(|&at| at % bytes != 0) {
        Some(at) => Err(Error::Launch {
            kernel: kernel.spec.symbol.into(),
            reason: format!("a grid buffer at {at:#x} does not start on a vector of {bytes} bytes"),
        }),
        None => Ok(()),
    }
}

/// Launches `kernel` on `stream` with `args` in the shape `shape`.
///
/// **Errors**: [`Error::Launch`] when the launch does not give a value the kernel's manifest
/// asks for, or one of another type, or a buffer smaller than the launch reaches or not
/// aligned to the kernel's vectors.
pub(crate) fn launch<T: Real>(stream: &CudaStream, kernel: &Kernel, args: Args<'_, T>, shape: Shape) -> Result<()> {
    let spec = kernel.spec;
    check_sizes(spec, &args, &shape)?;
    check_alignment(stream, kernel, &args)?;
    let Args { mut output, mut more_outputs, fields, mut in_place, extents, scalars, cycle, checks, pencils, fill } =
        args;
    let mut more_outputs: Vec<Option<&mut CudaViewMut<'_, T>>> = more_outputs.iter_mut().map(Some).collect();
    let (mut block_max, mut block_sum, mut first_bad) = match checks {
        Some((max, sum, bad)) => (Some(max), Some(sum), Some(bad)),
        None => (None, None, None),
    };
    let (order, mut progress, mut ticket, [pencils1, pencils2], origin) = match pencils {
        Some((order, progress, ticket, count, origin)) => (Some(order), Some(progress), Some(ticket), count, origin),
        None => (None, None, None, [0, 0], [0, 0]),
    };
    let (mut output, mut in_place) = (output.as_mut(), in_place.as_mut());
    let (mut block_max, mut block_sum, mut first_bad) = (block_max.as_mut(), block_sum.as_mut(), first_bad.as_mut());
    let (mut progress, mut ticket) = (progress.as_mut(), ticket.as_mut());
    let mut builder = stream.launch_builder(&kernel.function);
    for param in spec.params {
        let fail = |reason: String| Error::Launch { kernel: spec.symbol.into(), reason };
        let missing = || fail(format!("the launch gives no value for `{}`", param.name));
        if pushed_type(param.role, param.ty, scalars) != Some(param.ty) {
            return Err(fail(format!("`{}` is a {:?}, and the launch gives another type", param.name, param.ty)));
        }
        match param.role {
            ParamRole::Output => builder.arg(output.take().ok_or_else(missing)?),
            ParamRole::OutputOf(k) => {
                builder.arg(more_outputs.get_mut(k.wrapping_sub(1)).and_then(Option::take).ok_or_else(missing)?)
            }
            ParamRole::Field(_) if param.ty == ParamType::RealPtr => builder.arg(in_place.take().ok_or_else(missing)?),
            ParamRole::Field(i) => builder.arg(fields.get(i).and_then(Option::as_ref).ok_or_else(missing)?),
            ParamRole::Extent(k) => builder.arg(&extents[k]),
            ParamRole::Scalar(i) => match &scalars[i] {
                ScalarValue::Real(x) => builder.arg(x),
                ScalarValue::I32(n) => builder.arg(n),
            },
            ParamRole::Tile => builder.arg(&cycle[0]),
            ParamRole::CoresStart => builder.arg(&cycle[1]),
            ParamRole::CoresEnd => builder.arg(&cycle[2]),
            ParamRole::Halo(k) => builder.arg(&cycle[3 + k.min(2)]),
            ParamRole::Subiterations => builder.arg(&cycle[6]),
            ParamRole::Measure => builder.arg(&cycle[7]),
            ParamRole::Edges(k) => builder.arg(&cycle[8 + k.min(2)]),
            ParamRole::BlockMax => builder.arg(block_max.take().ok_or_else(missing)?),
            ParamRole::BlockSum => builder.arg(block_sum.take().ok_or_else(missing)?),
            ParamRole::FirstBad => builder.arg(first_bad.take().ok_or_else(missing)?),
            ParamRole::PencilOrder => builder.arg(order.as_ref().ok_or_else(missing)?),
            ParamRole::PencilProgress => builder.arg(progress.take().ok_or_else(missing)?),
            ParamRole::Ticket => builder.arg(ticket.take().ok_or_else(missing)?),
            ParamRole::PencilsOnFirstAxis => builder.arg(&pencils1),
            ParamRole::PencilsOnLastAxis => builder.arg(&pencils2),
            ParamRole::PencilOrigin(k) => builder.arg(&origin[k.min(1)]),
            ParamRole::FillLow(k) => builder.arg(&fill[k.min(2)][0]),
            ParamRole::FillLowFrom(k) => builder.arg(&fill[k.min(2)][1]),
            ParamRole::FillLowStep(k) => builder.arg(&fill[k.min(2)][2]),
            ParamRole::FillHigh(k) => builder.arg(&fill[k.min(2)][3]),
            ParamRole::FillHighFrom(k) => builder.arg(&fill[k.min(2)][4]),
            ParamRole::FillHighStep(k) => builder.arg(&fill[k.min(2)][5]),
        };
    }
    let config =
        LaunchConfig { grid_dim: shape.grid.into(), block_dim: shape.block.into(), shared_mem_bytes: shape.shared };
    // SAFETY: the arguments are pushed in the order of the kernel's parameters as the macro
    // generated them together with its source (`KERNELS`, checked against the loaded
    // function by a GPU test), each of the type its parameter declares (checked above);
    // every buffer holds the points of the extents passed and the entries of the blocks
    // launched (`check_sizes`), which bound every index the kernel computes; the dynamic
    // shared memory is what the shape's geometry computed for this kernel, within the
    // limit it was allowed.
    unsafe { builder.launch(config) }.map(drop).map_err(driver_error("launching a kernel"))
}

/// Launches the boundary fill `copies` (`plan::fill`) with `kernel`, the stencil's boundary
/// kernel, on `grid`, a view the kernels see as `dims`, on `stream`: one launch over the outer
/// layers, each point read from where the copies, composed, take its value (`ShellMap`).
pub(crate) fn fill<T: Real>(
    stream: &CudaStream,
    kernel: &Kernel,
    manifest: &KernelManifest,
    mut grid: CudaViewMut<'_, T>,
    dims: [usize; 3],
    copies: &[FillCopy],
) -> Result<()> {
    let maps = shell_maps(kernel, manifest, dims, copies)?;
    let points = ShellMap::points(&maps, dims);
    if points == 0 {
        return Ok(());
    }
    let mut args = Args::new(dims.map(|n| n as i64), Vec::new(), &[]);
    args.in_place = Some(grid.slice_mut(0..grid.len()));
    args.fill = maps.map(|m| m.values());
    launch(stream, kernel, args, fill_shape(manifest, points)?)
}

/// The boundary fill's `copies` of a grid seen as `dims`, as one map per kernel axis, for
/// `kernel` (named in the error of copies that are no outer layer).
pub(crate) fn shell_maps(
    kernel: &Kernel,
    manifest: &KernelManifest,
    dims: [usize; 3],
    copies: &[FillCopy],
) -> Result<[ShellMap; 3]> {
    let mut maps = dims.map(ShellMap::keeping);
    for copy in copies {
        let axis = manifest.axes[copy.axis];
        maps[axis]
            .add(copy, dims[axis])
            .map_err(|reason| Error::Launch { kernel: kernel.spec.symbol.into(), reason })?;
    }
    Ok(maps)
}
