//! The checked, typed model of a stencil that every emitter reads.

use proc_macro2::{Ident, Span};
use syn::ext::IdentExt;
use syn::{Attribute, Visibility};

pub use crate::ast::{BinOp, UnOp};

/// The largest |offset| accepted on any axis. Every schedule and kernel handles any radius up
/// to it (the tiled kernel stages in shared memory only what fits); the bound keeps the
/// compile-time search for a sweep's wavefront short, since it grows as the sixth power of
/// the radius for diagonal reads in 3-D (`docs/dsl.md`, *Reading fields*).
pub const MAX_RADIUS: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Real,
    Int,
    Bool,
}

impl Ty {
    pub fn name(self) -> &'static str {
        match self {
            Ty::Real => "Real",
            Ty::Int => "i32",
            Ty::Bool => "bool",
        }
    }
}

pub struct Stencil {
    pub docs: Vec<Attribute>,
    pub vis: Visibility,
    /// The name after `fn`.
    pub name: Ident,
    pub dim: usize,
    pub fields: Vec<Field>,
    /// The first unknown: the one of a single-unknown stencil.
    pub unknown: usize,
    /// Every unknown (a `mut` field), in declaration order: the order of the body's values.
    pub unknowns: Vec<usize>,
    pub scalars: Vec<Scalar>,
    /// Distinct (field, offset) reads in order of first appearance; index = slot.
    pub reads: Vec<Read>,
    pub radius: Vec<usize>,
    pub sweep: Option<SweepPlan>,
    pub locals: Vec<Local>,
    pub body: Body,
}

/// The stencil's body: its bindings, then one value per unknown.
pub struct Body {
    /// (local index, value).
    pub lets: Vec<(usize, Expr)>,
    pub values: Vec<Expr>,
}

pub struct Field {
    pub name: Ident,
}

pub struct Scalar {
    pub name: Ident,
    pub ty: Ty,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    pub field: usize,
    pub offset: Vec<i32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepPlan {
    pub ascending: Vec<bool>,
    pub hyperplane: Vec<u32>,
    pub skew: Vec<u32>,
}

pub struct Local {
    pub name: Ident,
    pub ty: Ty,
}

pub struct Block {
    /// (local index, value).
    pub lets: Vec<(usize, Expr)>,
    pub value: Box<Expr>,
}

pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
    pub span: Span,
}

pub enum ExprKind {
    Real(f64),
    Int(i32),
    Bool(bool),
    Scalar(usize),
    Local(usize),
    Read(usize),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    If(Box<Expr>, Block, Block),
    Method(Method, Box<Expr>, Vec<Expr>),
    IntToReal(Box<Expr>),
    /// A block with `let` bindings used as a value.
    Block(Block),
}

/// The methods a stencil may call; each has a Rust and a CUDA spelling with the same
/// rounding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Abs,
    Sqrt,
    Exp,
    Ln,
    Sin,
    Cos,
    Tanh,
    Powi,
    Min,
    Max,
    MulAdd,
}

impl Method {
    pub const ALL: [Method; 11] = [
        Method::Abs,
        Method::Sqrt,
        Method::Exp,
        Method::Ln,
        Method::Sin,
        Method::Cos,
        Method::Tanh,
        Method::Powi,
        Method::Min,
        Method::Max,
        Method::MulAdd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::Abs => "abs",
            Method::Sqrt => "sqrt",
            Method::Exp => "exp",
            Method::Ln => "ln",
            Method::Sin => "sin",
            Method::Cos => "cos",
            Method::Tanh => "tanh",
            Method::Powi => "powi",
            Method::Min => "min",
            Method::Max => "max",
            Method::MulAdd => "mul_add",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Argument types besides the receiver.
    pub fn args(self) -> &'static [Ty] {
        match self {
            Method::Powi => &[Ty::Int],
            Method::Min | Method::Max => &[Ty::Real],
            Method::MulAdd => &[Ty::Real, Ty::Real],
            _ => &[],
        }
    }

