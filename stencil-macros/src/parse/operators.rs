//! The operator tokens of expressions: those of the language, Rust's that it lacks, and
//! assignments. Longer tokens are tried first (`==` before `=`, `<=` before `<`).

use proc_macro2::TokenTree;
use syn::Token;
use syn::parse::ParseStream;

use crate::ast::BinOp;
use crate::span::Range;

/// The binary operator of the language at the cursor, if any.
pub fn peek_binop(input: ParseStream<'_>) -> Option<BinOp> {
    // Longer tokens first: `==` before `=`, `<=` before `<`, `&&` before `&`.
    if input.peek(Token![==]) {
        Some(BinOp::Eq)
    } else if input.peek(Token![!=]) {
        Some(BinOp::Ne)
    } else if input.peek(Token![<=]) {
        Some(BinOp::Le)
    } else if input.peek(Token![>=]) {
        Some(BinOp::Ge)
    } else if input.peek(Token![&&]) {
        Some(BinOp::And)
    } else if input.peek(Token![||]) {
        Some(BinOp::Or)
    } else if input.peek(Token![+=]) || input.peek(Token![-=]) || input.peek(Token![*=]) || input.peek(Token![/=]) {
        None
    } else if input.peek(Token![<]) {
        Some(BinOp::Lt)
    } else if input.peek(Token![>]) {
        Some(BinOp::Gt)
    } else if input.peek(Token![+]) {
        Some(BinOp::Add)
    } else if input.peek(Token![-]) {
        Some(BinOp::Sub)
    } else if input.peek(Token![*]) {
        Some(BinOp::Mul)
    } else if input.peek(Token![/]) {
        Some(BinOp::Div)
    } else {
        None
    }
}

/// Consumes one operator token (one or two punctuation characters) and returns its range.
pub fn take_operator(input: ParseStream<'_>, chars: usize) -> syn::Result<Range> {
    let first = input.span();
    let mut last = first;
    for _ in 0..chars {
        let tt: TokenTree = input.parse()?;
        last = tt.span();
    }
    Ok(Range::new(first, last))
}

/// A binary operator of Rust that the DSL lacks: its symbol, length in characters and
/// what to write instead.
pub fn peek_unsupported_binop(input: ParseStream<'_>) -> Option<(&'static str, usize, &'static str)> {
    if input.peek(Token![&&]) || input.peek(Token![||]) {
        None
    } else if input.peek(Token![^]) {
        Some(("^", 1, "for a power write `x.powi(2)` (an integer exponent) or `(y * x.ln()).exp()` (a real one)"))
    } else if input.peek(Token![%]) {
        Some(("%", 1, "a stencil computes with `+`, `-`, `*`, `/` and the methods, and has no remainder"))
    } else if input.peek(Token![&]) {
        Some(("&", 1, "to combine conditions write `&&`"))
    } else if input.peek(Token![|]) {
        Some(("|", 1, "to combine conditions write `||`"))
    } else if input.peek(Token![<<]) {
        Some(("<<", 2, "a stencil has no bit shifts; multiply by a power of two instead"))
    } else if input.peek(Token![>>]) {
        Some((">>", 2, "a stencil has no bit shifts; divide by a power of two instead"))
    } else {
        None
    }
}

/// `=` or a compound assignment, with its length in characters.
pub fn peek_compound_or_assign(input: ParseStream<'_>) -> Option<(&'static str, usize)> {
    if input.peek(Token![<<=]) {
        Some(("<<=", 3))
    } else if input.peek(Token![>>=]) {
        Some((">>=", 3))
    } else if input.peek(Token![%=]) {
        Some(("%=", 2))
    } else if input.peek(Token![^=]) {
        Some(("^=", 2))
    } else if input.peek(Token![&=]) {
        Some(("&=", 2))
    } else if input.peek(Token![|=]) {
        Some(("|=", 2))
    } else if input.peek(Token![+=]) {
        Some(("+=", 2))
    } else if input.peek(Token![-=]) {
        Some(("-=", 2))
    } else if input.peek(Token![*=]) {
        Some(("*=", 2))
    } else if input.peek(Token![/=]) {
        Some(("/=", 2))
    } else if input.peek(Token![=]) && !input.peek(Token![==]) && !input.peek(Token![=>]) {
        Some(("=", 1))
    } else {
        None
    }
}
