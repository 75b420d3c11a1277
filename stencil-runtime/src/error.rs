//! The runtime's one error type.

use std::path::PathBuf;

/// Everything that can go wrong when a stencil is set up or run.
///
/// Bad input is reported here and never by a panic. A run that fails validation leaves the
/// user's grid untouched (a run resuming from a checkpoint holds the checkpoint's iterate
/// from the start); [`Error::NonFinite`] and [`Error::StoppedMidPass`] say what the grid
/// holds when a run stops midway.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A field's shape differs from the unknown's.
    #[error(
        "field `{field}` has shape {found:?} but the unknown has shape {expected:?}; every field of a stencil must have the same shape"
    )]
    ShapeMismatch {
        /// The field whose shape is wrong.
        field: String,
        /// The unknown's shape.
        expected: Vec<usize>,
        /// The field's shape.
        found: Vec<usize>,
    },
    /// The grids given to a run are not one per unknown of the stencil.
    #[error("stencil `{stencil}` {reason}")]
    WrongUnknowns {
        /// The stencil's name.
        stencil: &'static str,
        /// What the stencil updates, and what the run was given.
        reason: String,
    },
    /// An axis is too short to hold an interior point inside the boundary layer.
    #[error(
        "axis {axis} has {size} points, but stencil `{stencil}` reads {radius} points away on it, so it needs at least {min} (2·radius + 1)"
    )]
    GridTooSmall {
        /// The stencil's name.
        stencil: &'static str,
        /// The axis (0 = slowest).
        axis: usize,
        /// The grid's size on that axis.
        size: usize,
        /// The stencil's radius on that axis.
        radius: usize,
        /// The smallest usable size.
        min: usize,
    },
    /// A shape with a zero-length axis or more points than memory can index.
    #[error("invalid shape {shape:?}: {reason}")]
    InvalidShape {
        /// The shape given.
        shape: Vec<usize>,
        /// Why it is invalid.
        reason: String,
    },
    /// Memory could not be allocated: the host's, page-locked, or a device's. Nothing was
    /// changed by the call that failed.
    #[error("out of memory: {what} needs {}, which {memory} cannot provide", crate::memory::human_bytes(*bytes))]
    OutOfMemory {
        /// What was being allocated.
        what: String,
        /// Its size in bytes.
        bytes: usize,
        /// Where.
        memory: crate::MemoryKind,
    },
    /// The iterate holds NaN or ±∞.
    #[error(
        "the iterate became non-finite ({value}) at index {index:?}, found at iteration {iteration} (values are checked every {check_every} iterations); the grid holds that iterate"
    )]
    NonFinite {
        /// The iteration at which the check found it.
        iteration: usize,
        /// The first non-finite point in memory order.
        index: Vec<usize>,
        /// The value there.
        value: f64,
        /// The check period in force.
        check_every: usize,
    },
    /// The stopping rules could never end the run.
    #[error("the run could never stop: {reason}")]
    NeverStops {
        /// What is wrong with the stopping rules.
        reason: String,
    },
    /// A tolerance or check period that makes no sense.
    #[error("invalid stopping rule: {reason}")]
    InvalidStoppingRule {
        /// What is wrong.
        reason: String,
    },
    /// A field of the stencil was not given.
    #[error("stencil `{stencil}` reads field `{field}`, which was not given; add `.input(\"{field}\", &grid)`")]
    MissingField {
        /// The stencil's name.
        stencil: &'static str,
        /// The missing field.
        field: String,
    },
    /// A field was given that the stencil does not have.
    #[error("stencil `{stencil}` has no field `{field}`; its fields are {known}")]
    UnknownField {
        /// The stencil's name.
        stencil: &'static str,
        /// The name given.
        field: String,
        /// The stencil's fields, listed.
        known: String,
    },
    /// The unknown was passed as an input: it is the grid given to `run`.
    #[error("`{field}` is the unknown of stencil `{stencil}`: pass it to `run(&mut grid)`, not to `input`")]
    UnknownGivenAsInput {
        /// The stencil's name.
        stencil: &'static str,
        /// The unknown's name.
        field: String,
    },
    /// The same field or parameter was given twice.
    #[error("`{name}` was given twice")]
    Duplicate {
        /// The repeated name.
        name: String,
    },
    /// Scalar parameters given in two ways at once, so that one value would be lost.
    #[error("{what} given twice, {how}; give every value once")]
    ParametersGivenTwice {
        /// The parameter, or "the parameters".
        what: String,
        /// The two ways.
        how: String,
    },
    /// A scalar parameter was not given.
    #[error(
        "stencil `{stencil}` needs parameter `{name}`, which was not given; add `.param(\"{name}\", value)` or `.params(…)`"
    )]
    MissingParameter {
        /// The stencil's name.
        stencil: &'static str,
        /// The missing parameter.
        name: String,
    },
    /// A parameter was given that the stencil does not have.
    #[error("stencil `{stencil}` has no parameter `{name}`; its parameters are {known}")]
    UnknownParameter {
        /// The stencil's name.
        stencil: &'static str,
        /// The name given.
        name: String,
        /// The stencil's parameters, listed.
        known: String,
    },
    /// A parameter value that its type cannot hold.
    #[error("parameter `{name}` of stencil `{stencil}`: {reason}")]
    InvalidParameter {
        /// The stencil's name.
        stencil: &'static str,
        /// The parameter.
        name: String,
        /// Why the value is rejected.
        reason: String,
    },
    /// A schedule that does not fit the stencil, grid or backend.
    #[error("schedule {schedule} cannot run stencil `{stencil}`: {reason}")]
    InvalidSchedule {
        /// The schedule, printed.
        schedule: String,
        /// The stencil's name.
        stencil: &'static str,
        /// Why.
        reason: String,
    },
    /// An observer that could never be called: a period of 0 iterations.
    #[error("an observer is called every `every` iterations, at least 1; it was given 0")]
    InvalidObserver,
    /// Boundary conditions that do not fit the stencil or grid.
    #[error("the boundary conditions of axis {axis} cannot hold for stencil `{stencil}`: {reason}")]
    InvalidBoundary {
        /// The stencil's name.
        stencil: &'static str,
        /// The axis (0 = slowest).
        axis: usize,
        /// Why.
        reason: String,
    },
    /// A grid of the wrong number of axes (reading a file or converting an array).
    #[error("expected a {expected}-dimensional array, found {found} dimensions")]
    RankMismatch {
        /// Axes expected.
        expected: usize,
        /// Axes found.
        found: usize,
    },
    /// Writing a PNG of a slice that does not exist.
    #[error("invalid slice: {reason}")]
    InvalidSlice {
        /// Why.
        reason: String,
    },
    /// No GPU can be used.
    #[error("no usable GPU: {reason}")]
    NoGpu {
        /// Why.
        reason: String,
    },
    /// The CUDA driver reported an error.
    #[error("CUDA driver error while {what}: {message}")]
    Cuda {
        /// What was being done.
        what: String,
        /// The driver's error.
        message: String,
    },
    /// The out-of-core schedule's buffers do not fit its device-memory limit.
    #[error(
        "the out-of-core schedule needs at least {needed} B of device memory ({reason}), and its limit is {limit} B: raise `device_memory`, lower `height`, or use a card with more memory"
    )]
    DeviceMemory {
        /// Bytes the smallest configuration needs.
        needed: usize,
        /// The limit in bytes.
        limit: usize,
        /// What the smallest configuration holds.
        reason: String,
    },
    /// A launch that the device cannot run.
    #[error("cannot launch `{kernel}`: {reason}")]
    Launch {
        /// The kernel.
        kernel: String,
        /// Why.
        reason: String,
    },
    /// The NVRTC library could not be loaded.
    #[error(
        "the NVRTC library (libnvrtc.so) was not found on the loader path: install the CUDA toolkit, or the `nvidia-cuda-nvrtc` wheel, and add its `lib` folder to LD_LIBRARY_PATH"
    )]
    NvrtcUnavailable,
    /// NVRTC rejected a translation unit.
    #[error("NVRTC could not compile stencil `{stencil}` (options: {}):\n{log}\nsource:\n{source_numbered}", options.join(" "))]
    Nvrtc {
        /// The stencil's name.
        stencil: &'static str,
        /// The options passed.
        options: Vec<String>,
        /// NVRTC's log.
        log: String,
        /// The translation unit with line numbers.
        source_numbered: String,
    },
    /// Reading a `.npy` file failed.
    #[error("cannot read `{path}`: {source}")]
    ReadNpy {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: ndarray_npy::ReadNpyError,
    },
    /// Writing a `.npy` file failed.
    #[error("cannot write `{path}`: {source}")]
    WriteNpy {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: ndarray_npy::WriteNpyError,
    },
    /// Opening a file failed.
    #[error("cannot open `{path}`: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A checkpoint file cannot be read, or does not belong to this run.
    #[error("cannot resume from checkpoint `{path}`: {reason}")]
    ReadCheckpoint {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A checkpoint path where no checkpoint can be written, found before the run starts.
    #[error("checkpoints cannot be written to `{path}`: {reason}; nothing was run")]
    CheckpointUnwritable {
        /// The path given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Writing a checkpoint failed; the previous checkpoint, if any, is still in place.
    #[error("cannot write checkpoint `{path}`: {source}")]
    WriteCheckpoint {
        /// The partial file being written.
        path: PathBuf,
        /// The cause.
        #[source]
        source: ndarray_npy::WriteNpzError,
    },
    /// A checkpoint interval of 0 iterations.
    #[error("a checkpoint every 0 iterations cannot be written; use 1 or more")]
    InvalidCheckpoint,
    /// A run stopped by an error after it had written to the grid: says what the grid holds
    /// and where the last checkpoint is.
    #[error(
        "the run stopped after writing to the grid, which holds {}{}; cause: {source}",
        holds.map_or("values that are not one iterate (a copy from the device failed midway)".into(), |i| format!("iterate {i}")),
        checkpoint.as_ref().map(|(p, i)| format!("; the last checkpoint, `{}`, holds iterate {i}", p.display())).unwrap_or_default()
    )]
    Interrupted {
        /// The iterate the grid holds, or `None` when it holds no one iterate.
        holds: Option<usize>,
        /// The last checkpoint written by this run or resumed from, and its iteration.
        checkpoint: Option<(PathBuf, usize)>,
        /// What stopped the run.
        source: Box<Error>,
    },
    /// An out-of-core pass failed after writing some slabs back: the grid is not one
    /// iterate. Its planes below `written_to` (along the slowest axis) hold iterate
    /// `pass_end`, the others iterate `pass_start`.
    #[error(
        "the out-of-core pass from iteration {pass_start} to {pass_end} stopped after writing back planes up to {written_to} of {planes}: the grid is not one iterate (planes below {written_to} hold iterate {pass_end}, the rest iterate {pass_start}){}; cause: {source}",
        checkpoint.as_ref().map(|(p, i)| format!("; the last checkpoint, `{}`, holds iterate {i}", p.display())).unwrap_or_default()
    )]
    StoppedMidPass {
        /// The iterate the grid held when the pass began.
        pass_start: usize,
        /// The iterate the pass was computing.
        pass_end: usize,
        /// Planes `[0, written_to)` of the slowest axis were written back (boundary planes
        /// included; they never change).
        written_to: usize,
        /// Planes along the slowest axis.
        planes: usize,
        /// The last checkpoint written by this run or resumed from, and its iteration.
        checkpoint: Option<(PathBuf, usize)>,
        /// What stopped the pass.
        source: Box<Error>,
    },
    /// Encoding a PNG failed.
    #[error("cannot write image `{path}`: {source}")]
    Image {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: image::ImageError,
    },
    /// A grid cannot be cut among the ranks as asked.
    #[error("cannot decompose the grid: {reason}")]
    InvalidDecomposition {
        /// Why.
        reason: String,
    },
    /// The ranks of a distributed run were given different problems. Every rank returns
    /// this error (none waits for the others).
    #[error("the ranks disagree on {what}: {detail}; every rank must run the same problem")]
    RanksDisagree {
        /// What differs (the stencil, the shape, the parameters, …).
        what: String,
        /// Which ranks differ.
        detail: String,
    },
    /// Another rank of a distributed run could not start; every other rank returns this
    /// error (the failing rank returns its own).
    #[error("rank {rank} could not start the distributed run: {message}")]
    RankFailed {
        /// The first rank that failed.
        rank: usize,
        /// Its error, as it printed.
        message: String,
    },
    /// The MPI library could not do what was asked.
    #[error("MPI: {reason}")]
    Mpi {
        /// What failed.
        reason: String,
    },
    /// NCCL, which moves ghost planes between GPU ranks, could not be used or failed.
    #[error("NCCL failed while {what}: {reason}")]
    Nccl {
        /// What was being done.
        what: String,
        /// Why it failed.
        reason: String,
    },
}

impl Error {
    /// The failure of the test hook `Solver::fail_after_slabs`.
    pub(crate) fn injected() -> Self {
        Error::Cuda { what: "running a slab".into(), message: "failure injected for testing".into() }
    }
}

/// `Result` with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
