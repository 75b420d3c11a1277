//! The kernel contract: what `stencil!` tells the runtime about every CUDA kernel it
//! generates, beside the translation unit.
//!
//! The macro is the only place that writes a kernel's signature, its compile-time
//! definitions and the facts its launch geometry follows (which fields it stages, the
//! reads' reach, the axes it sees); it emits them here, from the same description it writes
//! the CUDA from. The runtime launches each kernel through one launcher that pushes the
//! arguments in the order and with the sizes this manifest gives, and computes launch
//! geometry only from these facts (the formulas are the methods below), so a change in the
//! emitter cannot leave a launch that reads out of bounds while everything compiles. A GPU
//! test compares every loaded kernel's parameters with its entry here.

/// The kinds of kernels a stencil's translation unit holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKind {
    /// One Jacobi pass: one thread per column of the two fast axes, marching the slowest.
    Plain,
    /// The plain pass that also measures S(u) − u per block and flags non-finite values.
    PlainMeasure,
    /// The plain pass with each plane's tile staged in shared memory.
    Tiled,
    /// Hierarchical subiterations of tiles' working regions in shared memory.
    Hierarchical,
    /// Hierarchical subiterations in the registers of one warp (1-D and 2-D).
    HierarchicalRows,
    /// An exact cycle by streaming temporal blocking: tiles of the fast axes marching the
    /// slowest, one subiteration per plane of lag.
    Streaming,
    /// The wavefront of a sweep stencil: pencils marching in place.
    Wavefront,
    /// The wavefront of a 2-D sweep on the antidiagonal: a lane per line, each a step behind
    /// the lane of the line before it.
    Lanes,
    /// The boundary fill: slices of one axis copied within the unknown.
    Boundary,
}

/// The C type of a kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamType {
    /// `real` (the element type, `float` or `double`).
    Real,
    /// `real*`.
    RealPtr,
    /// `const real*`.
    ConstRealPtr,
    /// `int`.
    Int,
    /// `long long`.
    LongLong,
    /// `double*`.
    DoublePtr,
    /// `unsigned long long*`.
    U64Ptr,
    /// `const int*`.
    ConstIntPtr,
    /// `int*`.
    IntPtr,
    /// `unsigned int*`.
    UIntPtr,
}

impl ParamType {
    /// Bytes the parameter takes for an element type of `real_bytes` bytes.
    pub const fn size(self, real_bytes: usize) -> usize {
        match self {
            ParamType::Real => real_bytes,
            ParamType::Int => 4,
            _ => 8,
        }
    }
}

/// What one kernel parameter carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamRole {
    /// The buffer the next iterate is written to (of the first unknown, for a system).
    Output,
    /// The buffer the next iterate of a system's unknown `k` (k ≥ 1, declaration order) is
    /// written to.
    OutputOf(usize),
    /// Field `i` of the stencil (declaration order); at the unknown's place, the current
    /// iterate (a wavefront updates it in place).
    Field(usize),
    /// The view's extent on the kernel's axis `k` (0 slowest).
    Extent(usize),
    /// Scalar parameter `i` (declaration order).
    Scalar(usize),
    /// The hierarchical core tile's edge.
    Tile,
    /// First plane of the kernel's axis 0 whose cores the tiles cover.
    CoresStart,
    /// One past the last such plane.
    CoresEnd,
    /// The hierarchical halo on the kernel's axis `k`.
    Halo(usize),
    /// How the working regions meet the grid's edges on the kernel's axis `k`: 1 wraps (a
    /// periodic axis), 2 mirrors the low side's outer layer, 4 the high side's (Neumann).
    Edges(usize),
    /// Subiterations of the cycle.
    Subiterations,
    /// The measured subiteration plus one (0: none is measured).
    Measure,
    /// Per block: max |S(u) − u|.
    BlockMax,
    /// Per block: Σ (S(u) − u)².
    BlockSum,
    /// The smallest flat index whose new value is not finite (all ones: none).
    FirstBad,
    /// A wavefront's pencils in the order blocks take them: (p₁, p₂ + n·pencils₂) pairs, n the
    /// sweep of the launch the pencil belongs to.
    PencilOrder,
    /// A wavefront's ready flag per pencil and sweep of the launch (zeroed before it).
    PencilProgress,
    /// A wavefront's ticket counter (zeroed before the launch).
    Ticket,
    /// A wavefront's pencils on the first lane axis.
    PencilsOnFirstAxis,
    /// A wavefront's pencils on the last lane axis.
    PencilsOnLastAxis,
    /// A wavefront's shift of its pencils on lane axis `k` (0 or 1): pencil p covers
    /// z in `[p·tile − origin, …)`.
    PencilOrigin(usize),
    /// The boundary fill's low outer slices on kernel axis `k`: `[0, low)`.
    FillLow(usize),
    /// The slice a low outer slice x of axis `k` reads: `low_from + low_step · x`.
    FillLowFrom(usize),
    /// See [`FillLowFrom`](Self::FillLowFrom) (±1).
    FillLowStep(usize),
    /// The boundary fill's high outer slices on kernel axis `k`: `[high, n)`.
    FillHigh(usize),
    /// The slice a high outer slice x of axis `k` reads: `high_from + high_step · x`.
    FillHighFrom(usize),
    /// See [`FillHighFrom`](Self::FillHighFrom) (±1).
    FillHighStep(usize),
}

