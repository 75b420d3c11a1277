//! Lowering of the body: names resolved, types checked and converted, reads given their
//! slots. Each error is reported once, at the expression that causes it; the expression
//! is then replaced by a placeholder of the type it should have had, so that nothing
//! around it is reported again.

use proc_macro2::Span;
use syn::Ident;

use super::signature::{Name, Signature};
use super::suggestion;
use crate::ast::{self, BinOp, Lit, UnOp};
use crate::ctxt::Ctxt;
use crate::ir::{self, ExprKind, Method, Ty};
use crate::span::Range;

pub(super) struct Lowering<'c> {
    pub cx: &'c mut Ctxt,
    pub sig: Signature,
    pub locals: Vec<ir::Local>,
    pub reads: Vec<ir::Read>,
    /// Names the body uses that are neither parameters nor bindings (reported).
    pub unknown_names: Vec<String>,
}

/// A placeholder for an expression whose error was already reported, so that checking
/// can go on and find the item's other errors.
pub(super) fn poisoned(ty: Ty, span: Span) -> ir::Expr {
    let kind = match ty {
        Ty::Real => ExprKind::Real(0.0),
        Ty::Int => ExprKind::Int(0),
        Ty::Bool => ExprKind::Bool(false),
    };
    ir::Expr { kind, ty, span }
}

/// A block's bindings (slot and value), and what each name they bring into scope meant before.
type Bindings = (Vec<(usize, ir::Expr)>, Vec<(String, Option<Name>)>);

