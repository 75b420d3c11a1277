//! Blocks and expressions: precedence climbing over the binary operators, with the
//! unary operators, method calls and primaries below them. Rust that the language lacks
//! becomes [`Expr::Unsupported`], and mistakes with a known fix [`Expr::Mistake`].

use proc_macro2::{Delimiter, Span, TokenTree};
use syn::ext::IdentExt;
use syn::parse::ParseStream;
use syn::{Ident, Token, braced, bracketed, parenthesized};

use super::operators::{peek_binop, peek_compound_or_assign, peek_unsupported_binop, take_operator};
use crate::ast::{BinOp, Block, Expr, Let, Lit, UnOp};
use crate::diagnose;
use crate::span::Range;

/// `{ let a = …; value }`.
pub fn block(input: ParseStream<'_>) -> syn::Result<Block> {
    let content;
    let brace = braced!(content in input);
    let mut lets = Vec::new();
    let mut value = None;
    while !content.is_empty() {
        if content.peek(Token![let]) {
            content.parse::<Token![let]>()?;
            // `let mut` is read as `let` and reported by validation with the item's other errors.
            let mutability = content.parse::<Option<Token![mut]>>()?.map(|m| m.span);
            let name: Ident = content.parse()?;
            if content.peek(Token![:]) {
                return Err(content.error("write `let name = value;`: a binding takes the type of its value"));
            }
            content.parse::<Token![=]>()?;
            let v = expr(&content)?;
            content.parse::<Token![;]>()?;
            lets.push(Let { mutability, name, value: v });
            continue;
        }
        let e = expr(&content)?;
        if content.peek(Token![;]) {
            let semi: Token![;] = content.parse()?;
            if content.is_empty() {
                return Err(syn::Error::new(semi.span, "remove this `;`: the block's last expression is its value"));
            }
            return Err(Range::new(e.range().start, semi.span).error(
                "only `let` statements may stand before the block's value: bind this value with `let name = …;`, or remove it",
            ));
        }
        if !content.is_empty() {
            return Err(content.error(
                "expected the end of the block after its value: a block has one value, its last expression; combine values with an operator, or bind them with `let`",
            ));
        }
        value = Some(Box::new(e));
    }
    Ok(Block { range: Range::new(brace.span.open(), brace.span.close()), lets, value })
}

/// One whole expression.
pub fn expr(input: ParseStream<'_>) -> syn::Result<Expr> {
    parse_expr(input, 0)
}

/// Precedence climbing over `binop`; `min` is the lowest precedence accepted.
fn parse_expr(input: ParseStream<'_>, min: u8) -> syn::Result<Expr> {
    let mut lhs = parse_unary(input)?;
    loop {
        if let Some(op) = peek_compound_or_assign(input) {
            let op_range = take_operator(input, op.1)?;
            let rhs = parse_expr(input, 0)?;
            let range = lhs.range().to(rhs.range());
            let _ = op_range;
            lhs = Expr::Unsupported {
                range,
                what: format!("an assignment (`{}`)", op.0),
                hint: "a stencil returns the new value of its unknown rather than assigning it; make that value the block's last expression, and use `let` for intermediate values".into(),
            };
            continue;
        }
        if input.peek(Token![as]) {
            let as_token: Token![as] = input.parse()?;
            let ty: syn::Type = input.parse()?;
            let _ = as_token;
            let end = quote::ToTokens::to_token_stream(&ty).into_iter().last().map_or(lhs.range().end, |t| t.span());
            lhs = Expr::Unsupported {
                range: Range::new(lhs.range().start, end),
                what: "a cast (`as`)".into(),
                hint: "values are `Real` already, and `i32` parameters convert to `Real` where they meet one".into(),
            };
            continue;
        }
        if let Some((symbol, chars, hint)) = peek_unsupported_binop(input) {
            // Bound as tightly as `*`, so that the error underlines the operation alone.
            if BinOp::Mul.precedence() < min {
                break;
            }
            let op_range = take_operator(input, chars)?;
            let rhs = parse_expr(input, BinOp::Mul.precedence() + 1)?;
            let _ = op_range;
            lhs = unsupported(lhs.range().to(rhs.range()), &format!("the operator `{symbol}`"), hint);
            continue;
        }
        if input.peek(Token![?]) {
            // The loosest operator of all: the whole expression before it is its condition.
            if min > 0 {
                break;
            }
            lhs = question(input, lhs)?;
            continue;
        }
        let Some(op) = peek_binop(input) else { break };
        let prec = op.precedence();
        if prec < min {
            break;
        }
        let op_range = take_operator(input, op.symbol().len())?;
        // Left-associative: the right operand binds tighter.
        let rhs = parse_expr(input, prec + 1)?;
        lhs = Expr::Binary { op, op_range, lhs: Box::new(lhs), rhs: Box::new(rhs) };
    }
    Ok(lhs)
}

