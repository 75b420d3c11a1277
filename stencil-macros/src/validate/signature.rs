//! The parameter list: which parameters are fields and which scalars, the dimension, the
//! unknown, and the names the body may use.

use std::collections::HashMap;

use proc_macro2::Span;

use crate::ast;
use crate::ctxt::Ctxt;
use crate::ir::{self, Ty};
use crate::span::Range;

/// What a name in the body refers to.
#[derive(Clone, Copy)]
pub enum Name {
    Field(usize),
    Scalar(usize),
    Local(usize),
    /// A parameter whose declaration was already reported as wrong, with the type its
    /// uses are checked as: they are not reported again.
    Invalid(Ty),
}

/// The checked parameter list of an item.
pub struct Signature {
    /// The dimension of the first field (1 when there is none, which was reported).
    pub dim: usize,
    pub fields: Vec<ir::Field>,
    /// The declared dimension of each field; those that differ from `dim` were reported.
    pub field_dims: Vec<usize>,
    /// Whether each field was marked `mut` (an unknown).
    pub field_mut: Vec<bool>,
    /// Each field's declaration, `k: Field2`, for errors about the field as a whole.
    pub field_decls: Vec<Range>,
    pub scalars: Vec<ir::Scalar>,
    pub names: HashMap<String, Name>,
    /// The unknowns (fields marked `mut`), in declaration order.
    pub unknowns: Vec<usize>,
    /// Each unknown's `mut name`, for errors about its being an unknown.
    pub unknown_decls: Vec<Range>,
}

/// How one parameter is taken, and the error of its declaration, if any.
enum Kind {
    Field { dim: usize, mutable: bool },
    Scalar(Ty),
    Invalid(Ty),
}

/// The type's name when it is a single identifier (`Field2`, `Real`, `i32`).
pub fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.get_ident().map(ToString::to_string),
        _ => None,
    }
}

/// The span of the last token of `tokens`, so that a [`Range`] can end there.
pub fn last_span(tokens: &impl quote::ToTokens) -> Span {
    tokens.to_token_stream().into_iter().last().map_or_else(Span::call_site, |t| t.span())
}

/// Checks the parameters of `item`, reporting to `cx`.
pub fn check(item: &ast::Item, cx: &mut Ctxt) -> Signature {
    let mut sig = Signature {
        dim: 1,
        fields: Vec::new(),
        field_dims: Vec::new(),
        field_mut: Vec::new(),
        field_decls: Vec::new(),
        scalars: Vec::new(),
        names: HashMap::new(),
        unknowns: Vec::new(),
        unknown_decls: Vec::new(),
    };
    let mut first_dim = None;
    let mut invalid_mut = false;
    for param in &item.params {
        let name = param.name.to_string();
        if sig.names.contains_key(&name) {
            cx.error(
                param.name.span(),
                format!("parameter `{name}` is declared twice; give each parameter its own name"),
            );
            continue;
        }
        let decl = Range::new(param.name.span(), last_span(&param.ty));
        match kind(param, &item.generic_types, cx) {
            Kind::Field { dim, mutable } => {
                match first_dim {
                    None => first_dim = Some(dim),
                    Some(first) if first != dim => cx.error(
                        decl,
                        format!(
                            "all fields of a stencil have the same dimension: `{name}` is a `Field{dim}` but the first field is a `Field{first}`; declare `{name}: Field{first}`"
                        ),
                    ),
                    _ => {}
                }
                if mutable {
                    sig.unknowns.push(sig.fields.len());
                    sig.unknown_decls
                        .push(Range::new(param.mutability.unwrap_or(param.name.span()), param.name.span()));
                }
                sig.names.insert(name, Name::Field(sig.fields.len()));
                sig.fields.push(ir::Field { name: param.name.clone() });
                sig.field_dims.push(dim);
                sig.field_mut.push(mutable);
                sig.field_decls.push(decl);
            }
            Kind::Scalar(ty) => {
                if let Some(m) = param.mutability {
                    cx.error(
                        Range::new(m, param.name.span()),
                        format!("only a field can be the unknown: remove `mut` from the scalar `{}`", param.name),
                    );
                }
                sig.names.insert(name, Name::Scalar(sig.scalars.len()));
                sig.scalars.push(ir::Scalar { name: param.name.clone(), ty });
            }
            Kind::Invalid(checked_as) => {
                invalid_mut |= param.mutability.is_some();
                sig.names.insert(name, Name::Invalid(checked_as));
            }
        }
    }
    // A `mut` on a parameter of a wrong type may have been meant for the unknown.
    if !invalid_mut {
        check_unknown(item, &sig, cx);
    }
    sig.dim = first_dim.unwrap_or(1);
    sig
}

