//! "What you probably meant": the hints of the compile errors for mistakes that come from
//! other languages or from Rust habits (calling a field, C's `?:`, grid indices as
//! offsets, `powf`, `std::f64::consts::PI` …), and the small renderer that writes the
//! corrected code into the message.

use crate::ast::{BinOp, Expr, Lit, UnOp};

/// The value of an integer constant offset: an integer literal, possibly negated or in
/// parentheses (`-1`, `(2)`, `-(1)`).
pub fn constant_int(e: &Expr) -> Option<i64> {
    match e {
        Expr::Lit { value: Lit::Int(v), .. } => Some(*v),
        Expr::Unary { op: UnOp::Neg, expr, .. } => constant_int(expr).map(|v| -v),
        Expr::Paren { expr, .. } => constant_int(expr),
        _ => None,
    }
}

/// The offset meant by an index written relative to grid-index variables: `i` is 0,
/// `i - 1` is −1, `j + 2` and `2 + j` are 2, and a constant is itself. `is_index` says which
/// names stand for the point's own index (names that are neither parameters nor bindings).
pub fn relative_offset(e: &Expr, is_index: &dyn Fn(&syn::Ident) -> bool) -> Option<i64> {
    if let Some(v) = constant_int(e) {
        return Some(v);
    }
    match e {
        Expr::Name(n) if is_index(n) => Some(0),
        Expr::Paren { expr, .. } => relative_offset(expr, is_index),
        Expr::Binary { op: op @ (BinOp::Add | BinOp::Sub), lhs, rhs, .. } => {
            match (&**lhs, constant_int(rhs), constant_int(lhs)) {
                (Expr::Name(n), Some(c), _) if is_index(n) => Some(if *op == BinOp::Add { c } else { -c }),
                (_, _, Some(c)) if *op == BinOp::Add && matches!(&**rhs, Expr::Name(n) if is_index(n)) => Some(c),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether a simple expression (names, literals, operators) names something `pred` holds
/// for.
pub fn mentions(e: &Expr, pred: &dyn Fn(&syn::Ident) -> bool) -> bool {
    match e {
        Expr::Name(n) => pred(n),
        Expr::Unary { expr, .. } | Expr::Paren { expr, .. } => mentions(expr, pred),
        Expr::Binary { lhs, rhs, .. } => mentions(lhs, pred) || mentions(rhs, pred),
        _ => false,
    }
}

/// `u[-1, 0]`.
pub fn read_text(name: &impl std::fmt::Display, offsets: &[i64]) -> String {
    let offsets: Vec<String> = offsets.iter().map(i64::to_string).collect();
    format!("{name}[{}]", offsets.join(", "))
}

/// The read of the point itself: `u[0, 0]` for a 2-D field.
pub fn read_at_point(name: &impl std::fmt::Display, dim: usize) -> String {
    read_text(name, &vec![0; dim])
}

/// Source text of a simple expression, for messages that show a corrected version of it;
/// `None` for anything more involved than literals, names, reads and operators.
pub fn render(e: &Expr) -> Option<String> {
    Some(match e {
        Expr::Lit { value: Lit::Int(v), .. } => v.to_string(),
        Expr::Lit { value: Lit::Float(v), .. } => format!("{v:?}"),
        Expr::Lit { value: Lit::Bool(v), .. } => v.to_string(),
        Expr::Name(n) => n.to_string(),
        Expr::Unary { op, expr, .. } => format!("{}{}", if *op == UnOp::Neg { "-" } else { "!" }, render(expr)?),
        Expr::Binary { op, lhs, rhs, .. } => format!("{} {} {}", render(lhs)?, op.symbol(), render(rhs)?),
        Expr::Paren { expr, .. } => format!("({})", render(expr)?),
        Expr::Index { name, offsets, .. } => {
            let offsets: Option<Vec<String>> = offsets.iter().map(render).collect();
            format!("{name}[{}]", offsets?.join(", "))
        }
        _ => return None,
    })
}

/// What to write instead of a method that the language lacks but that a supported method
/// or a short expression replaces; `None` when there is nothing better than the list of
/// methods.
pub fn method_hint(name: &str) -> Option<&'static str> {
    Some(match name {
        "powf" | "pow" => "for an integer power write `x.powi(n)`, for a real power `y` write `(x.ln() * y).exp()`",
        "clamp" => "to clamp `x` to [lo, hi] write `x.max(lo).min(hi)`",
        "log" => "for the natural logarithm write `x.ln()`; for base `b`, `x.ln() / b.ln()`",
        "log10" => "write `x.ln() / 10.0.ln()`",
        "log2" => "write `x.ln() / 2.0.ln()`",
        "recip" => "write `1.0 / x`",
        "tan" => "write `x.sin() / x.cos()`",
        "hypot" => "write `(x * x + y * y).sqrt()`",
        "fma" => "write `x.mul_add(a, b)` for x·a + b with one rounding",
        "square" => "write `x * x` or `x.powi(2)`",
        "into" | "to_f64" | "to_f32" | "to_real" | "as_f64" | "as_real" => {
            "no conversion is needed: an `i32` becomes a `Real` by itself where it meets one (`n * h`, `n.sqrt()`)"
        }
        _ => return None,
    })
}

/// The value of a constant of `std::f64::consts` (or `f32`), by its name.
pub fn math_constant(name: &str) -> Option<f64> {
    use std::f64::consts as c;
    Some(match name {
        "PI" => c::PI,
        "TAU" => c::TAU,
        "E" => c::E,
        "SQRT_2" => c::SQRT_2,
        "FRAC_1_SQRT_2" => c::FRAC_1_SQRT_2,
        "LN_2" => c::LN_2,
        "LN_10" => c::LN_10,
        "LOG2_E" => c::LOG2_E,
        "LOG10_E" => c::LOG10_E,
        "FRAC_PI_2" => c::FRAC_PI_2,
        "FRAC_PI_3" => c::FRAC_PI_3,
        "FRAC_PI_4" => c::FRAC_PI_4,
        "FRAC_PI_6" => c::FRAC_PI_6,
        "FRAC_PI_8" => c::FRAC_PI_8,
        "FRAC_1_PI" => c::FRAC_1_PI,
        "FRAC_2_PI" => c::FRAC_2_PI,
        "FRAC_2_SQRT_PI" => c::FRAC_2_SQRT_PI,
        _ => return None,
    })
}

/// The message for a path written as a value (`std::f64::consts::PI`, `f64::MAX`), whose
/// last segment is `last`.
pub fn path_value(last: &str) -> String {
    match math_constant(last) {
        Some(v) => format!(
            "a path is not a value in a stencil: write the constant as a literal, `{v:?}` (it is rounded to the element type), or pass it as a `Real` parameter"
        ),
        None => "a path is not a value in a stencil: write the number as a literal, or pass it as a `Real` parameter"
            .to_string(),
    }
}

/// The message for a function called through a path (`f64::sqrt(x)`, `f64::from(n)`).
pub fn path_call(last: &str) -> String {
    if matches!(last, "from" | "from_f64" | "from_i32" | "from_f32" | "into") {
        return "a path is not supported in a stencil, and no conversion is needed: an `i32` becomes a `Real` by itself where it meets one, so write the value alone, e.g. `n` rather than `f64::from(n)`".to_string();
    }
    "a path is not supported in a stencil: call methods on values instead, e.g. `x.sqrt()` rather than `f64::sqrt(x)`"
        .to_string()
}

/// The message for `u[-1][0]`: `offsets` holds every bracket's offsets in order.
pub fn chained_index(name: &syn::Ident, offsets: &[Expr]) -> String {
    let rendered: Option<Vec<String>> = offsets.iter().map(render).collect();
    let example = match rendered {
        Some(r) => format!("`{name}[{}]`", r.join(", ")),
        None => format!("`{name}[a, b]`"),
    };
    format!("a field is read with all its offsets in one pair of brackets, separated by commas: write {example}")
}

/// The message for C's conditional operator `cond ? a : b`.
pub fn ternary(cond: &Expr, then: &Expr, otherwise: &Expr) -> String {
    let example = match (render(cond), render(then), render(otherwise)) {
        (Some(c), Some(a), Some(b)) if c.len() + a.len() + b.len() < 80 => format!("if {c} {{ {a} }} else {{ {b} }}"),
        _ => "if cond { a } else { b }".to_string(),
    };
    format!("C's conditional operator `?:` is not in the language: write `{example}`")
}

/// The message for generic parameters on a stencil, `generics` as written (`<T>`).
pub fn generics(generics: &syn::Generics) -> String {
    let written: Vec<String> = generics
        .params
        .iter()
        .map(|p| match p {
            syn::GenericParam::Lifetime(l) => l.lifetime.to_string(),
            syn::GenericParam::Type(t) => t.ident.to_string(),
            syn::GenericParam::Const(c) => c.ident.to_string(),
        })
        .collect();
    let written = format!("<{}>", written.join(", "));
    if generics.params.iter().all(|p| matches!(p, syn::GenericParam::Lifetime(_))) {
        format!(
            "a stencil takes no lifetime parameters: fields are passed by value (`f: Field2`) and the element type is `Real`, chosen (`f32` or `f64`) where the stencil is used; remove `{written}`"
        )
    } else {
        format!(
            "a stencil takes no generic parameters: its element type is `Real`, chosen (`f32` or `f64`) where the stencil is used; remove `{written}`{}",
            match generics.type_params().next() {
                Some(t) => format!(" and write `Real` where it says `{}`", t.ident),
                None => String::new(),
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(tokens: proc_macro2::TokenStream) -> Expr {
        syn::parse::Parser::parse2(|input: syn::parse::ParseStream<'_>| crate::parse::expr(input), tokens).unwrap()
    }

    #[test]
    fn grid_indices_become_relative_offsets() {
        let unknown = |n: &syn::Ident| n != "h";
        let offsets: Vec<Option<i64>> = [
            quote::quote!(i - 1),
            quote::quote!(j),
            quote::quote!(k + 2),
            quote::quote!(1 + k),
            quote::quote!((-3)),
            quote::quote!(h + 1),
        ]
        .into_iter()
        .map(|t| relative_offset(&expr(t), &unknown))
        .collect();
        assert_eq!(offsets, [Some(-1), Some(0), Some(2), Some(1), Some(-3), None]);
    }

    #[test]
    fn simple_expressions_render_as_written() {
        assert_eq!(render(&expr(quote::quote!(u[-1, 0] > 0.5 && !b))).unwrap(), "u[-1, 0] > 0.5 && !b");
        assert_eq!(render(&expr(quote::quote!((a + 2) * c))).unwrap(), "(a + 2) * c");
        assert!(render(&expr(quote::quote!(x.abs()))).is_none());
    }

    #[test]
    fn hints_name_the_replacement() {
        assert!(method_hint("powf").unwrap().contains("(x.ln() * y).exp()"));
        assert!(method_hint("clamp").unwrap().contains("x.max(lo).min(hi)"));
        assert!(path_value("PI").contains("`3.141592653589793`"));
        let g: syn::Generics = syn::parse_quote!(<'a>);
        assert!(generics(&g).contains("no lifetime parameters") && generics(&g).contains("`<'a>`"));
        let g: syn::Generics = syn::parse_quote!(<T: Float>);
        assert!(generics(&g).contains("`Real`") && generics(&g).contains("`<T>`"));
    }
}