/// C's conditional operator `cond ? a : b`, or Rust's `?` operator after `cond`: neither is
/// in the language, and both are reported with what to write instead.
fn question(input: ParseStream<'_>, cond: Expr) -> syn::Result<Expr> {
    let mark: Token![?] = input.parse()?;
    let fork = input.fork();
    let conditional = parse_expr(&fork, 0).is_ok() && fork.peek(Token![:]) && !fork.peek(Token![::]);
    if !conditional {
        return Ok(Expr::Mistake {
            range: cond.range().to(mark.span.into()),
            message: "the `?` operator is not in the language: a stencil has no errors to pass on; to choose between values write `if cond { a } else { b }`".into(),
        });
    }
    let then = parse_expr(input, 0)?;
    input.parse::<Token![:]>()?;
    let otherwise = parse_expr(input, 0)?;
    Ok(Expr::Mistake {
        range: cond.range().to(otherwise.range()),
        message: diagnose::ternary(&cond, &then, &otherwise),
    })
}

fn parse_unary(input: ParseStream<'_>) -> syn::Result<Expr> {
    let op = if input.peek(Token![-]) {
        Some(UnOp::Neg)
    } else if input.peek(Token![!]) && !input.peek(Token![!=]) {
        Some(UnOp::Not)
    } else {
        None
    };
    if input.peek(Token![+]) {
        let plus: Token![+] = input.parse()?;
        let expr = parse_unary(input)?;
        return Ok(unsupported(
            Range::single(plus.span).to(expr.range()),
            "a unary `+`",
            "write the value without it, e.g. `u[1]` rather than `u[+1]`",
        ));
    }
    if let Some(op) = op {
        let tt: TokenTree = input.parse()?;
        let expr = parse_unary(input)?;
        let range = Range::single(tt.span()).to(expr.range());
        return Ok(Expr::Unary { op, range, expr: Box::new(expr) });
    }
    parse_postfix(input)
}

fn parse_postfix(input: ParseStream<'_>) -> syn::Result<Expr> {
    let mut expr = parse_primary(input)?;
    while input.peek(Token![.]) {
        input.parse::<Token![.]>()?;
        if input.peek(syn::LitInt) || input.peek(syn::LitFloat) {
            let tt: TokenTree = input.parse()?;
            expr = unsupported(
                expr.range().to(tt.span().into()),
                "a tuple field",
                "a stencil has no tuples; bind each value with `let`",
            );
            continue;
        }
        let method = input.call(Ident::parse_any)?;
        if !input.peek(syn::token::Paren) {
            expr = unsupported(
                expr.range().to(method.span().into()),
                "a field access",
                "a stencil has no structs; call a method with parentheses, e.g. `x.sqrt()`",
            );
            continue;
        }
        let content;
        let paren = parenthesized!(content in input);
        let mut args = Vec::new();
        while !content.is_empty() {
            args.push(parse_expr(&content, 0)?);
            if !content.is_empty() {
                content.parse::<Token![,]>()?;
            }
        }
        let range = expr.range().to(Range::single(paren.span.close()));
        expr = Expr::Method { receiver: Box::new(expr), method, args, range };
    }
    Ok(expr)
}

fn unsupported(range: Range, what: &str, hint: &str) -> Expr {
    Expr::Unsupported { range, what: what.into(), hint: hint.into() }
}

/// Skips token trees up to and including the next `{ … }` group (the body of a loop,
/// `match` or `while`), returning the span of its closing brace.
fn skip_through_brace(input: ParseStream<'_>) -> syn::Result<Span> {
    loop {
        let tt: TokenTree = input.parse()?;
        if let TokenTree::Group(g) = &tt
            && g.delimiter() == Delimiter::Brace
        {
            return Ok(g.span_close());
        }
    }
}

