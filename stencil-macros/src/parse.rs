//! Syntax of `stencil!`: tokens → [`Input`], a parsed model that keeps spans.
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
//! [`Expr::Unsupported`] so that validation can report it together with every other error
//! of the item; only token sequences that are not expressions at all are parse errors.

use proc_macro2::{Delimiter, Span, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, Token, Visibility, braced, bracketed, parenthesized};

use crate::span::Range;

mod kw {
    syn::custom_keyword!(sweep);
}

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

pub struct Let {
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
    /// Valid Rust that the DSL does not accept; `what` names it, `hint` says what to write.
    Unsupported {
        range: Range,
        what: String,
        hint: String,
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
            | Expr::Unsupported { range, .. } => *range,
            Expr::Name(ident) => Range::single(ident.span()),
            Expr::Binary { lhs, rhs, .. } => lhs.range().to(rhs.range()),
            Expr::Block(block) => block.range,
        }
    }
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
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sweep = if input.peek(kw::sweep) { Some(input.parse()?) } else { None };
        let _: Token![fn] = input.parse().map_err(|e| {
            syn::Error::new(e.span(), "expected `fn`: a stencil is written `fn name(mut u: Field2, …) -> Real { … }`")
        })?;
        let name: Ident = input.parse()?;
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
        let body = parse_block(input)?;
        Ok(Self { attrs, vis, sweep, name, params_span: paren.span.join(), params, ret, body })
    }
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