impl Lowering<'_> {
    /// The bindings of `block`, each in scope from its `let` on, and what each name in
    /// scope meant before (for [`unscope`](Self::unscope)).
    fn lets(&mut self, block: &ast::Block) -> Bindings {
        let mut lets = Vec::new();
        let mut scoped = Vec::new();
        for l in &block.lets {
            let value = self.expr(&l.value);
            let value = if value.ty == Ty::Int && is_int_literal(&value) { to_real(value) } else { value };
            let key = l.name.to_string();
            if let Some(m) = l.mutability {
                self.cx.error(
                    Range::new(m, l.name.span()),
                    format!(
                        "bindings are immutable, so a binding cannot be `mut`: write `let {key} = …;` (a later `let {key} = …;` may shadow it)"
                    ),
                );
            }
            if matches!(self.sig.names.get(&key), Some(Name::Field(_) | Name::Scalar(_) | Name::Invalid(_))) {
                self.cx.error(
                    l.name.span(),
                    format!("`{key}` is a parameter of the stencil; give the binding another name"),
                );
            }
            let index = self.locals.len();
            self.locals.push(ir::Local { name: l.name.clone(), ty: value.ty });
            // A closure was reported; calling it is what closures are for, and is not reported again.
            let closure = matches!(&l.value, ast::Expr::Unsupported { what, .. } if what == "a closure");
            let name = if closure { Name::Invalid(Ty::Real) } else { Name::Local(index) };
            scoped.push((key.clone(), self.sig.names.insert(key, name)));
            lets.push((index, value));
        }
        (lets, scoped)
    }

    /// Bindings end with their block.
    fn unscope(&mut self, scoped: Vec<(String, Option<Name>)>) {
        for (key, previous) in scoped.into_iter().rev() {
            match previous {
                Some(p) => self.sig.names.insert(key, p),
                None => self.sig.names.remove(&key),
            };
        }
    }

    /// An inner block, whose value may have any type.
    pub(super) fn block(&mut self, block: &ast::Block) -> ir::Block {
        let (lets, scoped) = self.lets(block);
        let value = match &block.value {
            Some(v) => self.expr(v),
            None => {
                self.cx.error(
                    block.range,
                    "empty block: a block ends with its value, e.g. `{ let d = u[1] - u[-1]; d * d }`",
                );
                poisoned(Ty::Real, block.range.start)
            }
        };
        self.unscope(scoped);
        ir::Block { lets, value: Box::new(value) }
    }

    /// The stencil's body: its bindings and its last value, one value per unknown (a tuple
    /// for several; [`super::outputs`] checks the count), with the range of that value.
    pub(super) fn body(&mut self, block: &ast::Block) -> (ir::Body, Option<Range>) {
        let (lets, scoped) = self.lets(block);
        let (values, range) = match block.value.as_deref() {
            Some(ast::Expr::Tuple { range, elems }) => (elems.iter().map(|v| self.real(v)).collect(), Some(*range)),
            Some(v) => (vec![self.real(v)], Some(v.range())),
            None => {
                self.cx.error(
                    block.range,
                    "empty body: end the block with the new value of the unknown, e.g. `{ (u[-1] + u[1]) / 2.0 }`",
                );
                (vec![poisoned(Ty::Real, block.range.start)], None)
            }
        };
        self.unscope(scoped);
        (ir::Body { lets, values }, range)
    }

    /// `v`, lowered and checked to be a `Real`.
    fn real(&mut self, v: &ast::Expr) -> ir::Expr {
        let e = self.expr(v);
        self.expect_real(e, v.range())
    }

    pub(super) fn expect_real(&mut self, e: ir::Expr, range: Range) -> ir::Expr {
        match e.ty {
            Ty::Bool => {
                self.cx.error(
                    range,
                    "expected a `Real` value, found a `bool`: a comparison chooses between values with `if cond { a } else { b }`",
                );
                poisoned(Ty::Real, e.span)
            }
            _ => to_real(e),
        }
    }

    pub(super) fn expect_bool(&mut self, e: ir::Expr, range: Range, what: &str) -> ir::Expr {
        if e.ty != Ty::Bool {
            self.cx.error(
                range,
                format!("{what} must be a `bool`, found `{}`: compare values, e.g. `x > 0.0`", e.ty.name()),
            );
            return poisoned(Ty::Bool, e.span);
        }
        e
    }

    pub(super) fn expr(&mut self, e: &ast::Expr) -> ir::Expr {
        let span = e.range().start;
        match e {
            ast::Expr::Lit { value, range } => match *value {
                Lit::Int(v) => match i32::try_from(v) {
                    Ok(v) => ir::Expr { kind: ExprKind::Int(v), ty: Ty::Int, span },
                    Err(_) => {
                        self.cx.error(
                            *range,
                            format!("integer literal out of range for `i32`: write it as a real, `{v}.0`"),
                        );
                        poisoned(Ty::Int, span)
                    }
                },
                Lit::Float(v) => ir::Expr { kind: ExprKind::Real(v), ty: Ty::Real, span },
                Lit::Bool(v) => ir::Expr { kind: ExprKind::Bool(v), ty: Ty::Bool, span },
            },
            ast::Expr::Name(ident) => self.name(ident),
            ast::Expr::Index { name, offsets, range, brackets } => self.read(name, offsets, *range, *brackets),
            ast::Expr::Paren { expr, .. } => self.expr(expr),
            ast::Expr::Block(b) => {
                let block = self.block(b);
                if block.lets.is_empty() {
                    return *block.value;
                }
                let ty = block.value.ty;
                ir::Expr { kind: ExprKind::Block(block), ty, span }
            }
            ast::Expr::Unary { op, expr, range } => self.unary(*op, expr, *range),
            ast::Expr::Binary { op, op_range, lhs, rhs } => self.binary(*op, *op_range, lhs, rhs),
            ast::Expr::If { range, cond, then, otherwise } => self.if_expr(cond, then, otherwise.as_deref(), *range),
            ast::Expr::Method { receiver, method, args, range } => self.method(receiver, method, args, *range),
            ast::Expr::Call { name, args, range } => {
                if let Some(message) = self.call(name, args) {
                    self.cx.error(*range, message);
                }
                poisoned(Ty::Real, span)
            }
            ast::Expr::Tuple { range, .. } => {
                self.cx.error(
                    *range,
                    "a tuple is a value only at the end of the body, where it gives the new values of several unknowns (`(new_u, new_v)` for `mut u` and `mut v`): bind each value with `let`",
                );
                poisoned(Ty::Real, span)
            }
            ast::Expr::Unsupported { range, what, hint } => {
                self.cx.error(*range, format!("{what} is not supported in a stencil: {hint}"));
                poisoned(Ty::Real, span)
            }
            ast::Expr::Mistake { range, message } => {
                self.cx.error(*range, message);
                poisoned(Ty::Real, span)
            }
        }
    }

    fn unary(&mut self, op: UnOp, expr: &ast::Expr, range: Range) -> ir::Expr {
        let inner = self.expr(expr);
        let span = range.start;
        match (op, inner.ty) {
            (UnOp::Neg, Ty::Real | Ty::Int) => {
                let ty = inner.ty;
                ir::Expr { kind: ExprKind::Unary(UnOp::Neg, Box::new(inner)), ty, span }
            }
            (UnOp::Not, Ty::Bool) => ir::Expr { kind: ExprKind::Unary(UnOp::Not, Box::new(inner)), ty: Ty::Bool, span },
            // Checking goes on as if the suggested operator had been written.
            (UnOp::Neg, _) => {
                self.cx.error(range, "`-` negates a number; for a `bool` write `!`");
                poisoned(Ty::Bool, span)
            }
            (UnOp::Not, _) => {
                self.cx.error(range, "`!` negates a `bool`; for a number write `-`");
                poisoned(inner.ty, span)
            }
        }
    }

    fn if_expr(
        &mut self,
        cond: &ast::Expr,
        then: &ast::Block,
        otherwise: Option<&ast::Expr>,
        range: Range,
    ) -> ir::Expr {
        let span = range.start;
        let c = self.expr(cond);
        let c = self.expect_bool(c, cond.range(), "the condition of an `if`");
        let Some(otherwise) = otherwise else {
            self.cx.error(range, "an `if` needs an `else`: both branches give the value, e.g. `if c { a } else { b }`");
            return poisoned(Ty::Real, span);
        };
        let t = self.block(then);
        let f = match otherwise {
            ast::Expr::Block(b) => self.block(b),
            other => {
                let value = self.expr(other);
                ir::Block { lets: Vec::new(), value: Box::new(value) }
            }
        };
        self.unify_if(c, t, f, range, span)
    }

    pub(super) fn name(&mut self, ident: &Ident) -> ir::Expr {
        let span = ident.span();
        match self.sig.names.get(&ident.to_string()).copied() {
            Some(Name::Scalar(i)) => ir::Expr { kind: ExprKind::Scalar(i), ty: self.sig.scalars[i].ty, span },
            Some(Name::Local(i)) => ir::Expr { kind: ExprKind::Local(i), ty: self.locals[i].ty, span },
            Some(Name::Invalid(ty)) => poisoned(ty, span),
            Some(Name::Field(f)) => {
                let zeros = vec!["0"; self.sig.field_dims[f]].join(", ");
                self.cx.error(
                    span,
                    format!(
                        "field `{ident}` is read at an offset: write `{ident}[{zeros}]` for its value at the point"
                    ),
                );
                poisoned(Ty::Real, span)
            }
            None => {
                self.unknown_name(ident);
                poisoned(Ty::Real, span)
            }
        }
    }

    pub(super) fn unknown_name(&mut self, ident: &Ident) {
        let name = ident.to_string();
        let hint = suggestion(&name, self.sig.names.keys().map(String::as_str));
        self.unknown_names.push(name.clone());
        self.cx.error(
            ident.span(),
            format!("cannot find `{name}` among the stencil's parameters and `let` bindings{hint}"),
        );
    }

    pub(super) fn binary(&mut self, op: BinOp, op_range: Range, lhs: &ast::Expr, rhs: &ast::Expr) -> ir::Expr {
        let l = self.expr(lhs);
        let r = self.expr(rhs);
        let span = l.span;
        let range = lhs.range().to(rhs.range());
        if is_comparison(op) && matches!(lhs, ast::Expr::Binary { op, .. } if is_comparison(*op)) {
            self.cx.error(range, "comparisons cannot be chained: write `a < b && b < c`");
            return poisoned(Ty::Bool, span);
        }
        match op {
            BinOp::And | BinOp::Or => {
                let what = format!("each operand of `{}`", op.symbol());
                let l = self.expect_bool(l, lhs.range(), &what);
                let r = self.expect_bool(r, rhs.range(), &what);
                ir::Expr { kind: ExprKind::Binary(op, Box::new(l), Box::new(r)), ty: Ty::Bool, span }
            }
            _ => {
                if l.ty == Ty::Bool || r.ty == Ty::Bool {
                    self.cx.error(
                        range,
                        format!(
                            "`{}` needs numbers on both sides, found a `bool`: combine conditions with `&&` or `||`, or turn one into a number with `if c {{ 1.0 }} else {{ 0.0 }}`",
                            op.symbol()
                        ),
                    );
                    let _ = op_range;
                    let ty = if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) {
                        Ty::Real
                    } else {
                        Ty::Bool
                    };
                    return poisoned(ty, span);
                }
                let (l, r, operand) = unify_numbers(op, l, r);
                let ty =
                    if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) { operand } else { Ty::Bool };
                ir::Expr { kind: ExprKind::Binary(op, Box::new(l), Box::new(r)), ty, span }
            }
        }
    }

    pub(super) fn unify_if(
        &mut self,
        c: ir::Expr,
        mut t: ir::Block,
        mut f: ir::Block,
        range: Range,
        span: Span,
    ) -> ir::Expr {
        let ty = match (t.value.ty, f.value.ty) {
            (a, b) if a == b => a,
            (Ty::Bool, _) | (_, Ty::Bool) => {
                self.cx.error(
                    range,
                    "the branches of an `if` must give the same type, but here one gives a `bool` and the other a number: turn the `bool` into a number with `if c { 1.0 } else { 0.0 }`",
                );
                return poisoned(Ty::Real, span);
            }
            _ => {
                t.value = Box::new(to_real(*t.value));
                f.value = Box::new(to_real(*f.value));
                Ty::Real
            }
        };
        ir::Expr { kind: ExprKind::If(Box::new(c), t, f), ty, span }
    }

    pub(super) fn method(
        &mut self,
        receiver: &ast::Expr,
        method: &Ident,
        args: &[ast::Expr],
        range: Range,
    ) -> ir::Expr {
        let recv = self.expr(receiver);
        let span = recv.span;
        let Some(m) = Method::from_name(&method.to_string()) else {
            let known: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
            let hint = match crate::diagnose::method_hint(&method.to_string()) {
                Some(h) => format!("; {h}"),
                None => suggestion(&method.to_string(), known.iter().copied()),
            };
            self.cx.error(
                method.span(),
                format!(
                    "unknown method `{method}`: a stencil may call {}{hint}",
                    known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                ),
            );
            return poisoned(Ty::Real, span);
        };
        let lowered: Vec<ir::Expr> = args.iter().map(|a| self.expr(a)).collect();
        if lowered.len() != m.args().len() {
            self.cx.error(
                range,
                format!(
                    "`{}` takes {} argument{} besides its receiver, found {}: write `{}`",
                    m.name(),
                    m.args().len(),
                    if m.args().len() == 1 { "" } else { "s" },
                    lowered.len(),
                    m.example()
                ),
            );
            return poisoned(Ty::Real, span);
        }
        let recv = self.expect_real(recv, receiver.range());
        let mut checked = Vec::new();
        for ((arg, want), source) in lowered.into_iter().zip(m.args()).zip(args) {
            checked.push(match want {
                Ty::Int if arg.ty != Ty::Int => {
                    self.cx.error(
                        source.range(),
                        format!(
                            "the argument of `{}` must be an integer constant or an `i32` parameter, e.g. `{}`; for a real exponent `y` write `(y * x.ln()).exp()`",
                            m.name(),
                            m.example()
                        ),
                    );
                    poisoned(Ty::Int, arg.span)
                }
                _ if *want == Ty::Real => self.expect_real(arg, source.range()),
                _ => arg,
            });
        }
        ir::Expr { kind: ExprKind::Method(m, Box::new(recv), checked), ty: Ty::Real, span }
    }
}