fn parse_primary(input: ParseStream<'_>) -> syn::Result<Expr> {
    if let Some(lit) = literal(input)? {
        return Ok(lit);
    }
    if input.peek(syn::token::Paren) {
        let content;
        let paren = parenthesized!(content in input);
        let range = Range::new(paren.span.open(), paren.span.close());
        let inner = parse_expr(&content, 0)?;
        if content.is_empty() {
            return Ok(Expr::Paren { range, expr: Box::new(inner) });
        }
        // `(a, b)`: validation accepts it only as the new values of several unknowns.
        let mut elems = vec![inner];
        while !content.is_empty() {
            content.parse::<Token![,]>()?;
            if content.is_empty() {
                break;
            }
            elems.push(parse_expr(&content, 0)?);
        }
        return Ok(Expr::Tuple { range, elems });
    }
    if input.peek(syn::token::Brace) {
        return Ok(Expr::Block(block(input)?));
    }
    if input.peek(syn::token::Bracket) {
        let content;
        let bracket = bracketed!(content in input);
        let _ = content.parse::<proc_macro2::TokenStream>()?;
        return Ok(unsupported(
            Range::new(bracket.span.open(), bracket.span.close()),
            "an array",
            "a stencil has no arrays; read fields at offsets, e.g. `u[0, 1]`",
        ));
    }
    if input.peek(Token![if]) {
        return if_expr(input);
    }
    if let Some(e) = other_rust(input)? {
        return Ok(e);
    }
    if input.peek(Ident::peek_any) {
        return named(input);
    }
    Err(input.error("expected an expression"))
}

/// A number or `true` / `false`; other literals are unsupported.
fn literal(input: ParseStream<'_>) -> syn::Result<Option<Expr>> {
    let suffixed = |span: Span, hint: &str| Ok(Some(unsupported(span.into(), "a literal with a type suffix", hint)));
    if input.peek(syn::LitInt) {
        let lit: syn::LitInt = input.parse()?;
        let value = lit.base10_parse::<i64>()?;
        if !lit.suffix().is_empty() {
            return suffixed(lit.span(), "write the number without a suffix; it takes the stencil's type");
        }
        return Ok(Some(Expr::Lit { value: Lit::Int(value), range: lit.span().into() }));
    }
    if input.peek(syn::LitFloat) {
        let lit: syn::LitFloat = input.parse()?;
        if !lit.suffix().is_empty() {
            return suffixed(lit.span(), "write the number without a suffix; it takes the stencil's type (`Real`)");
        }
        let value = lit.base10_parse::<f64>()?;
        return Ok(Some(Expr::Lit { value: Lit::Float(value), range: lit.span().into() }));
    }
    if input.peek(syn::LitBool) {
        let lit: syn::LitBool = input.parse()?;
        return Ok(Some(Expr::Lit { value: Lit::Bool(lit.value), range: lit.span.into() }));
    }
    if input.peek(syn::Lit) {
        let lit: syn::Lit = input.parse()?;
        return Ok(Some(unsupported(
            lit.span().into(),
            "this literal",
            "only numbers and `true`/`false` are values in a stencil",
        )));
    }
    Ok(None)
}

/// `if cond { … } else …`; a missing `else` is reported by validation.
fn if_expr(input: ParseStream<'_>) -> syn::Result<Expr> {
    let if_token: Token![if] = input.parse()?;
    // The DSL has no struct literals, so a plain expression already stops at `{`.
    let cond = parse_expr(input, 0)?;
    let then = block(input)?;
    let otherwise = if input.peek(Token![else]) {
        input.parse::<Token![else]>()?;
        if input.peek(Token![if]) {
            Some(Box::new(parse_primary(input)?))
        } else {
            Some(Box::new(Expr::Block(block(input)?)))
        }
    } else {
        None
    };
    let end = otherwise.as_ref().map_or(then.range, |e| e.range());
    Ok(Expr::If { range: Range::single(if_token.span).to(end), cond: Box::new(cond), then, otherwise })
}

