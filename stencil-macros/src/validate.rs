//! Parsed model → checked IR. Every error of an item is collected before any is reported.

use std::collections::HashMap;

use proc_macro2::Span;
use syn::Ident;

use crate::ctxt::Ctxt;
use crate::hyperplane;
use crate::ir::{self, ExprKind, MAX_RADIUS, Method, Ty};
use crate::parse::{self, BinOp, Lit, UnOp};
use crate::span::Range;

#[derive(Clone, Copy)]
enum Name {
    Field(usize),
    Scalar(usize),
    Local(usize),
    /// A parameter whose declaration was already reported as wrong, with the type its
    /// uses are checked as: they are not reported again.
    Invalid(Ty),
}

struct Lowering<'c> {
    cx: &'c mut Ctxt,
    dim: usize,
    fields: Vec<ir::Field>,
    /// The declared dimension of each field; those that differ from `dim` were reported.
    field_dims: Vec<usize>,
    scalars: Vec<ir::Scalar>,
    names: HashMap<String, Name>,
    locals: Vec<ir::Local>,
    reads: Vec<ir::Read>,
}

/// A placeholder for an expression whose error was already reported, so that checking
/// can go on and find the item's other errors.
fn poisoned(ty: Ty, span: Span) -> ir::Expr {
    let kind = match ty {
        Ty::Real => ExprKind::Real(0.0),
        Ty::Int => ExprKind::Int(0),
        Ty::Bool => ExprKind::Bool(false),
    };
    ir::Expr { kind, ty, span }
}

fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.get_ident().map(ToString::to_string),
        _ => None,
    }
}

/// The span of the last token of `tokens`, so that a [`Range`] can end there.
fn last_span(tokens: &impl quote::ToTokens) -> Span {
    tokens.to_token_stream().into_iter().last().map_or_else(Span::call_site, |t| t.span())
}