/// A stencil has a field, and one of its fields is the unknown.
fn check_unknown(item: &ast::Item, sig: &Signature, cx: &mut Ctxt) {
    if sig.fields.is_empty() {
        cx.error(
            Range::single(item.params_span),
            "a stencil needs at least one field: its unknown, e.g. `(mut u: Field2, h2: Real)`",
        );
    } else if sig.unknowns.is_empty() {
        cx.error(
            Range::single(item.params_span),
            "no unknown: mark the field this stencil updates with `mut`, e.g. `mut u: Field2`",
        );
    }
}

/// How `param` is taken; a declaration that is wrong is reported here, and taken as what
/// its fix would make it, so that its uses add no errors of their own.
fn kind(param: &ast::Param, generics: &[String], cx: &mut Ctxt) -> Kind {
    let name = &param.name;
    if let syn::Type::Reference(r) = &param.ty {
        let inner = type_name(&r.elem);
        let mutable = r.mutability.is_some() || param.mutability.is_some();
        let field = inner.as_deref().and_then(field_dim);
        let written = match (&field, inner.as_deref()) {
            (Some(_), Some(t)) if mutable => format!("mut {name}: {t}"),
            (Some(_), Some(t)) => format!("{name}: {t}"),
            (None, Some("i32")) => format!("{name}: i32"),
            _ => format!("{name}: Real"),
        };
        let what = if field.is_some() { "a field" } else { "a scalar" };
        cx.push(syn::Error::new_spanned(
            &param.ty,
            format!("{what} is not passed by reference in a stencil: write `{written}`"),
        ));
        return match field {
            Some(dim) => Kind::Field { dim, mutable },
            None if inner.as_deref() == Some("i32") => Kind::Scalar(Ty::Int),
            None => Kind::Scalar(Ty::Real),
        };
    }
    let ty = type_name(&param.ty);
    if let Some(dim) = ty.as_deref().and_then(field_dim) {
        return Kind::Field { dim, mutable: param.mutability.is_some() };
    }
    match ty.as_deref() {
        Some("Real") => return Kind::Scalar(Ty::Real),
        Some("i32") => return Kind::Scalar(Ty::Int),
        // `fn f<T>(h: T)`: the generic parameter was reported, and `T` is read as `Real`.
        Some(t) if generics.iter().any(|g| g == t) => return Kind::Scalar(Ty::Real),
        _ => {}
    }
    let message = match ty.as_deref() {
        Some(t @ ("f32" | "f64")) => format!(
            "`{t}` is not a parameter type: write `Real`, the element type, which is chosen (`f32` or `f64`) where the stencil is used"
        ),
        Some(t @ ("i8" | "i16" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128" | "usize")) => {
            format!("`{t}` is not a parameter type: write `i32`, the one integer type of a stencil")
        }
        Some(t) if t.starts_with("Field") => {
            format!("`{t}` is not a parameter type: a field has 1, 2 or 3 axes, so write `Field1`, `Field2` or `Field3`")
        }
        Some("bool") => "`bool` is not a parameter type: pass a number and compare it, e.g. `on: i32` and `if on != 0 { … } else { … }`".to_string(),
        _ => "unsupported parameter type: write `Field1`, `Field2` or `Field3` for a grid, `Real` for a floating-point scalar, or `i32`".to_string(),
    };
    cx.push(syn::Error::new_spanned(&param.ty, message));
    Kind::Invalid(if ty.as_deref() == Some("bool") { Ty::Bool } else { Ty::Real })
}

fn field_dim(ty: &str) -> Option<usize> {
    match ty {
        "Field1" => Some(1),
        "Field2" => Some(2),
        "Field3" => Some(3),
        _ => None,
    }
}

/// Reports every read-only field that the body never names: the run would demand a grid
/// for it that nothing reads. An unknown may go unread (its new value need not depend on
/// its old one).
/// A field that an unknown name of the body (`unknown_names`) is a misspelling of is not
/// reported: the misspelling is, with the field as its suggestion.
pub fn check_reads(item: &ast::Item, sig: &Signature, unknown_names: &[String], cx: &mut Ctxt) {
    // Without an unknown, an unread field may be the one meant to be `mut`.
    if sig.unknowns.is_empty() {
        return;
    }
    for (f, field) in sig.fields.iter().enumerate() {
        let name = field.name.to_string();
        let misspelt = unknown_names.iter().any(|u| !super::suggestion(u, std::iter::once(name.as_str())).is_empty());
        if sig.field_mut[f] || item.body_idents.contains(&name) || misspelt {
            continue;
        }
        let zeros = crate::diagnose::read_at_point(&name, sig.field_dims[f]);
        cx.error(
            sig.field_decls[f],
            format!(
                "the body never reads the field `{name}`: remove this parameter (a run would ask for a grid that nothing reads), or read it, e.g. `{zeros}`"
            ),
        );
    }
}