/// Loops, `match`, `unsafe`, closures, `return`, `break` and `continue`, read whole.
fn other_rust(input: ParseStream<'_>) -> syn::Result<Option<Expr>> {
    let start = input.span();
    for (peeked, what) in [
        (input.peek(Token![loop]), "a `loop`"),
        (input.peek(Token![while]), "a `while` loop"),
        (input.peek(Token![for]), "a `for` loop"),
        (input.peek(Token![match]), "a `match`"),
        (input.peek(Token![unsafe]), "an `unsafe` block"),
    ] {
        if peeked {
            let end = skip_through_brace(input)?;
            let hint = if what.contains("match") {
                "choose between values with `if c { a } else if d { b } else { e }`"
            } else if what.contains("unsafe") {
                "nothing in a stencil is unsafe; write the block without `unsafe`"
            } else {
                "a stencil computes one point; the schedule runs it over the grid, and `if … else …` chooses between values"
            };
            return Ok(Some(unsupported(Range::new(start, end), what, hint)));
        }
    }
    if input.peek(Token![|]) || input.peek(Token![||]) || input.peek(Token![move]) {
        input.parse::<Option<Token![move]>>()?;
        if input.peek(Token![||]) {
            input.parse::<Token![||]>()?;
        } else {
            input.parse::<Token![|]>()?;
            while !input.peek(Token![|]) {
                input.parse::<TokenTree>()?;
            }
            input.parse::<Token![|]>()?;
        }
        let body = parse_expr(input, 0)?;
        let range = Range::new(start, body.range().end);
        return Ok(Some(unsupported(range, "a closure", "write the expression inline, or bind it with `let`")));
    }
    if input.peek(Token![return]) || input.peek(Token![break]) || input.peek(Token![continue]) {
        let tt: TokenTree = input.parse()?;
        let mut range = Range::single(tt.span());
        if !input.is_empty() && !input.peek(Token![;]) {
            range = range.to(parse_expr(input, 0)?.range());
        }
        let what = format!("`{tt}`");
        return Ok(Some(unsupported(range, &what, "the block's last expression is the stencil's value")));
    }
    Ok(None)
}

/// What starts with a name: a name, a read `u[…]` (or `u[…][…]`), a call `f(…)`, a macro
/// call or a path.
fn named(input: ParseStream<'_>) -> syn::Result<Expr> {
    let name = input.call(Ident::parse_any)?;
    if input.peek(Token![!]) && !input.peek(Token![!=]) {
        let bang: Token![!] = input.parse()?;
        let group: TokenTree = input.parse().map_err(|_| syn::Error::new(bang.span, "expected a macro call"))?;
        return Ok(unsupported(
            Range::new(name.span(), group.span()),
            &format!("a macro call (`{name}!`)"),
            "macros cannot be translated to CUDA; write the expression out",
        ));
    }
    if input.peek(Token![::]) {
        return path(input, name);
    }
    if input.peek(syn::token::Paren) {
        let args: proc_macro2::Group = input.parse()?;
        let range = Range::new(name.span(), args.span_close());
        // Arguments that are not expressions leave the call without them; it is an error
        // either way.
        let args = syn::parse::Parser::parse2(comma_separated, args.stream()).unwrap_or_default();
        return Ok(Expr::Call { name, args, range });
    }
    if !input.peek(syn::token::Bracket) {
        return Ok(Expr::Name(name));
    }
    let (offsets, brackets) = bracketed_offsets(input)?;
    if !input.peek(syn::token::Bracket) {
        return Ok(Expr::Index { range: Range::single(name.span()).to(brackets), name, offsets, brackets });
    }
    // `u[-1][0]`: every bracket's offsets, for the message.
    let mut all = offsets;
    let mut end = brackets;
    while input.peek(syn::token::Bracket) {
        let (more, range) = bracketed_offsets(input)?;
        all.extend(more);
        end = range;
    }
    Ok(Expr::Mistake { range: Range::single(name.span()).to(end), message: diagnose::chained_index(&name, &all) })
}

/// `[e, e, …]`, with the range of the brackets.
fn bracketed_offsets(input: ParseStream<'_>) -> syn::Result<(Vec<Expr>, Range)> {
    let content;
    let bracket = bracketed!(content in input);
    Ok((comma_separated(&content)?, Range::new(bracket.span.open(), bracket.span.close())))
}

