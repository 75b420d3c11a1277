//! Parsed model → checked IR. Every error of an item is collected before any is reported;
//! each mistake is reported once, where it was made.

mod lower;
mod outputs;
mod reads;
mod signature;

use syn::ext::IdentExt;

use crate::ast;
use crate::ctxt::Ctxt;
use crate::hyperplane;
use crate::ir;

use lower::Lowering;

/// Checks one item and lowers it.
pub fn lower(item: &ast::Item) -> syn::Result<ir::Stencil> {
    let mut cx = Ctxt::default();
    for e in &item.recovered {
        cx.push(e.clone());
    }
    let sig = signature::check(item, &mut cx);
    let unknown_names: Vec<String> = sig.unknowns.iter().map(|&f| sig.fields[f].name.to_string()).collect();
    if !item.name.unraw().to_string().is_ascii() {
        cx.error(
            item.name.span(),
            format!(
                "a stencil's name also names its CUDA kernels, which must be ASCII: rename `{}` with ASCII letters, digits and `_` (its parameters may keep any name)",
                item.name
            ),
        );
    }
    check_sweep(item, sig.dim, &unknown_names, &mut cx);
    let mut lowering = Lowering { cx: &mut cx, sig, locals: Vec::new(), reads: Vec::new(), unknown_names: Vec::new() };
    let (body, value_range) = lowering.body(&item.body);
    let Lowering { sig, locals, reads, unknown_names: misspelt, .. } = lowering;
    let unknowns = outputs::Unknowns { names: &unknown_names, decls: &sig.unknown_decls };
    outputs::check(item, unknowns, value_range.map(|r| (body.values.len(), r)), &mut cx);
    signature::check_reads(item, &sig, &misspelt, &mut cx);
    check_attributes(item, &mut cx);
    cx.check()?;

    let dim = sig.dim;
    let mut radius = vec![0usize; dim];
    for read in &reads {
        for (axis, &o) in read.offset.iter().enumerate() {
            radius[axis] = radius[axis].max(o.unsigned_abs() as usize);
        }
    }
    let unknown = sig.unknowns[0];
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
        // `r#fn` is `fn`: the name also names the CUDA kernels.
        name: item.name.unraw(),
        dim,
        fields: sig.fields,
        unknown,
        unknowns: sig.unknowns,
        scalars: sig.scalars,
        reads,
        radius,
        sweep,
        locals,
        body,
    })
}

/// One direction per axis, and one unknown.
fn check_sweep(item: &ast::Item, dim: usize, unknowns: &[String], cx: &mut Ctxt) {
    let Some(sweep) = &item.sweep else { return };
    if unknowns.len() > 1 {
        cx.error(
            sweep.range,
            format!(
                "a `sweep` stencil updates one unknown in place, point after point, and this one has {}: write a separate sweep for each unknown, or remove `sweep` for a Jacobi update of all of them",
                unknowns.len()
            ),
        );
    }
    if sweep.ascending.len() == dim {
        return;
    }
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

/// Only doc comments; `#[sweep(…)]` is the sweep written as an attribute.
fn check_attributes(item: &ast::Item, cx: &mut Ctxt) {
    for attr in item.attrs.iter().filter(|a| !a.path().is_ident("doc")) {
        let message = if attr.path().is_ident("sweep") {
            // The directions as written, when they parse.
            let sweep = match &attr.meta {
                syn::Meta::List(list) => {
                    let tokens = &list.tokens;
                    syn::parse2::<ast::Sweep>(quote::quote!(sweep(#tokens))).ok()
                }
                _ => None,
            };
            let written = match (&item.sweep, sweep) {
                (None, Some(s)) => crate::parse::head(&item.vis, &Some(s), &item.name),
                _ => crate::parse::head(&item.vis, &item.sweep, &item.name).replace("fn ", "sweep(+, -) fn "),
            };
            format!("`sweep` is not an attribute: it stands before `fn`, after the visibility: write `{written}`")
        } else {
            "only doc comments (`///`) may stand on a stencil: the macro generates the items, and other attributes would not reach them".to_string()
        };
        cx.push(syn::Error::new_spanned(attr, message));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{BinOp, ExprKind, Ty};

    fn item(tokens: proc_macro2::TokenStream) -> ast::Item {
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
            matches!(s.body.values[0].kind, ExprKind::Binary(BinOp::Div, _, ref r) if matches!(r.kind, ExprKind::Real(v) if v == 6.0))
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
        assert!(all.contains("not grid indices"), "{all}");
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

    #[test]
    fn mistakes_from_other_languages_name_the_fix() {
        let e = errors(quote::quote! { fn b(mut u: Field2, h: Real) -> Real { u(-1, 0) + h(2) } });
        assert!(e[0].ends_with("write `u[-1, 0]`") && e[1].contains("`h` is a value, not a function"), "{e:?}");
        let e = errors(quote::quote! { fn b(mut u: Field2) -> Real { u[i - 1, j] + u(i, j + 1) } });
        assert!(e[0].contains("not grid indices: write `u[-1, 0]`") && e[1].ends_with("write `u[0, 1]`"), "{e:?}");
        assert_eq!(e.len(), 2, "{e:?}");
        let e = errors(quote::quote! { fn b(mut u: Field1) -> Real { let mut s = u[0]; s } });
        assert!(e[0].contains("write `let s = …;`"), "{e:?}");
        let e = errors(quote::quote! { fn b(mut u: Field1) -> Real { u[0].powf(1.5) + u[1].clamp(0.0, 1.0) } });
        assert!(e[0].contains("(x.ln() * y).exp()") && e[1].contains("x.max(lo).min(hi)"), "{e:?}");
    }

    #[test]
    fn declarations_from_other_languages_are_reported_once() {
        // `T` is reported with the generics, not again as a parameter or return type.
        let e = errors(quote::quote! { fn b<T>(mut u: Field1, h: T) -> T { h * u[0] } });
        assert_eq!(e.len(), 1, "{e:?}");
        let e = errors(quote::quote! { fn b(u: &mut Field1, f: &Field1) -> Real { u[0] + f[0] } });
        assert!(e[0].ends_with("write `mut u: Field1`") && e[1].ends_with("write `f: Field1`"), "{e:?}");
        assert_eq!(e.len(), 2, "{e:?}");
        let e = errors(quote::quote! { #[sweep(+)] fn b(mut u: Field1) -> Real { u[-1] } });
        assert!(e[0].ends_with("write `sweep(+) fn b(…)`"), "{e:?}");
    }

    #[test]
    fn unread_fields_are_reported_but_the_unknown_may_go_unread() {
        let e = errors(quote::quote! { fn b(mut u: Field2, k: Field2, f: Field2) -> Real { f[0, 0] } });
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("never reads the field `k`"), "{e:?}");
        // A field named anywhere in the body, even in a mistake, is not reported again.
        let e = errors(quote::quote! { fn b(mut u: Field2, k: Field2) -> Real { k(0, 0) } });
        assert_eq!(e.len(), 1, "{e:?}");
    }
}