/// One parameter of a generated kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelParam {
    /// Its name in the CUDA source.
    pub name: &'static str,
    /// What it carries.
    pub role: ParamRole,
    /// Its C type.
    pub ty: ParamType,
}

/// One generated kernel: its symbol, parameters in order, and the compile-time definitions
/// it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelSpec {
    /// What it computes.
    pub kind: KernelKind,
    /// The `extern "C"` symbol.
    pub symbol: &'static str,
    /// The macro that compiles the kernel in (`1`, its default) or leaves it out (`0`).
    pub guard: &'static str,
    /// Its parameters, in order.
    pub params: &'static [KernelParam],
    /// The `-D` definitions it reads (beyond `REAL` and `INDEX`), each with its default.
    pub defines: &'static [(&'static str, &'static str)],
}

/// The facts the hierarchical kernels' geometry follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HierarchicalFacts {
    /// The unknowns, each staged twice in shared memory (one for a single stencil).
    pub unknowns: usize,
    /// Read-only fields staged in shared memory beside the unknowns' two buffers (those
    /// read off the point), declaration order.
    pub staged: &'static [usize],
    /// Fields the register kernel keeps per lane: the unknown, then the staged ones.
    pub registers: &'static [usize],
    /// The widest working region (points along the contiguous axis) the register kernel
    /// takes: one warp.
    pub register_width: usize,
}

impl HierarchicalFacts {
    /// Dynamic shared memory of the shared-memory kernel for a working region of `volume`
    /// points of `elem` bytes: every unknown twice and every staged field once.
    pub const fn shared_bytes(&self, volume: usize, elem: usize) -> usize {
        self.arrays() * volume * elem
    }

    /// The working regions the shared-memory kernel stages: every unknown twice and every
    /// staged field once.
    pub const fn arrays(&self) -> usize {
        2 * self.unknowns + self.staged.len()
    }
}

/// The facts the streaming kernel's geometry follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamingFacts {
    /// Planes of each level's ring in shared memory, the levels of a step in descending order.
    pub ring: usize,
    /// The same with the levels in ascending order (`STREAM_ASCENDING`), where the stencil
    /// allows that order.
    pub ascending_ring: Option<usize>,
    /// The same in a kernel built with the mirror rule (some working region may have a
    /// mirrored (Neumann) side): every read of an unknown then goes through shared memory.
    pub mirrored_ring: usize,
}

impl StreamingFacts {
    /// Planes of each level's ring in a kernel built with or without the mirror rule, its
    /// levels in ascending order or not (a kernel with the mirror rule runs them descending).
    pub const fn ring(&self, mirrors: bool, ascending: bool) -> usize {
        match (mirrors, self.ascending_ring) {
            (true, _) => self.mirrored_ring,
            (false, Some(ring)) if ascending => ring,
            _ => self.ring,
        }
    }

    /// Dynamic shared memory for `levels` levels of `unknowns` unknowns, rings of `ring`
    /// plane slots of `slot` elements (a plane and its guards) of `elem` bytes.
    pub const fn shared_bytes(levels: usize, unknowns: usize, ring: usize, slot: usize, elem: usize) -> usize {
        levels * unknowns * ring * slot * elem
    }
}

/// Threads of a wavefront block beyond its lanes' warps: two storer warps and four loader
/// warps (the kernel's `WF_STORERS + WF_LOADERS`).
pub const WAVEFRONT_HELPERS: usize = 192;

/// Bytes of static shared memory of a wavefront block per stage of its window (three
/// mbarriers), beside its windows.
pub const WAVEFRONT_STAGE_BYTES: usize = 24;

/// The facts a sweep stencil's wavefront kernel's geometry follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WavefrontFacts {
    /// Fields staged in shared-memory windows: the unknown first, then the read-only fields
    /// the point function reads at an offset, then those it reads only at the point.
    pub windows: &'static [usize],
    /// How many of the last `windows` hold fields read only at the point: their windows
    /// have no halo, a plane of them being the pencil's lanes alone.
    pub point_windows: usize,
    /// The reads' radius in the skewed coordinates z, on the stencil's own axes padded to
    /// three: the windows' halo.
    pub z_radius: [usize; 3],
    /// Lane axes of a pencil (1 for 2-D, 2 for 3-D, 0 for 1-D): axes 1 and 2 of the
    /// stencil's own axes, each `tile` lanes wide.
    pub lane_axes: usize,
    /// Elements of shared memory per block of the lane kernel (its windows, the ring of
    /// the line before and fast mode's parts) with 1 and with 2 lines a lane, or 0 for a
    /// sweep without one.
    pub lane_reals: [usize; 2],
}

impl WavefrontFacts {
    /// Lanes of a pencil per lane axis for a tile of `tile` (1 on a missing axis).
    pub const fn lanes(&self, tile: usize) -> [usize; 2] {
        [if self.lane_axes >= 1 { tile } else { 1 }, if self.lane_axes >= 2 { tile } else { 1 }]
    }

