//! Every kernel's signature, described once: its symbol, its parameters (C name, role, C
//! type) and the `-D` definitions it reads with their defaults. The `extern "C"` lines, the
//! `#ifndef` defaults and the kernel manifest (`Name::KERNELS`, the runtime's
//! `KernelManifest`) are all written from this description, so the runtime's launcher and
//! the translation unit cannot disagree on a parameter's place, type or size.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::common::c_name;
use crate::ir::{Stencil, Ty};
use crate::writer::Writer;

/// The widest working region the register kernel takes: one warp, its launch bound.
pub(super) const REGISTER_WIDTH: usize = 32;

/// The kinds of kernels, as the runtime's `KernelKind` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Plain,
    PlainMeasure,
    Tiled,
    Hierarchical,
    HierarchicalRows,
    Streaming,
    Wavefront,
    Lanes,
    Boundary,
}

impl Kind {
    fn suffix(self) -> &'static str {
        match self {
            Kind::Plain => "plain",
            Kind::PlainMeasure => "plain_measure",
            Kind::Tiled => "tiled",
            Kind::Hierarchical => "hier",
            Kind::HierarchicalRows => "hier_rows",
            Kind::Streaming => "stream",
            Kind::Wavefront => "wavefront",
            Kind::Lanes => "lanes",
            Kind::Boundary => "boundary",
        }
    }

    /// The macro that compiles the kernel in (1, its default) or leaves it out (0).
    pub fn guard(self) -> &'static str {
        match self {
            Kind::Plain => "KERNEL_PLAIN",
            Kind::PlainMeasure => "KERNEL_PLAIN_MEASURE",
            Kind::Tiled => "KERNEL_TILED",
            Kind::Hierarchical => "KERNEL_HIER",
            Kind::HierarchicalRows => "KERNEL_HIER_ROWS",
            Kind::Streaming => "KERNEL_STREAM",
            Kind::Wavefront => "KERNEL_WAVEFRONT",
            Kind::Lanes => "KERNEL_LANES",
            Kind::Boundary => "KERNEL_BOUNDARY",
        }
    }

    pub fn variant(self) -> &'static str {
        match self {
            Kind::Plain => "Plain",
            Kind::PlainMeasure => "PlainMeasure",
            Kind::Tiled => "Tiled",
            Kind::Hierarchical => "Hierarchical",
            Kind::HierarchicalRows => "HierarchicalRows",
            Kind::Streaming => "Streaming",
            Kind::Wavefront => "Wavefront",
            Kind::Lanes => "Lanes",
            Kind::Boundary => "Boundary",
        }
    }
}

/// What a parameter carries, as the runtime's `ParamRole` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    Output,
    OutputOf(usize),
    Field(usize),
    Extent(usize),
    Scalar(usize),
    Tile,
    CoresStart,
    CoresEnd,
    Halo(usize),
    Edges(usize),
    Subiterations,
    Measure,
    BlockMax,
    BlockSum,
    FirstBad,
    PencilOrder,
    PencilProgress,
    Ticket,
    PencilsOnFirstAxis,
    PencilsOnLastAxis,
    PencilOrigin(usize),
    FillLow(usize),
    FillLowFrom(usize),
    FillLowStep(usize),
    FillHigh(usize),
    FillHighFrom(usize),
    FillHighStep(usize),
}

