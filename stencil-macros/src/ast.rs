//! The parsed model of a `stencil!` call: what the user wrote, with the spans that error
//! messages point at. [`crate::parse`] builds it, [`crate::validate`] checks it.

use std::collections::HashSet;

use proc_macro2::Span;
use syn::{Attribute, Ident, Visibility};

use crate::span::Range;

/// Everything inside one `stencil! { … }`.
pub struct Input {
    pub items: Vec<Item>,
}

/// One stencil.
pub struct Item {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub sweep: Option<Sweep>,
    pub name: Ident,
    pub params_span: Span,
    pub params: Vec<Param>,
    pub ret: syn::Type,
    pub body: Block,
    /// Mistakes the parser recognised and read past (a misplaced `sweep`, generic
    /// parameters), so that they are reported with the item's other errors rather than
    /// stopping the call.
    pub recovered: Vec<syn::Error>,
    /// The names of the item's generic type parameters (`T` in `fn f<T>`), already
    /// reported: a parameter or return type naming one is taken as `Real` and not reported
    /// again.
    pub generic_types: Vec<String>,
    /// Every identifier that occurs in the body, whether or not it parses as part of a valid
    /// expression: a field named here is not reported as unread.
    pub body_idents: HashSet<String>,
}

/// `sweep(+, -)`.
pub struct Sweep {
    pub range: Range,
    /// `true` for `+` (ascending).
    pub ascending: Vec<bool>,
}

/// `mut u: Field3`.
pub struct Param {
    pub mutability: Option<Span>,
    pub name: Ident,
    pub ty: syn::Type,
}

/// `{ let a = …; value }`.
pub struct Block {
    pub range: Range,
    pub lets: Vec<Let>,
    pub value: Option<Box<Expr>>,
}

/// `let name = value;`.
pub struct Let {
    /// The span of `mut` in `let mut name`, which the language does not allow.
    pub mutability: Option<Span>,
    pub name: Ident,
    pub value: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 3,
            BinOp::Add | BinOp::Sub => 4,
            BinOp::Mul | BinOp::Div => 5,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

pub enum Lit {
    Int(i64),
    Float(f64),
    Bool(bool),
}

pub enum Expr {
    Lit {
        value: Lit,
        range: Range,
    },
    Name(Ident),
    Index {
        name: Ident,
        offsets: Vec<Expr>,
        range: Range,
        brackets: Range,
    },
    Unary {
        op: UnOp,
        range: Range,
        expr: Box<Expr>,
    },
    Binary {
        op: BinOp,
        op_range: Range,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Paren {
        range: Range,
        expr: Box<Expr>,
    },
    If {
        range: Range,
        cond: Box<Expr>,
        then: Block,
        otherwise: Option<Box<Expr>>,
    },
    Block(Block),
    Method {
        receiver: Box<Expr>,
        method: Ident,
        args: Vec<Expr>,
        range: Range,
    },
    /// `name(args)`: not in the language, but what to write instead depends on what `name`
    /// is (a field is read with brackets, a function is called as a method), which only
    /// validation knows.
    Call {
        name: Ident,
        args: Vec<Expr>,
        range: Range,
    },
    /// `(a, b)`: the new values of several unknowns, allowed only as a stencil's last value.
    Tuple {
        range: Range,
        elems: Vec<Expr>,
    },
    /// Valid Rust that the DSL does not accept; `what` names it, `hint` says what to write.
    Unsupported {
        range: Range,
        what: String,
        hint: String,
    },
    /// A mistake the parser recognised (C's `c ? a : b`, `u[-1][0]`, `f64::consts::PI`),
    /// with its whole message.
    Mistake {
        range: Range,
        message: String,
    },
}

impl Expr {
    pub fn range(&self) -> Range {
        match self {
            Expr::Lit { range, .. }
            | Expr::Index { range, .. }
            | Expr::Unary { range, .. }
            | Expr::Paren { range, .. }
            | Expr::If { range, .. }
            | Expr::Method { range, .. }
            | Expr::Call { range, .. }
            | Expr::Tuple { range, .. }
            | Expr::Unsupported { range, .. }
            | Expr::Mistake { range, .. } => *range,
            Expr::Name(ident) => Range::single(ident.span()),
            Expr::Binary { lhs, rhs, .. } => lhs.range().to(rhs.range()),
            Expr::Block(block) => block.range,
        }
    }
}