fn parse_block(input: ParseStream<'_>) -> syn::Result<Block> {
    let content;
    let brace = braced!(content in input);
    let mut lets = Vec::new();
    let mut value = None;
    while !content.is_empty() {
        if content.peek(Token![let]) {
            content.parse::<Token![let]>()?;
            let name: Ident = content.parse()?;
            if content.peek(Token![:]) {
                return Err(content.error("write `let name = value;`: a binding takes the type of its value"));
            }
            content.parse::<Token![=]>()?;
            let v = parse_expr(&content, 0)?;
            content.parse::<Token![;]>()?;
            lets.push(Let { name, value: v });
            continue;
        }
        let e = parse_expr(&content, 0)?;
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

fn peek_binop(input: ParseStream<'_>) -> Option<BinOp> {
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
fn take_operator(input: ParseStream<'_>, chars: usize) -> syn::Result<Range> {
    let first = input.span();
    let mut last = first;
    for _ in 0..chars {
        let tt: TokenTree = input.parse()?;
        last = tt.span();
    }
    Ok(Range::new(first, last))
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

/// A binary operator of Rust that the DSL lacks: its symbol, length in characters and
/// what to write instead.
fn peek_unsupported_binop(input: ParseStream<'_>) -> Option<(&'static str, usize, &'static str)> {
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
fn peek_compound_or_assign(input: ParseStream<'_>) -> Option<(&'static str, usize)> {
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
    let start = input.span();
    if input.peek(syn::LitInt) {
        let lit: syn::LitInt = input.parse()?;
        let value = lit.base10_parse::<i64>()?;
        if !lit.suffix().is_empty() {
            return Ok(unsupported(
                lit.span().into(),
                "a literal with a type suffix",
                "write the number without a suffix; it takes the stencil's type",
            ));
        }
        return Ok(Expr::Lit { value: Lit::Int(value), range: lit.span().into() });
    }
    if input.peek(syn::LitFloat) {
        let lit: syn::LitFloat = input.parse()?;
        if !lit.suffix().is_empty() {
            return Ok(unsupported(
                lit.span().into(),
                "a literal with a type suffix",
                "write the number without a suffix; it takes the stencil's type (`Real`)",
            ));
        }
        let value = lit.base10_parse::<f64>()?;
        return Ok(Expr::Lit { value: Lit::Float(value), range: lit.span().into() });
    }
    if input.peek(syn::LitBool) {
        let lit: syn::LitBool = input.parse()?;
        return Ok(Expr::Lit { value: Lit::Bool(lit.value), range: lit.span.into() });
    }
    if input.peek(syn::Lit) {
        let lit: syn::Lit = input.parse()?;
        return Ok(unsupported(
            lit.span().into(),
            "this literal",
            "only numbers and `true`/`false` are values in a stencil",
        ));
    }
    if input.peek(syn::token::Paren) {
        let content;
        let paren = parenthesized!(content in input);
        let range = Range::new(paren.span.open(), paren.span.close());
        let inner = parse_expr(&content, 0)?;
        if !content.is_empty() {
            // The rest of the group must be consumed, or syn reports it as unexpected.
            let _ = content.parse::<proc_macro2::TokenStream>()?;
            return Ok(unsupported(range, "a tuple", "a stencil has no tuples; bind each value with `let`"));
        }
        return Ok(Expr::Paren { range, expr: Box::new(inner) });
    }
    if input.peek(syn::token::Brace) {
        return Ok(Expr::Block(parse_block(input)?));
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
        let if_token: Token![if] = input.parse()?;
        let cond = parse_expr_no_struct(input)?;
        let then = parse_block(input)?;
        let otherwise = if input.peek(Token![else]) {
            input.parse::<Token![else]>()?;
            if input.peek(Token![if]) {
                Some(Box::new(parse_primary(input)?))
            } else {
                Some(Box::new(Expr::Block(parse_block(input)?)))
            }
        } else {
            None
        };
        let end = otherwise.as_ref().map_or(then.range, |e| e.range());
        return Ok(Expr::If { range: Range::single(if_token.span).to(end), cond: Box::new(cond), then, otherwise });
    }
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
            return Ok(unsupported(Range::new(start, end), what, hint));
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
        return Ok(unsupported(
            Range::new(start, body.range().end),
            "a closure",
            "write the expression inline, or bind it with `let`",
        ));
    }
    if input.peek(Token![return]) || input.peek(Token![break]) || input.peek(Token![continue]) {
        let tt: TokenTree = input.parse()?;
        let mut range = Range::single(tt.span());
        if !input.is_empty() && !input.peek(Token![;]) {
            range = range.to(parse_expr(input, 0)?.range());
        }
        return Ok(unsupported(range, &format!("`{tt}`"), "the block's last expression is the stencil's value"));
    }
    if input.peek(Ident::peek_any) {
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
            let mut end = name.span();
            while input.peek(Token![::]) {
                input.parse::<Token![::]>()?;
                end = input.call(Ident::parse_any)?.span();
            }
            if input.peek(syn::token::Paren) {
                end = input.parse::<TokenTree>()?.span();
            }
            return Ok(unsupported(
                Range::new(name.span(), end),
                "a path",
                "call methods on values instead, e.g. `x.sqrt()` rather than `f64::sqrt(x)`",
            ));
        }
        if input.peek(syn::token::Paren) {
            let args: TokenTree = input.parse()?;
            let hint = match crate::ir::Method::from_name(&name.to_string()) {
                Some(m) => format!("call it as a method on its first argument: `{}`", m.example()),
                None => "a stencil has no functions; write the expression out, or bind a value with `let`".to_string(),
            };
            return Ok(unsupported(
                Range::new(name.span(), args.span()),
                &format!("a function call (`{name}(…)`)"),
                &hint,
            ));
        }
        if input.peek(syn::token::Bracket) {
            let content;
            let bracket = bracketed!(content in input);
            let mut offsets = Vec::new();
            while !content.is_empty() {
                offsets.push(parse_expr(&content, 0)?);
                if !content.is_empty() {
                    content.parse::<Token![,]>()?;
                }
            }
            let brackets = Range::new(bracket.span.open(), bracket.span.close());
            return Ok(Expr::Index { range: Range::single(name.span()).to(brackets), name, offsets, brackets });
        }
        return Ok(Expr::Name(name));
    }
    Err(input.error("expected an expression"))
}

/// The condition of an `if`: an expression that stops before the `{` of the branch.
fn parse_expr_no_struct(input: ParseStream<'_>) -> syn::Result<Expr> {
    // The DSL has no struct literals, so a plain expression already stops at `{`.
    parse_expr(input, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(tokens: proc_macro2::TokenStream) -> Expr {
        syn::parse::Parser::parse2(|input: ParseStream<'_>| parse_expr(input, 0), tokens).unwrap()
    }

    fn show(e: &Expr) -> String {
        match e {
            Expr::Lit { value: Lit::Int(v), .. } => v.to_string(),
            Expr::Lit { value: Lit::Float(v), .. } => format!("{v:?}"),
            Expr::Lit { value: Lit::Bool(v), .. } => v.to_string(),
            Expr::Name(n) => n.to_string(),
            Expr::Index { name, offsets, .. } => {
                format!("{name}[{}]", offsets.iter().map(show).collect::<Vec<_>>().join(","))
            }
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
            Expr::Method { receiver, method, args, .. } => {
                format!("{}.{method}({})", show(receiver), args.iter().map(show).collect::<Vec<_>>().join(","))
            }
            Expr::Unsupported { what, .. } => format!("<{what}>"),
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
            (syn::parse_quote!(sqrt(x)), "a function call (`sqrt(…)`)"),
            (syn::parse_quote!(f64::sqrt(x)), "a path"),
        ] {
            assert_eq!(show(&parse(tokens)), format!("<{what}>"));
        }
        assert_eq!(show(&parse(syn::parse_quote!(a = b + 1.0))), "<an assignment (`=`)>");
    }
}