fn is_comparison(op: BinOp) -> bool {
    matches!(op, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
}

fn is_int_literal(e: &ir::Expr) -> bool {
    int_constant(e).is_some()
}

/// The value of an integer literal, possibly negated: such a constant takes the element
/// type unless it meets an `i32` parameter.
fn int_constant(e: &ir::Expr) -> Option<i32> {
    match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Unary(UnOp::Neg, x) => int_constant(x).map(i32::wrapping_neg),
        _ => None,
    }
}

/// Integer constants become real literals; other integers are converted at run time.
fn to_real(e: ir::Expr) -> ir::Expr {
    match (e.ty, int_constant(&e)) {
        (Ty::Real, _) | (Ty::Bool, _) => e,
        (Ty::Int, Some(v)) => ir::Expr { kind: ExprKind::Real(v as f64), ty: Ty::Real, span: e.span },
        (Ty::Int, None) => {
            let span = e.span;
            ir::Expr { kind: ExprKind::IntToReal(Box::new(e)), ty: Ty::Real, span }
        }
    }
}

/// Both operands in one numeric type. `i32` arithmetic happens only where an `i32`
/// parameter meets an `i32` or an integer constant; two constants are `Real` (literals take
/// the element type, so `1 / 2` is 0.5), and `/` always divides `Real`s, so no integer
/// division (and no division by zero that panics on one backend) exists.
fn unify_numbers(op: BinOp, l: ir::Expr, r: ir::Expr) -> (ir::Expr, ir::Expr, Ty) {
    let constants = int_constant(&l).is_some() && int_constant(&r).is_some();
    if l.ty == Ty::Real || r.ty == Ty::Real || op == BinOp::Div || constants {
        (to_real(l), to_real(r), Ty::Real)
    } else {
        (l, r, Ty::Int)
    }
}
