//! Source ranges for error messages.

use proc_macro2::{Punct, Spacing, Span, TokenStream};
use quote::{ToTokens, TokenStreamExt};

/// A range of source tokens: errors built from it underline everything from `start` to
/// `end` on stable Rust (syn takes the first and last token's spans).
#[derive(Clone, Copy, Debug)]
pub struct Range {
    pub start: Span,
    pub end: Span,
}

impl Range {
    pub fn new(start: Span, end: Span) -> Self {
        Self { start, end }
    }

    pub fn single(span: Span) -> Self {
        Self { start: span, end: span }
    }

    /// From the start of `self` to the end of `other`.
    pub fn to(self, other: Range) -> Self {
        Self { start: self.start, end: other.end }
    }

    pub fn error(self, message: impl std::fmt::Display) -> syn::Error {
        syn::Error::new_spanned(self, message)
    }
}

impl From<Span> for Range {
    fn from(span: Span) -> Self {
        Self::single(span)
    }
}

impl ToTokens for Range {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        for span in [self.start, self.end] {
            let mut p = Punct::new('+', Spacing::Alone);
            p.set_span(span);
            tokens.append(p);
        }
    }
}