    /// Planes a window needs for chunks of `chunk` planes and tiles of `tile`: the chunk
    /// being loaded, the lag between the first and the last lane, and the reads' reach on
    /// both sides, rounded up to whole chunks (the kernel's `WF_WIN` must be a multiple of
    /// the chunk above the first three).
    pub const fn window_planes(&self, tile: usize, chunk: usize) -> usize {
        let [a, b] = self.lanes(tile);
        (chunk + (a - 1) + (b - 1) + 2 * self.z_radius[0] + 1).div_ceil(chunk) * chunk
    }

    /// The kernel's block for `lanes`: the lanes' warps (a thread per lane, the last lane
    /// axis fastest), then [`WAVEFRONT_HELPERS`] threads that store and load the windows.
    pub const fn block(&self, lanes: [usize; 2]) -> [u32; 3] {
        [((lanes[0] * lanes[1]).div_ceil(32) * 32 + WAVEFRONT_HELPERS) as u32, 1, 1]
    }

    /// Bytes of shared memory of one plane of every window, for tiles of `tile` and
    /// elements of `elem` bytes.
    pub const fn plane_bytes(&self, tile: usize, elem: usize) -> usize {
        let [a, b] = self.lanes(tile);
        let halo = self.windows.len() - self.point_windows;
        (halo * self.halo_plane_reals(tile, elem) + self.point_windows * a * b) * elem
    }

    /// Elements of one plane of a window with a halo (the kernel's `WF_PLANE`): rows of the
    /// lanes and the halo on the last lane axis, one row per lane and halo cell on the other.
    /// Where a row's lanes are whole 16-byte copies of [`group_copy_values`], the rows are
    /// padded so that each row's lanes start on 16 bytes, and the plane is whole copies; the
    /// pad after a row's last halo cell is the next row's pad before its first.
    pub const fn halo_plane_reals(&self, tile: usize, elem: usize) -> usize {
        let [a, b] = self.lanes(tile);
        let [r1, r2] = [self.z_radius[1], self.z_radius[2]];
        let rows = a + 2 * r1;
        let v = group_copy_values(elem);
        if v < 2 || !(b * elem).is_multiple_of(16) {
            return rows * (b + 2 * r2);
        }
        let pitch = (b + 2 * r2).div_ceil(v) * v;
        let lead = r2.div_ceil(v) * v;
        ((rows - 1) * pitch + lead + b + r2).div_ceil(v) * v
    }
}

/// Values of `elem` bytes the pencil kernel's loaders copy at once, 16 bytes, into the rows of
/// a window with a halo (the kernel's `WF_V`), or 1 where they copy a value at a time: only
/// values of 8 bytes and more are copied so, as rows of 4-byte values padded to 16 bytes cost
/// more than the fewer copies save.
pub const fn group_copy_values(elem: usize) -> usize {
    if elem >= 8 && 16usize.is_multiple_of(elem) { 16 / elem } else { 1 }
}

/// Everything the runtime needs to know about a stencil's generated kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelManifest {
    /// Every kernel of the translation unit.
    pub kernels: &'static [KernelSpec],
    /// The kernels see every grid as 3-D: the kernel axis of each of the grid's axes (a 2-D
    /// grid's axes are kernel axes 0 and 2; a 1-D grid is axis 2). Missing axes have one
    /// point.
    pub axes: &'static [usize],
    /// The radius on the kernel's three axes (0 on a missing axis).
    pub radius: [usize; 3],
    /// The plain, measuring and tiled kernels' default launch shape: `BLOCK_X`, `BLOCK_Y`
    /// and `MARCH` (planes a thread marches).
    pub plain_block: [u32; 3],
    /// The hierarchical kernels' facts.
    pub hierarchical: HierarchicalFacts,
    /// The streaming kernel's facts.
    pub streaming: StreamingFacts,
    /// The wavefront kernel's facts, for a sweep stencil.
    pub wavefront: Option<WavefrontFacts>,
}

impl KernelManifest {
    /// A manifest without kernels: that of an item `stencil!` rejected, whose code never runs.
    pub const NONE: KernelManifest = KernelManifest {
        kernels: &[],
        axes: &[],
        radius: [0; 3],
        plain_block: [1, 1, 1],
        hierarchical: HierarchicalFacts { unknowns: 1, staged: &[], registers: &[], register_width: 32 },
        streaming: StreamingFacts { ring: 1, ascending_ring: None, mirrored_ring: 1 },
        wavefront: None,
    };

    /// The kernel of kind `kind`, if the translation unit has one.
    pub fn kernel(&self, kind: KernelKind) -> Option<&'static KernelSpec> {
        self.kernels.iter().find(|k| k.kind == kind)
    }

    /// A grid's shape (or any per-axis values) as the kernels see it: on three axes, `fill`
    /// on the missing ones.
    pub fn view(&self, values: &[usize], fill: usize) -> [usize; 3] {
        let mut view = [fill; 3];
        for (axis, &k) in self.axes.iter().enumerate() {
            view[k] = values[axis];
        }
        view
    }
}
