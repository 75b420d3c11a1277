//! What a stencil returns: one `Real` per unknown, in the order the unknowns are declared,
//! as its return type says and its body's last value gives.

use crate::ast;
use crate::ctxt::Ctxt;
use crate::span::Range;

/// `` `u` `` or `` `u`, `v` and `w` ``.
fn names(unknowns: &[String]) -> String {
    let quoted: Vec<String> = unknowns.iter().map(|u| format!("`{u}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

/// The return type a stencil with `count` unknowns declares: `Real`, `(Real, Real)`, ….
pub fn return_type(count: usize) -> String {
    match count {
        0 | 1 => "Real".into(),
        k => format!("({})", vec!["Real"; k].join(", ")),
    }
}

/// The number of `Real`s `ty` declares (`Real`: 1, `(Real, Real)`: 2), or `None` when it is
/// not `Real` or a tuple of them. A generic parameter (already reported) counts as `Real`.
fn declared_count(ty: &syn::Type, generics: &[String]) -> Option<usize> {
    let real = |t: &syn::Type| super::signature::type_name(t).is_some_and(|n| n == "Real" || generics.contains(&n));
    match ty {
        syn::Type::Tuple(t) if !t.elems.is_empty() && t.elems.iter().all(real) => Some(t.elems.len()),
        syn::Type::Paren(p) => declared_count(&p.elem, generics),
        t if real(t) => Some(1),
        _ => None,
    }
}

/// A stencil's unknowns: their names and their `mut name` declarations.
#[derive(Clone, Copy)]
pub struct Unknowns<'a> {
    pub names: &'a [String],
    pub decls: &'a [Range],
}

/// The return type and the body's last value (`given` values at `range`, when the body has
/// one) agree with the unknowns. Each mistake is reported once: where the return type and
/// the body agree with each other but not with the unknowns, the `mut` is what is wrong.
pub fn check(item: &ast::Item, unknowns: Unknowns<'_>, given: Option<(usize, Range)>, cx: &mut Ctxt) {
    let names = unknowns.names;
    let count = names.len();
    if count == 0 {
        // Reported with the parameters.
        return;
    }
    let declared = declared_count(&item.ret, &item.generic_types);
    let given_count = given.map(|(n, _)| n);
    match declared {
        Some(d) if d == count => {}
        Some(d) if Some(d) == given_count && d < count => {
            // `-> Real` and one value, with a second `mut`: an input marked `mut`.
            let extra = names[d..].iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
            cx.error(
                unknowns.decls[d],
                format!(
                    "{extra} {} marked `mut`, so this stencil has {count} unknowns ({}), but it returns {d} value{}: remove `mut` from {extra} (read-only fields are inputs), or return one value per unknown, `-> {}`",
                    if count - d == 1 { "is" } else { "are" },
                    self::names(names),
                    if d == 1 { "" } else { "s" },
                    return_type(count),
                ),
            );
            return;
        }
        Some(d) => cx.push(syn::Error::new_spanned(
            &item.ret,
            format!(
                "this stencil returns {d} value{} but has {count} unknown{} ({} marked `mut`): write `-> {}`, one value per unknown in the order they are declared",
                if d == 1 { "" } else { "s" },
                if count == 1 { "" } else { "s" },
                self::names(names),
                return_type(count),
            ),
        )),
        None if count == 1 => cx.push(syn::Error::new_spanned(
            &item.ret,
            "a stencil returns `Real`: write `-> Real` (the new value of the unknown)",
        )),
        None => cx.push(syn::Error::new_spanned(
            &item.ret,
            format!(
                "a stencil returns one `Real` per unknown: write `-> {}` (the new values of {}, in that order)",
                return_type(count),
                self::names(names)
            ),
        )),
    }
    if let Some((given, range)) = given {
        check_count(cx, names, given, range);
    }
}

/// The body's last value gives `given` values for `unknowns`.
fn check_count(cx: &mut Ctxt, unknowns: &[String], given: usize, range: Range) {
    let count = unknowns.len();
    if given == count {
        return;
    }
    let message = if given < count {
        let missing = names(&unknowns[given..]);
        let (is, them) = if count - given == 1 { ("is", "it") } else { ("are", "them") };
        format!(
            "{missing} {is} marked `mut` but the body does not give {} new value: it ends with {given} value{} for {count} unknowns ({}); end it with one value per unknown in the order they are declared, e.g. `{}`, or remove `mut` from {them}",
            if count - given == 1 { "its" } else { "their" },
            if given == 1 { "" } else { "s" },
            names(unknowns),
            example(unknowns),
        )
    } else {
        format!(
            "the body ends with {given} values but the stencil has {count} unknown{} ({}): give one value per unknown in the order they are declared, e.g. `{}`",
            if count == 1 { "" } else { "s" },
            names(unknowns),
            example(unknowns),
        )
    };
    cx.error(range, message);
}

/// `(new_u, new_v)`, or `new_u` for one unknown.
fn example(unknowns: &[String]) -> String {
    let values: Vec<String> = unknowns.iter().map(|u| format!("new_{u}")).collect();
    match values.len() {
        1 => values[0].clone(),
        _ => format!("({})", values.join(", ")),
    }
}
