//! Syntax of `stencil!`: tokens → [`Input`], the parsed model of [`crate::ast`].
//!
//! ```text
//! input    := item+
//! item     := attr* vis? sweep? 'fn' NAME '(' param (',' param)* ','? ')' '->' TYPE block
//! sweep    := 'sweep' '(' dir (',' dir)* ')'            dir := '+' | '-'
//! param    := 'mut'? NAME ':' TYPE                      (Field1 Field2 Field3 Real i32)
//! block    := '{' ('let' NAME '=' expr ';')* expr? '}'
//! expr     := expr binop expr | unary expr | postfix
//! binop    := '||' | '&&' | '==' | '!=' | '<' | '<=' | '>' | '>=' | '+' | '-' | '*' | '/'
//! unary    := '-' | '!'
//! postfix  := primary ('.' METHOD '(' (expr (',' expr)*)? ')')*
//! primary  := literal | NAME | NAME '[' expr (',' expr)* ']' | '(' expr ')'
//!           | 'if' expr block 'else' (block | if) | block
//! ```
//!
//! Operators have Rust's precedence and associativity. Anything else that is valid Rust
//! (loops, closures, macro calls, assignments, function calls, paths, casts) parses into
//! [`Expr::Unsupported`](crate::ast::Expr::Unsupported) so that validation can report it
//! together with every other error of the item; only token sequences that are not
//! expressions at all are parse errors. Some common mistakes are read past and kept in
//! [`Item::recovered`] for the same reason: `sweep` after `fn` or before the visibility,
//! generic parameters, a `where` clause.

mod expr;
mod operators;

use std::collections::HashSet;

use proc_macro2::TokenTree;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, Token, Visibility, parenthesized};

use crate::ast::{Input, Item, Param, Sweep};
use crate::span::Range;

use expr::block;
#[cfg(test)]
pub use expr::expr;

mod kw {
    syn::custom_keyword!(sweep);
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut items = Vec::new();
        while !input.is_empty() {
            items.push(input.parse()?);
        }
        if items.is_empty() {
            return Err(input.error("expected a stencil: `fn name(mut u: Field2, …) -> Real { … }`"));
        }
        Ok(Self { items })
    }
}

impl Parse for Item {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut recovered = Vec::new();
        let attrs = input.call(Attribute::parse_outer)?;
        let mut vis: Visibility = input.parse()?;
        let mut sweep = if input.peek(kw::sweep) { Some(input.parse::<Sweep>()?) } else { None };
        // `sweep(+) pub fn`: the visibility after the sweep, reported once the name is known.
        let mut late_vis = None;
        if sweep.is_some() {
            let late: Visibility = input.parse()?;
            if !matches!(late, Visibility::Inherited) {
                late_vis = Some(Range::new(vis_span(&late).0, vis_span(&late).1));
                vis = late;
            }
        }
        let _: Token![fn] = input.parse().map_err(|e| {
            syn::Error::new(e.span(), "expected `fn`: a stencil is written `fn name(mut u: Field2, …) -> Real { … }`")
        })?;
        let mut sweep_after_fn = None;
        if sweep.is_none()
            && let Some(s) = misplaced_sweep(input)?
        {
            sweep_after_fn = Some(s.range);
            sweep = Some(s);
        }
        let name: Ident = input.parse()?;
        if let Some(range) = late_vis {
            recovered.push(range.error(format!("the visibility comes first: write `{}`", head(&vis, &sweep, &name))));
        }
        if let Some(range) = sweep_after_fn {
            recovered.push(range.error(format!(
                "the sweep comes before `fn`, after the visibility: write `{}`",
                head(&vis, &sweep, &name)
            )));
        }
        let mut generic_types = Vec::new();
        if input.peek(Token![<]) {
            let generics: syn::Generics = input.parse()?;
            generic_types = generics.type_params().map(|t| t.ident.to_string()).collect();
            recovered.push(syn::Error::new_spanned(&generics, crate::diagnose::generics(&generics)));
        }
        let content;
        let paren = parenthesized!(content in input);
        let mut params = Vec::new();
        while !content.is_empty() {
            params.push(content.parse()?);
            if content.is_empty() {
                break;
            }
            content.parse::<Token![,]>()?;
        }
        input.parse::<Token![->]>().map_err(|e| {
            syn::Error::new(e.span(), "expected `-> Real`: a stencil returns the new value of its unknown")
        })?;
        let ret: syn::Type = input.parse()?;
        if input.peek(Token![where]) {
            let clause: syn::WhereClause = input.parse()?;
            // Generic parameters were reported already; a `where` clause alone is not.
            if generic_types.is_empty() && recovered.iter().all(|e| !e.to_string().contains("generic")) {
                recovered.push(syn::Error::new_spanned(
                    &clause,
                    "a stencil takes no `where` clause: it has no generic parameters, and its element type is `Real`",
                ));
            }
        }
        let body_idents = idents(input);
        let body = block(input)?;
        Ok(Self {
            attrs,
            vis,
            sweep,
            name,
            params_span: paren.span.join(),
            params,
            ret,
            body,
            recovered,
            generic_types,
            body_idents,
        })
    }
}

/// `sweep(+, -)` as written.
fn sweep_text(ascending: &[bool]) -> String {
    let dirs: Vec<&str> = ascending.iter().map(|&up| if up { "+" } else { "-" }).collect();
    format!("sweep({})", dirs.join(", "))
}