/// Checks one item and lowers it.
pub fn lower(item: &parse::Item) -> syn::Result<ir::Stencil> {
    let mut cx = Ctxt::default();
    let mut fields: Vec<ir::Field> = Vec::new();
    let mut scalars = Vec::new();
    let mut names = HashMap::new();
    let mut unknown: Option<usize> = None;
    let mut dim = None;
    let mut field_dims = Vec::new();
    let mut invalid_mut = false;
    for param in &item.params {
        let name = param.name.to_string();
        if names.contains_key(&name) {
            cx.error(
                param.name.span(),
                format!("parameter `{name}` is declared twice; give each parameter its own name"),
            );
            continue;
        }
        let ty = type_name(&param.ty);
        let field_dim = match ty.as_deref() {
            Some("Field1") => Some(1),
            Some("Field2") => Some(2),
            Some("Field3") => Some(3),
            _ => None,
        };
        if let Some(d) = field_dim {
            match dim {
                None => dim = Some(d),
                Some(first) if first != d => cx.error(
                    Range::new(param.name.span(), last_span(&param.ty)),
                    format!(
                        "all fields of a stencil have the same dimension: `{name}` is a `Field{d}` but the first field is a `Field{first}`; declare `{name}: Field{first}`"
                    ),
                ),
                _ => {}
            }
            if let Some(m) = param.mutability {
                match unknown {
                    Some(first) => cx.error(
                        Range::new(m, param.name.span()),
                        format!(
                            "a stencil has exactly one unknown and `{}` is already marked `mut`: remove `mut` from `{name}` (read-only fields are inputs)",
                            fields[first].name
                        ),
                    ),
                    None => unknown = Some(fields.len()),
                }
            }
            names.insert(name, Name::Field(fields.len()));
            fields.push(ir::Field { name: param.name.clone() });
            field_dims.push(d);
            continue;
        }
        let scalar = match ty.as_deref() {
            Some("Real") => Ty::Real,
            Some("i32") => Ty::Int,
            other => {
                let message = match other {
                    Some(t @ ("f32" | "f64")) => format!(
                        "`{t}` is not a parameter type: write `Real`, the element type, which is chosen (`f32` or `f64`) where the stencil is used"
                    ),
                    Some(t @ ("i8" | "i16" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128" | "usize")) => {
                        format!("`{t}` is not a parameter type: write `i32`, the one integer type of a stencil")
                    }
                    Some(t) if t.starts_with("Field") => format!(
                        "`{t}` is not a parameter type: a field has 1, 2 or 3 axes, so write `Field1`, `Field2` or `Field3`"
                    ),
                    Some("bool") => "`bool` is not a parameter type: pass a number and compare it, e.g. `on: i32` and `if on != 0 { … } else { … }`".to_string(),
                    _ => "unsupported parameter type: write `Field1`, `Field2` or `Field3` for a grid, `Real` for a floating-point scalar, or `i32`".to_string(),
                };
                cx.push(syn::Error::new_spanned(&param.ty, message));
                invalid_mut |= param.mutability.is_some();
                let checked_as = if other == Some("bool") { Ty::Bool } else { Ty::Real };
                names.insert(name, Name::Invalid(checked_as));
                continue;
            }
        };
        if let Some(m) = param.mutability {
            cx.error(
                Range::new(m, param.name.span()),
                format!("only a field can be the unknown: remove `mut` from the scalar `{}`", param.name),
            );
        }
        names.insert(name, Name::Scalar(scalars.len()));
        scalars.push(ir::Scalar { name: param.name.clone(), ty: scalar });
    }
    if type_name(&item.ret).as_deref() != Some("Real") {
        cx.push(syn::Error::new_spanned(
            &item.ret,
            "a stencil returns `Real`: write `-> Real` (the new value of the unknown)",
        ));
    }
    if unknown.is_none() && !fields.is_empty() && !invalid_mut {
        cx.error(
            Range::single(item.params_span),
            "no unknown: mark the field this stencil updates with `mut`, e.g. `mut u: Field2`",
        );
    } else if fields.is_empty() && !invalid_mut {
        cx.error(
            Range::single(item.params_span),
            "a stencil needs at least one field: its unknown, e.g. `(mut u: Field2, h2: Real)`",
        );
    }
    let dim = dim.unwrap_or(1);
    if let Some(sweep) = &item.sweep
        && sweep.ascending.len() != dim
    {
        let (axes, directions) = if dim == 1 {
            ("1 axis".into(), "1 direction".into())
        } else {
            (format!("{dim} axes"), format!("{dim} directions"))
        };
        cx.error(
            sweep.range,
            format!(
                "`sweep` needs one direction per axis: this stencil has {axes} but the sweep gives {}; write {directions}, e.g. `sweep({})`",
                sweep.ascending.len(),
                vec!["+"; dim].join(", ")
            ),
        );
    }

    let mut lowering =
        Lowering { cx: &mut cx, dim, fields, field_dims, scalars, names, locals: Vec::new(), reads: Vec::new() };
    let body = lowering.block(&item.body, Some(Ty::Real));
    let Lowering { fields, scalars, locals, reads, .. } = lowering;

    let mut radius = vec![0usize; dim];
    for read in &reads {
        for (axis, &o) in read.offset.iter().enumerate() {
            radius[axis] = radius[axis].max(o.unsigned_abs() as usize);
        }
    }
    for attr in item.attrs.iter().filter(|a| !a.path().is_ident("doc")) {
        cx.push(syn::Error::new_spanned(
            attr,
            "only doc comments (`///`) may stand on a stencil: the macro generates the items, and other attributes would not reach them",
        ));
    }
    cx.check()?;

    let unknown = unknown.expect("checked above");
    let sweep = item.sweep.as_ref().map(|s| {
        let unknown_offsets: Vec<Vec<i32>> =
            reads.iter().filter(|r| r.field == unknown).map(|r| r.offset.clone()).collect();
        ir::SweepPlan {
            hyperplane: hyperplane::hyperplane(&unknown_offsets, &s.ascending),
            skew: hyperplane::skew(&unknown_offsets, &s.ascending),
            ascending: s.ascending.clone(),
        }
    });
    let docs = item.attrs.iter().filter(|a| a.path().is_ident("doc")).cloned().collect();
    Ok(ir::Stencil {
        docs,
        vis: item.vis.clone(),
        name: item.name.clone(),
        dim,
        fields,
        unknown,
        scalars,
        reads,
        radius,
        sweep,
        locals,
        body,
    })
}

/// Levenshtein distance, for "did you mean" hints.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for j in 0..b.len() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != b[j])).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn suggestion<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    candidates
        .map(|c| (distance(name, c), c))
        .filter(|(d, c)| *d <= 2 && *d < c.len())
        .min()
        .map(|(_, c)| format!("; did you mean `{c}`?"))
        .unwrap_or_default()
}