/// `e, e, …` up to the end of the stream; a trailing comma is allowed.
fn comma_separated(input: ParseStream<'_>) -> syn::Result<Vec<Expr>> {
    let mut items = Vec::new();
    while !input.is_empty() {
        items.push(parse_expr(input, 0)?);
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    Ok(items)
}

/// `a::b::c` or `a::b::c(…)`, after its first segment `first`.
fn path(input: ParseStream<'_>, first: Ident) -> syn::Result<Expr> {
    let mut last = first.clone();
    while input.peek(Token![::]) {
        input.parse::<Token![::]>()?;
        last = input.call(Ident::parse_any)?;
    }
    if input.peek(syn::token::Paren) {
        let args: TokenTree = input.parse()?;
        let range = Range::new(first.span(), args.span());
        return Ok(Expr::Mistake { range, message: diagnose::path_call(&last.to_string()) });
    }
    let range = Range::new(first.span(), last.span());
    Ok(Expr::Mistake { range, message: diagnose::path_value(&last.to_string()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(tokens: proc_macro2::TokenStream) -> Expr {
        syn::parse::Parser::parse2(expr, tokens).unwrap()
    }

    fn list(items: &[Expr]) -> String {
        items.iter().map(show).collect::<Vec<_>>().join(",")
    }

    fn show(e: &Expr) -> String {
        match e {
            Expr::Lit { value: Lit::Int(v), .. } => v.to_string(),
            Expr::Lit { value: Lit::Float(v), .. } => format!("{v:?}"),
            Expr::Lit { value: Lit::Bool(v), .. } => v.to_string(),
            Expr::Name(n) => n.to_string(),
            Expr::Index { name, offsets, .. } => format!("{name}[{}]", list(offsets)),
            Expr::Unary { op: UnOp::Neg, expr, .. } => format!("(-{})", show(expr)),
            Expr::Unary { op: UnOp::Not, expr, .. } => format!("(!{})", show(expr)),
            Expr::Binary { op, lhs, rhs, .. } => format!("({} {} {})", show(lhs), op.symbol(), show(rhs)),
            Expr::Paren { expr, .. } => show(expr),
            Expr::If { cond, then, otherwise, .. } => format!(
                "if {} {{{}}} else {{{}}}",
                show(cond),
                then.value.as_ref().map_or(String::new(), |v| show(v)),
                otherwise.as_ref().map_or(String::new(), |v| show(v))
            ),
            Expr::Block(b) => b.value.as_ref().map_or(String::new(), |v| show(v)),
            Expr::Method { receiver, method, args, .. } => format!("{}.{method}({})", show(receiver), list(args)),
            Expr::Call { name, args, .. } => format!("{name}({})", list(args)),
            Expr::Tuple { elems, .. } => format!("({})", list(elems)),
            Expr::Unsupported { what, .. } => format!("<{what}>"),
            Expr::Mistake { message, .. } => format!("<{message}>"),
        }
    }

    #[test]
    fn precedence_and_associativity_follow_rust() {
        let e = parse(syn::parse_quote!(a - b - c * d / e + -f.abs()));
        assert_eq!(show(&e), "(((a - b) - ((c * d) / e)) + (-f.abs()))");
        let e = parse(syn::parse_quote!(a < b && !c || d >= 1.5));
        assert_eq!(show(&e), "(((a < b) && (!c)) || (d >= 1.5))");
    }

    #[test]
    fn reads_methods_and_if() {
        let e = parse(syn::parse_quote!(if u[-1, 0] > 0.0 { u[0, 0].max(x) } else { 2 }));
        assert_eq!(show(&e), "if (u[(-1),0] > 0.0) {u[0,0].max(x)} else {2}");
    }

    #[test]
    fn rust_outside_the_dsl_becomes_unsupported() {
        for (tokens, what) in [
            (
                syn::parse_quote!(loop {
                    x
                }),
                "a `loop`",
            ),
            (syn::parse_quote!(|x| x + 1.0), "a closure"),
            (syn::parse_quote!(println!("hi")), "a macro call (`println!`)"),
        ] {
            assert_eq!(show(&parse(tokens)), format!("<{what}>"));
        }
        assert_eq!(show(&parse(syn::parse_quote!(a = b + 1.0))), "<an assignment (`=`)>");
        // Calls are kept with their arguments: what they mean depends on the name.
        assert_eq!(show(&parse(syn::parse_quote!(u(-1, 0) + 1))), "(u((-1),0) + 1)");
    }

    #[test]
    fn known_mistakes_say_what_to_write() {
        let message = |tokens| match parse(tokens) {
            Expr::Mistake { message, .. } => message,
            other => panic!("not a mistake: {}", show(&other)),
        };
        assert!(message(syn::parse_quote!(u[-1][0])).ends_with("write `u[-1, 0]`"));
        assert!(message(syn::parse_quote!(a > 0.0 ? a : -a)).ends_with("write `if a > 0.0 { a } else { -a }`"));
        assert!(message(syn::parse_quote!(x?)).contains("the `?` operator"));
        assert!(message(syn::parse_quote!(std::f64::consts::PI)).contains("`3.141592653589793`"));
        assert!(message(syn::parse_quote!(f64::sqrt(x))).contains("rather than `f64::sqrt(x)`"));
        assert!(message(syn::parse_quote!(f64::from(n))).contains("no conversion is needed"));
        // The conditional operator binds loosest: its condition is everything before `?`.
        let e = parse(syn::parse_quote!(a + b > c ? x : y));
        assert!(matches!(e, Expr::Mistake { ref message, .. } if message.contains("if a + b > c { x }")));
    }
}