    /// How the call is written, for error messages.
    pub fn example(self) -> &'static str {
        match self {
            Method::Powi => "x.powi(2)",
            Method::Min => "x.min(y)",
            Method::Max => "x.max(y)",
            Method::MulAdd => "x.mul_add(a, b)",
            Method::Abs => "x.abs()",
            Method::Sqrt => "x.sqrt()",
            Method::Exp => "x.exp()",
            Method::Ln => "x.ln()",
            Method::Sin => "x.sin()",
            Method::Cos => "x.cos()",
            Method::Tanh => "x.tanh()",
        }
    }

    /// Floating-point operations counted for one call.
    pub fn flops(self) -> u32 {
        match self {
            Method::MulAdd => 2,
            _ => 1,
        }
    }
}

impl Stencil {
    /// Arithmetic operations per point; both branches of an `if` count.
    pub fn flops(&self) -> u32 {
        fn block(b: &Block) -> u32 {
            b.lets.iter().map(|(_, e)| expr(e)).sum::<u32>() + expr(&b.value)
        }
        fn expr(e: &Expr) -> u32 {
            match &e.kind {
                ExprKind::Unary(_, x) | ExprKind::IntToReal(x) => expr(x),
                ExprKind::Binary(op, l, r) => {
                    let own = matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) && e.ty == Ty::Real;
                    u32::from(own) + expr(l) + expr(r)
                }
                ExprKind::If(c, t, f) => expr(c) + block(t) + block(f),
                ExprKind::Block(b) => block(b),
                ExprKind::Method(m, recv, args) => m.flops() + expr(recv) + args.iter().map(expr).sum::<u32>(),
                _ => 0,
            }
        }
        self.body.lets.iter().map(|(_, e)| expr(e)).sum::<u32>() + self.body.values.iter().map(expr).sum::<u32>()
    }

    /// Arrays one plain pass touches per point: each field read once, each unknown written.
    pub fn arrays_per_point(&self) -> u32 {
        let read = (0..self.fields.len()).filter(|&f| self.reads.iter().any(|r| r.field == f)).count();
        (read + self.unknowns.len()) as u32
    }

    /// Whether the stencil updates several unknowns.
    pub fn is_system(&self) -> bool {
        self.unknowns.len() > 1
    }

    /// Distinct offsets read from field `f`, in order of first appearance.
    pub fn offsets_of(&self, f: usize) -> Vec<&[i32]> {
        self.reads.iter().filter(|r| r.field == f).map(|r| r.offset.as_slice()).collect()
    }

    pub fn type_name(&self) -> Ident {
        type_name(&self.name)
    }

    pub fn params_name(&self) -> Ident {
        params_name(&self.name)
    }

    pub fn inputs_name(&self) -> Ident {
        inputs_name(&self.name)
    }
}

/// `jacobi7` → `Jacobi7`, `at_half_1` → `AtHalf1`.
pub fn type_name(name: &Ident) -> Ident {
    let camel: String = name
        .unraw()
        .to_string()
        .split('_')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let mut c = s.chars();
            c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
        })
        .collect();
    Ident::new(&camel, name.span())
}

/// `jacobi7` → `Jacobi7Params`.
pub fn params_name(name: &Ident) -> Ident {
    Ident::new(&format!("{}Params", type_name(name)), name.span())
}

/// `jacobi7` → `Jacobi7Inputs`.
pub fn inputs_name(name: &Ident) -> Ident {
    Ident::new(&format!("{}Inputs", type_name(name)), name.span())
}

/// The types a stencil named `name` generates, each with what it is.
pub fn generated_types(name: &Ident) -> [(Ident, &'static str); 3] {
    [
        (type_name(name), "the stencil type"),
        (params_name(name), "the parameter struct"),
        (inputs_name(name), "the inputs struct"),
    ]
}