impl Lowering<'_> {
    fn block(&mut self, block: &parse::Block, expected: Option<Ty>) -> ir::Block {
        let mut lets = Vec::new();
        let mut scoped = Vec::new();
        for l in &block.lets {
            let value = self.expr(&l.value);
            let value = if value.ty == Ty::Int && is_int_literal(&value) { to_real(value) } else { value };
            let key = l.name.to_string();
            if matches!(self.names.get(&key), Some(Name::Field(_) | Name::Scalar(_) | Name::Invalid(_))) {
                self.cx.error(
                    l.name.span(),
                    format!("`{key}` is a parameter of the stencil; give the binding another name"),
                );
            }
            let index = self.locals.len();
            self.locals.push(ir::Local { name: l.name.clone(), ty: value.ty });
            scoped.push((key.clone(), self.names.insert(key, Name::Local(index))));
            lets.push((index, value));
        }
        let value = match &block.value {
            Some(v) => {
                let e = self.expr(v);
                match expected {
                    Some(Ty::Real) => self.expect_real(e, v.range()),
                    _ => e,
                }
            }
            None => {
                // Only the stencil's body expects a `Real`; inner blocks take any value.
                let message = if expected.is_some() {
                    "empty body: end the block with the new value of the unknown, e.g. `{ (u[-1] + u[1]) / 2.0 }`"
                } else {
                    "empty block: a block ends with its value, e.g. `{ let d = u[1] - u[-1]; d * d }`"
                };
                self.cx.error(block.range, message);
                poisoned(expected.unwrap_or(Ty::Real), block.range.start)
            }
        };
        // Bindings end with their block.
        for (key, previous) in scoped.into_iter().rev() {
            match previous {
                Some(p) => self.names.insert(key, p),
                None => self.names.remove(&key),
            };
        }
        ir::Block { lets, value: Box::new(value) }
    }

    fn expect_real(&mut self, e: ir::Expr, range: Range) -> ir::Expr {
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

    fn expect_bool(&mut self, e: ir::Expr, range: Range, what: &str) -> ir::Expr {
        if e.ty != Ty::Bool {
            self.cx.error(
                range,
                format!("{what} must be a `bool`, found `{}`: compare values, e.g. `x > 0.0`", e.ty.name()),
            );
            return poisoned(Ty::Bool, e.span);
        }
        e
    }

    fn expr(&mut self, e: &parse::Expr) -> ir::Expr {
        let span = e.range().start;
        match e {
            parse::Expr::Lit { value, range } => match *value {
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
            parse::Expr::Name(ident) => self.name(ident),
            parse::Expr::Index { name, offsets, range, brackets } => self.read(name, offsets, *range, *brackets),
            parse::Expr::Paren { expr, .. } => self.expr(expr),
            parse::Expr::Block(b) => {
                let block = self.block(b, None);
                if block.lets.is_empty() {
                    return *block.value;
                }
                let ty = block.value.ty;
                ir::Expr { kind: ExprKind::Block(block), ty, span }
            }
            parse::Expr::Unary { op, expr, range } => {
                let inner = self.expr(expr);
                match (op, inner.ty) {
                    (UnOp::Neg, Ty::Real | Ty::Int) => {
                        let ty = inner.ty;
                        ir::Expr { kind: ExprKind::Unary(UnOp::Neg, Box::new(inner)), ty, span }
                    }
                    (UnOp::Not, Ty::Bool) => {
                        ir::Expr { kind: ExprKind::Unary(UnOp::Not, Box::new(inner)), ty: Ty::Bool, span }
                    }
                    // Checking goes on as if the suggested operator had been written.
                    (UnOp::Neg, _) => {
                        self.cx.error(*range, "`-` negates a number; for a `bool` write `!`");
                        poisoned(Ty::Bool, span)
                    }
                    (UnOp::Not, _) => {
                        self.cx.error(*range, "`!` negates a `bool`; for a number write `-`");
                        poisoned(inner.ty, span)
                    }
                }
            }
            parse::Expr::Binary { op, op_range, lhs, rhs } => self.binary(*op, *op_range, lhs, rhs),
            parse::Expr::If { range, cond, then, otherwise } => {
                let c = self.expr(cond);
                let c = self.expect_bool(c, cond.range(), "the condition of an `if`");
                let Some(otherwise) = otherwise else {
                    self.cx.error(
                        *range,
                        "an `if` needs an `else`: both branches give the value, e.g. `if c { a } else { b }`",
                    );
                    return poisoned(Ty::Real, span);
                };
                let t = self.block(then, None);
                let f = match &**otherwise {
                    parse::Expr::Block(b) => self.block(b, None),
                    other => {
                        let value = self.expr(other);
                        ir::Block { lets: Vec::new(), value: Box::new(value) }
                    }
                };
                self.unify_if(c, t, f, *range, span)
            }
            parse::Expr::Method { receiver, method, args, range } => self.method(receiver, method, args, *range),
            parse::Expr::Unsupported { range, what, hint } => {
                self.cx.error(*range, format!("{what} is not supported in a stencil: {hint}"));
                poisoned(Ty::Real, span)
            }
        }
    }

    fn name(&mut self, ident: &Ident) -> ir::Expr {
        let span = ident.span();
        match self.names.get(&ident.to_string()).copied() {
            Some(Name::Scalar(i)) => ir::Expr { kind: ExprKind::Scalar(i), ty: self.scalars[i].ty, span },
            Some(Name::Local(i)) => ir::Expr { kind: ExprKind::Local(i), ty: self.locals[i].ty, span },
            Some(Name::Invalid(ty)) => poisoned(ty, span),
            Some(Name::Field(f)) => {
                let zeros = vec!["0"; self.field_dims[f]].join(", ");
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

    fn unknown_name(&mut self, ident: &Ident) {
        let name = ident.to_string();
        let hint = suggestion(&name, self.names.keys().map(String::as_str));
        self.cx.error(
            ident.span(),
            format!("cannot find `{name}` among the stencil's parameters and `let` bindings{hint}"),
        );
    }

    fn read(&mut self, name: &Ident, offsets: &[parse::Expr], range: Range, brackets: Range) -> ir::Expr {
        let span = name.span();
        let field = match self.names.get(&name.to_string()).copied() {
            Some(Name::Field(f)) => f,
            Some(Name::Scalar(_)) => {
                self.cx.error(range, format!("`{name}` is a scalar and cannot be indexed: write `{name}` alone"));
                return poisoned(Ty::Real, span);
            }
            Some(Name::Local(_)) => {
                self.cx.error(
                    range,
                    format!("`{name}` is a `let` binding, a single value, and cannot be indexed: write `{name}` alone"),
                );
                return poisoned(Ty::Real, span);
            }
            Some(Name::Invalid(_)) => return poisoned(Ty::Real, span),
            None => {
                self.unknown_name(name);
                return poisoned(Ty::Real, span);
            }
        };
        let mut offset = Vec::new();
        let mut ok = true;
        for o in offsets {
            match constant_offset(o) {
                Some(v) if v.unsigned_abs() as usize > MAX_RADIUS => {
                    self.cx.error(
                        o.range(),
                        format!("offset {v} is beyond the largest supported radius, {MAX_RADIUS}: keep every offset within -{MAX_RADIUS}..={MAX_RADIUS}"),
                    );
                    ok = false;
                }
                Some(v) => offset.push(v as i32),
                // Reported with its own message.
                None if matches!(o, parse::Expr::Unsupported { .. }) => {
                    self.expr(o);
                    ok = false;
                }
                None => {
                    self.cx.error(
                        o.range(),
                        "an offset must be an integer constant such as `-1`, `0` or `2`: fields are read at fixed offsets from the point",
                    );
                    ok = false;
                }
            }
        }
        // A field whose dimension differs from the stencil's was reported at its
        // declaration; its reads are checked against what it declares.
        let dim = self.field_dims[field];
        if offsets.len() != dim {
            let zeros = vec!["0"; dim].join(", ");
            let axes = if dim == 1 {
                "1 axis, so it is read with 1 offset".to_string()
            } else {
                format!("{dim} axes, so it is read with {dim} offsets")
            };
            self.cx.error(brackets, format!("`{name}` has {axes}, e.g. `{name}[{zeros}]`; found {}", offsets.len()));
            ok = false;
        }
        ok &= dim == self.dim;
        if !ok {
            return poisoned(Ty::Real, span);
        }
        let read = ir::Read { field, offset };
        let slot = self.reads.iter().position(|r| *r == read).unwrap_or_else(|| {
            self.reads.push(read);
            self.reads.len() - 1
        });
        ir::Expr { kind: ExprKind::Read(slot), ty: Ty::Real, span }
    }

    fn binary(&mut self, op: BinOp, op_range: Range, lhs: &parse::Expr, rhs: &parse::Expr) -> ir::Expr {
        let l = self.expr(lhs);
        let r = self.expr(rhs);
        let span = l.span;
        let range = lhs.range().to(rhs.range());
        if is_comparison(op) && matches!(lhs, parse::Expr::Binary { op, .. } if is_comparison(*op)) {
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

    fn unify_if(&mut self, c: ir::Expr, mut t: ir::Block, mut f: ir::Block, range: Range, span: Span) -> ir::Expr {
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

    fn method(&mut self, receiver: &parse::Expr, method: &Ident, args: &[parse::Expr], range: Range) -> ir::Expr {
        let recv = self.expr(receiver);
        let span = recv.span;
        let Some(m) = Method::from_name(&method.to_string()) else {
            let known: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
            let hint = suggestion(&method.to_string(), known.iter().copied());
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

/// `-1`, `0`, `2` (an integer literal, possibly negated).
fn constant_offset(e: &parse::Expr) -> Option<i64> {
    match e {
        parse::Expr::Lit { value: Lit::Int(v), .. } => Some(*v),
        parse::Expr::Unary { op: UnOp::Neg, expr, .. } => constant_offset(expr).map(|v| -v),
        parse::Expr::Paren { expr, .. } => constant_offset(expr),
        _ => None,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn item(tokens: proc_macro2::TokenStream) -> parse::Item {
        syn::parse2(tokens).expect("parses")
    }

    fn errors(tokens: proc_macro2::TokenStream) -> Vec<String> {
        match lower(&item(tokens)) {
            Ok(_) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn jacobi7_metadata() {
        let s = lower(&item(quote::quote! {
            pub fn jacobi7(mut u: Field3, f: Field3, h2: Real) -> Real {
                (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1] + h2 * f[0, 0, 0]) / 6
            }
        }))
        .unwrap();
        assert_eq!(s.dim, 3);
        assert_eq!(s.unknown, 0);
        assert_eq!(s.radius, [1, 1, 1]);
        assert_eq!(s.reads.len(), 7);
        assert_eq!(s.reads[6], ir::Read { field: 1, offset: vec![0, 0, 0] });
        // Six additions, one multiplication, one division.
        assert_eq!(s.flops(), 8);
        assert_eq!(s.arrays_per_point(), 3);
        assert_eq!(s.type_name().to_string(), "Jacobi7");
        assert!(
            matches!(s.body.value.kind, ExprKind::Binary(BinOp::Div, _, ref r) if matches!(r.kind, ExprKind::Real(v) if v == 6.0))
        );
    }

    #[test]
    fn repeated_reads_share_a_slot_and_i32_converts_to_real() {
        let s = lower(&item(quote::quote! {
            fn k(mut u: Field1, n: i32) -> Real { let a = u[1] * n; a + u[1] + n.powi(2) }
        }))
        .unwrap();
        assert_eq!(s.reads.len(), 1);
        assert_eq!(s.locals[0].ty, Ty::Real);
        let ExprKind::Binary(_, ref lhs, _) = s.body.lets[0].1.kind else { panic!() };
        assert!(matches!(lhs.kind, ExprKind::Read(0)));
    }

    #[test]
    fn every_error_of_an_item_is_reported_at_once() {
        let e = errors(quote::quote! {
            fn bad(u: Field2, f: Field3, f: Real) -> Real { u[x, 0] + g + f.foo() }
        });
        let all = e.join("\n");
        assert!(all.contains("declared twice"), "{all}");
        assert!(all.contains("same dimension"), "{all}");
        assert!(all.contains("no unknown"), "{all}");
        assert!(all.contains("integer constant"), "{all}");
        assert!(all.contains("cannot find `g`"), "{all}");
        assert!(all.contains("unknown method `foo`"), "{all}");
        assert!(e.len() >= 6, "{all}");
    }

    #[test]
    fn typing_rules() {
        let e = errors(quote::quote! { fn b(mut u: Field1) -> Real { u[0] > 1.0 } });
        assert!(e[0].contains("expected a `Real` value, found a `bool`"), "{e:?}");
        let e = errors(quote::quote! { fn b(mut u: Field1) -> Real { if u[0] { 1.0 } else { 2.0 } } });
        assert!(e[0].contains("must be a `bool`"), "{e:?}");
        let e = errors(quote::quote! { fn b(mut u: Field1) -> Real { u[0].powi(1.5) } });
        assert!(e[0].contains("integer"), "{e:?}");
        let e = errors(quote::quote! { fn b(mut u: Field1) -> Real { u[9] } });
        assert!(e[0].contains("largest supported radius"), "{e:?}");
        let e = errors(quote::quote! { fn b(mut u: Field1, h: Real) -> Real { h[0] + u } });
        assert!(e[0].contains("scalar and cannot be indexed") && e[1].contains("write `u[0]`"), "{e:?}");
        let e = errors(quote::quote! { sweep(+) fn b(mut u: Field2) -> Real { u[0, 0] } });
        assert!(e[0].contains("one direction per axis"), "{e:?}");
        assert!(
            errors(quote::quote! { fn b(mut u: Field1, n: i32) -> Real { if n > 2 && !(n == 3) { 1 } else { u[0] } } })
                .is_empty()
        );
    }

    #[test]
    fn hints_suggest_near_names() {
        let e = errors(quote::quote! { fn b(mut u: Field1, h2: Real) -> Real { u[0] * h3 } });
        assert!(e[0].contains("did you mean `h2`?"), "{e:?}");
        let e = errors(quote::quote! { fn b(mut u: Field1) -> Real { u[0].sqr() } });
        assert!(e[0].contains("did you mean `sqrt`?"), "{e:?}");
    }
}