impl Role {
    pub fn tokens(self, p: &TokenStream) -> TokenStream {
        let unit = |name: &str| {
            let v = format_ident!("{name}");
            quote!(#p::ParamRole::#v)
        };
        match self {
            Role::Output => unit("Output"),
            Role::OutputOf(k) => quote!(#p::ParamRole::OutputOf(#k)),
            Role::Field(i) => quote!(#p::ParamRole::Field(#i)),
            Role::Extent(k) => quote!(#p::ParamRole::Extent(#k)),
            Role::Scalar(i) => quote!(#p::ParamRole::Scalar(#i)),
            Role::Tile => unit("Tile"),
            Role::CoresStart => unit("CoresStart"),
            Role::CoresEnd => unit("CoresEnd"),
            Role::Halo(k) => quote!(#p::ParamRole::Halo(#k)),
            Role::Edges(k) => quote!(#p::ParamRole::Edges(#k)),
            Role::Subiterations => unit("Subiterations"),
            Role::Measure => unit("Measure"),
            Role::BlockMax => unit("BlockMax"),
            Role::BlockSum => unit("BlockSum"),
            Role::FirstBad => unit("FirstBad"),
            Role::PencilOrder => unit("PencilOrder"),
            Role::PencilProgress => unit("PencilProgress"),
            Role::Ticket => unit("Ticket"),
            Role::PencilsOnFirstAxis => unit("PencilsOnFirstAxis"),
            Role::PencilsOnLastAxis => unit("PencilsOnLastAxis"),
            Role::PencilOrigin(k) => quote!(#p::ParamRole::PencilOrigin(#k)),
            Role::FillLow(k) => quote!(#p::ParamRole::FillLow(#k)),
            Role::FillLowFrom(k) => quote!(#p::ParamRole::FillLowFrom(#k)),
            Role::FillLowStep(k) => quote!(#p::ParamRole::FillLowStep(#k)),
            Role::FillHigh(k) => quote!(#p::ParamRole::FillHigh(#k)),
            Role::FillHighFrom(k) => quote!(#p::ParamRole::FillHighFrom(#k)),
            Role::FillHighStep(k) => quote!(#p::ParamRole::FillHighStep(#k)),
        }
    }
}

/// A parameter's C type, as the runtime's `ParamType` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CType {
    Real,
    RealPtr,
    ConstRealPtr,
    Int,
    LongLong,
    DoublePtr,
    U64Ptr,
    ConstIntPtr,
    IntPtr,
    UIntPtr,
}

impl CType {
    /// The pointee of a pointer type, or `None` for a value.
    fn pointee(self) -> Option<&'static str> {
        Some(match self {
            CType::RealPtr => "real",
            CType::ConstRealPtr => "const real",
            CType::DoublePtr => "double",
            CType::U64Ptr => "unsigned long long",
            CType::ConstIntPtr => "const int",
            CType::IntPtr => "int",
            CType::UIntPtr => "unsigned int",
            CType::Real | CType::Int | CType::LongLong => return None,
        })
    }

    fn value(self) -> &'static str {
        match self {
            CType::Real => "real",
            CType::Int => "int",
            _ => "long long",
        }
    }

    pub fn variant(self) -> &'static str {
        match self {
            CType::Real => "Real",
            CType::RealPtr => "RealPtr",
            CType::ConstRealPtr => "ConstRealPtr",
            CType::Int => "Int",
            CType::LongLong => "LongLong",
            CType::DoublePtr => "DoublePtr",
            CType::U64Ptr => "U64Ptr",
            CType::ConstIntPtr => "ConstIntPtr",
            CType::IntPtr => "IntPtr",
            CType::UIntPtr => "UIntPtr",
        }
    }
}

/// One kernel parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Param {
    pub name: String,
    pub role: Role,
    pub ty: CType,
}

impl Param {
    fn new(name: impl Into<String>, role: Role, ty: CType) -> Self {
        Self { name: name.into(), role, ty }
    }

    /// The parameter as the `extern "C"` line declares it.
    fn declaration(&self) -> String {
        match self.ty.pointee() {
            Some(pointee) => format!("{pointee}* __restrict__ {}", self.name),
            None => format!("const {} {}", self.ty.value(), self.name),
        }
    }
}

/// One kernel of the translation unit.
#[derive(Clone, Debug)]
pub(super) struct Signature {
    pub kind: Kind,
    pub symbol: String,
    pub params: Vec<Param>,
    /// The `-D` definitions the kernel reads, each with the default the source gives it.
    pub defines: Vec<(&'static str, String)>,
}

impl Signature {
    /// The kernel's `extern "C"` line, without its opening brace.
    pub fn extern_c(&self) -> String {
        let bounds = match self.kind {
            Kind::HierarchicalRows => format!("__launch_bounds__({REGISTER_WIDTH}, HIER_MIN_BLOCKS) "),
            Kind::Streaming => "__launch_bounds__(STREAM_THREADS) ".into(),
            Kind::Lanes => "__launch_bounds__(224) ".into(),
            _ => String::new(),
        };
        let params: Vec<String> = self.params.iter().map(Param::declaration).collect();
        format!("extern \"C\" __global__ void {bounds}{}({})", self.symbol, params.join(", "))
    }

    /// Opens the kernel's body in `w`.
    pub fn open(&self, w: &mut Writer) {
        w.open(self.extern_c());
    }
}

/// `#ifndef NAME / #define NAME default / #endif` for each definition.
pub(super) fn define_defaults(w: &mut Writer, defines: &[(&'static str, String)]) {
    for (name, default) in defines {
        w.line(format!("#ifndef {name}"));
        w.line(format!("#define {name} {default}"));
        w.line("#endif");
    }
}

/// The plain, measuring and tiled kernels' default launch shape for a stencil of `dim`
/// axes: `BLOCK_X`, `BLOCK_Y` and `MARCH`. In 2-D, wide blocks that march few rows keep
/// the most rows in flight: on an H200 at 8192², 512 × 4 runs `jacobi5` at 95–100 % of the
/// copy probe and the two unknowns of `gray_scott` at 82–86 %, where 128 × 16 ran them at
/// 93–94 % and 60–73 % (`docs/performance.md`).
pub(super) fn plain_block(dim: usize) -> [u32; 3] {
    match dim {
        1 => [256, 1, 1],
        2 => [512, 1, 4],
        _ => [64, 4, 8],
    }
}

pub(super) fn plain_defines(s: &Stencil) -> Vec<(&'static str, String)> {
    let [x, y, march] = plain_block(s.dim);
    vec![("BLOCK_X", x.to_string()), ("BLOCK_Y", y.to_string()), ("MARCH", march.to_string())]
}

/// The definitions of the register kernel.
pub(super) fn rows_defines() -> Vec<(&'static str, String)> {
    vec![("HIER_ROWS", "1".into()), ("HIER_MIN_BLOCKS", "1".into())]
}

/// The definitions of the streaming kernel: the levels its registers and shared memory hold
/// (at least the cycle's subiterations; 0 compiles it empty), the region's columns per
/// thread, its threads per block, the widest region's extents on axes 1 and 2, whether the
/// mirror rule is compiled, and the guard on each side of a plane in shared memory.
pub(super) fn stream_defines() -> Vec<(&'static str, String)> {
    vec![
        ("STREAM_SUB", "0".into()),
        ("STREAM_COLS", "1".into()),
        ("STREAM_THREADS", "1024".into()),
        ("STREAM_W1", "1".into()),
        ("STREAM_W2", "1024".into()),
        ("STREAM_MIRRORS", "0".into()),
        ("STREAM_ASCENDING", "0".into()),
        ("STREAM_ZERO_IN_LOOP", "0".into()),
        ("STREAM_GUARD", "STREAM_GUARD_LEAST".into()),
    ]
}

/// The definitions of the wavefront kernel (`WF_WIN` is set by the runtime from the
/// pencils' geometry; its default only lets the source compile alone).
pub(super) fn wavefront_defines() -> Vec<(&'static str, String)> {
    vec![("WF_TILE", "32".into()), ("WF_CHUNK", "8".into()), ("WF_BATCH", "8".into()), ("WF_WIN", "128".into())]
}

/// The fields (`unknown_mut`: the unknown written in place), the grid's extents and the
/// scalars: what every kernel takes first, after its output.
fn grid_params(s: &Stencil, unknown_mut: bool) -> Vec<Param> {
    let fields = s.fields.iter().enumerate().map(|(i, f)| {
        let ty = if unknown_mut && i == s.unknown { CType::RealPtr } else { CType::ConstRealPtr };
        Param::new(format!("f_{}", c_name(&f.name)), Role::Field(i), ty)
    });
    let extents = (0..3).map(|k| Param::new(format!("n{k}"), Role::Extent(k), CType::LongLong));
    let scalars = s.scalars.iter().enumerate().map(|(i, sc)| {
        let ty = match sc.ty {
            Ty::Int => CType::Int,
            // Parameters are `Real` or `i32`; validation rejects the rest.
            Ty::Real | Ty::Bool => CType::Real,
        };
        Param::new(format!("p_{}", c_name(&sc.name)), Role::Scalar(i), ty)
    });
    fields.chain(extents).chain(scalars).collect()
}

fn checks() -> Vec<Param> {
    vec![
        Param::new("block_max", Role::BlockMax, CType::DoublePtr),
        Param::new("block_sum", Role::BlockSum, CType::DoublePtr),
        Param::new("first_bad", Role::FirstBad, CType::U64Ptr),
    ]
}

fn cycle() -> Vec<Param> {
    let mut params = vec![
        Param::new("tile", Role::Tile, CType::Int),
        Param::new("lo0", Role::CoresStart, CType::Int),
        Param::new("hi0", Role::CoresEnd, CType::Int),
    ];
    params.extend((0..3).map(|k| Param::new(format!("h{k}"), Role::Halo(k), CType::Int)));
    params.push(Param::new("sub", Role::Subiterations, CType::Int));
    params.push(Param::new("measure", Role::Measure, CType::Int));
    params.extend((0..3).map(|k| Param::new(format!("edges{k}"), Role::Edges(k), CType::Int)));
    params.extend(checks());
    params
}

/// The signature of `s`'s kernel of kind `kind`.
pub(super) fn signature(s: &Stencil, kind: Kind) -> Signature {
    // The next iterate of each unknown: `out`, then `out_1`, … for a system's others.
    let outputs: Vec<Param> = (0..s.unknowns.len())
        .map(|k| match k {
            0 => Param::new("out", Role::Output, CType::RealPtr),
            k => Param::new(format!("out_{k}"), Role::OutputOf(k), CType::RealPtr),
        })
        .collect();
    let jacobi = || outputs.clone().into_iter().chain(grid_params(s, false));
    let (params, defines): (Vec<Param>, _) = match kind {
        Kind::Plain => (jacobi().chain(fill_maps()).collect(), [plain_defines(s), vec![("VEC", "1".into())]].concat()),
        Kind::Tiled => (jacobi().collect(), plain_defines(s)),
        Kind::PlainMeasure => (jacobi().chain(checks()).collect(), plain_defines(s)),
        Kind::Hierarchical => (jacobi().chain(cycle()).collect(), Vec::new()),
        Kind::HierarchicalRows => (jacobi().chain(cycle()).collect(), rows_defines()),
        Kind::Streaming => (jacobi().chain(cycle()).collect(), stream_defines()),
        Kind::Wavefront => {
            let pencils = [
                Param::new("order", Role::PencilOrder, CType::ConstIntPtr),
                Param::new("progress", Role::PencilProgress, CType::IntPtr),
                Param::new("ticket", Role::Ticket, CType::UIntPtr),
                Param::new("pencils1", Role::PencilsOnFirstAxis, CType::Int),
                Param::new("pencils2", Role::PencilsOnLastAxis, CType::Int),
                Param::new("origin1", Role::PencilOrigin(0), CType::Int),
                Param::new("origin2", Role::PencilOrigin(1), CType::Int),
            ];
            (grid_params(s, true).into_iter().chain(pencils).collect(), wavefront_defines())
        }
        Kind::Lanes => {
            let flags = [
                Param::new("handoff", Role::PencilProgress, CType::IntPtr),
                Param::new("ticket", Role::Ticket, CType::UIntPtr),
            ];
            (grid_params(s, true).into_iter().chain(flags).collect(), Vec::new())
        }
        Kind::Boundary => {
            let unknown =
                Param::new(format!("f_{}", c_name(&s.fields[s.unknown].name)), Role::Field(s.unknown), CType::RealPtr);
            let extents = (0..3).map(|k| Param::new(format!("n{k}"), Role::Extent(k), CType::LongLong));
            (std::iter::once(unknown).chain(extents).chain(fill_maps()).collect(), Vec::new())
        }
    };
    Signature { kind, symbol: format!("{}_{}", s.name, kind.suffix()), params, defines }
}

/// The boundary fill's maps, per kernel axis: the low outer slices [0, low) read slice
/// low_from + low_step·x, the high ones [high, n) slice high_from + high_step·x.
fn fill_maps() -> impl Iterator<Item = Param> {
    (0..3).flat_map(|k| {
        [
            Param::new(format!("low{k}"), Role::FillLow(k), CType::LongLong),
            Param::new(format!("low_from{k}"), Role::FillLowFrom(k), CType::LongLong),
            Param::new(format!("low_step{k}"), Role::FillLowStep(k), CType::LongLong),
            Param::new(format!("high{k}"), Role::FillHigh(k), CType::LongLong),
            Param::new(format!("high_from{k}"), Role::FillHighFrom(k), CType::LongLong),
            Param::new(format!("high_step{k}"), Role::FillHighStep(k), CType::LongLong),
        ]
    })
}

/// The kernels of `s`'s translation unit, in the order it holds them.
pub(super) fn kernels(s: &Stencil) -> Vec<Kind> {
    let mut kinds = vec![Kind::Plain, Kind::PlainMeasure, Kind::Tiled, Kind::Hierarchical, Kind::Streaming];
    // The register kernel keeps one unknown's columns in registers; a system's cycles run
    // in shared memory.
    if s.dim <= 2 && !s.is_system() {
        kinds.push(Kind::HierarchicalRows);
    }
    if s.sweep.is_some() {
        kinds.push(Kind::Wavefront);
    }
    if super::lane_plan::LanePlan::new(s).is_some() {
        kinds.push(Kind::Lanes);
    }
    kinds.push(Kind::Boundary);
    kinds
}