/// The head of an item as it should be written: `pub sweep(+, -) fn name(…)`.
pub fn head(vis: &Visibility, sweep: &Option<Sweep>, name: &Ident) -> String {
    let vis =
        quote::ToTokens::to_token_stream(vis).to_string().replace(" (", "(").replace("( ", "(").replace(" )", ")");
    let vis = if vis.is_empty() { vis } else { vis + " " };
    let sweep = sweep.as_ref().map_or(String::new(), |s| sweep_text(&s.ascending) + " ");
    format!("{vis}{sweep}fn {name}(…)")
}

/// The first and last span of a visibility (`pub`, `pub(crate)`).
fn vis_span(vis: &Visibility) -> (proc_macro2::Span, proc_macro2::Span) {
    let tokens: Vec<TokenTree> = quote::ToTokens::to_token_stream(vis).into_iter().collect();
    let first = tokens.first().map_or_else(proc_macro2::Span::call_site, TokenTree::span);
    (first, tokens.last().map_or(first, TokenTree::span))
}

/// `fn sweep(+, -) name(…)`: a sweep written after `fn`. A stencil named `sweep` is not
/// one, since its parentheses hold parameters rather than directions.
fn misplaced_sweep(input: ParseStream<'_>) -> syn::Result<Option<Sweep>> {
    if !input.peek(kw::sweep) {
        return Ok(None);
    }
    let fork = input.fork();
    if fork.parse::<Sweep>().is_err() || !fork.peek(Ident) {
        return Ok(None);
    }
    input.parse().map(Some)
}

/// Every identifier of the next token tree (the body), at any depth.
fn idents(input: ParseStream<'_>) -> HashSet<String> {
    fn walk(stream: proc_macro2::TokenStream, out: &mut HashSet<String>) {
        for tt in stream {
            match tt {
                TokenTree::Ident(i) => {
                    out.insert(i.to_string());
                }
                TokenTree::Group(g) => walk(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = HashSet::new();
    if let Some((tt, _)) = input.cursor().token_tree() {
        walk(std::iter::once(tt).collect(), &mut out);
    }
    out
}

impl Parse for Sweep {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let keyword: kw::sweep = input.parse()?;
        let content;
        let paren = parenthesized!(content in input);
        let mut ascending = Vec::new();
        while !content.is_empty() {
            if content.peek(Token![+]) {
                content.parse::<Token![+]>()?;
                ascending.push(true);
            } else if content.peek(Token![-]) {
                content.parse::<Token![-]>()?;
                ascending.push(false);
            } else {
                return Err(content.error("expected `+` (ascending) or `-` (descending), one per axis"));
            }
            if !content.is_empty() {
                content.parse::<Token![,]>()?;
            }
        }
        Ok(Self { range: Range::new(keyword.span, paren.span.close()), ascending })
    }
}

impl Parse for Param {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mutability = input.parse::<Option<Token![mut]>>()?.map(|m| m.span);
        let name: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        let ty: syn::Type = input.parse()?;
        Ok(Self { mutability, name, ty })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(tokens: proc_macro2::TokenStream) -> Item {
        syn::parse2(tokens).expect("parses")
    }

    fn recovered(tokens: proc_macro2::TokenStream) -> Vec<String> {
        item(tokens).recovered.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn misplaced_sweeps_are_read_and_reported() {
        let e = recovered(quote::quote! { pub fn sweep(+, -) gs(mut u: Field2) -> Real { u[0, 0] } });
        assert!(e[0].ends_with("write `pub sweep(+, -) fn gs(…)`"), "{e:?}");
        let e = recovered(quote::quote! { sweep(+) pub(crate) fn gs(mut u: Field1) -> Real { u[0] } });
        assert!(e[0].ends_with("write `pub(crate) sweep(+) fn gs(…)`"), "{e:?}");
        let i = item(quote::quote! { sweep(+) pub fn gs(mut u: Field1) -> Real { u[0] } });
        assert!(i.sweep.is_some() && matches!(i.vis, Visibility::Public(_)));
        // A stencil may be named `sweep`.
        let i = item(quote::quote! { fn sweep(mut u: Field1) -> Real { u[0] } });
        assert!(i.recovered.is_empty() && i.sweep.is_none() && i.name == "sweep");
    }

    #[test]
    fn generics_are_read_and_reported_once() {
        let i = item(quote::quote! { fn f<T: Float>(mut u: Field1, h: T) -> T where T: Copy { u[0] } });
        assert_eq!(i.generic_types, ["T"]);
        assert_eq!(i.recovered.len(), 1, "{:?}", i.recovered.iter().map(ToString::to_string).collect::<Vec<_>>());
        let e = recovered(quote::quote! { fn f<'a>(mut u: Field1) -> Real { u[0] } });
        assert!(e[0].contains("no lifetime parameters"), "{e:?}");
        let e = recovered(quote::quote! { fn f(mut u: Field1) -> Real where Real: Copy { u[0] } });
        assert!(e[0].contains("no `where` clause"), "{e:?}");
    }

    #[test]
    fn body_identifiers_are_collected() {
        let i = item(quote::quote! { fn f(mut u: Field1, k: Field1) -> Real { for x in 0..3 { k(0) } } });
        assert!(i.body_idents.contains("k") && i.body_idents.contains("x") && !i.body_idents.contains("f"));
    }
}
