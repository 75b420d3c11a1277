//! Collects every error of an item before any is reported (serde_derive's `Ctxt`).

use crate::span::Range;

#[derive(Default)]
pub struct Ctxt {
    errors: Vec<syn::Error>,
}

impl Ctxt {
    pub fn error(&mut self, at: impl Into<Range>, message: impl std::fmt::Display) {
        self.errors.push(at.into().error(message));
    }

    pub fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// All errors combined into one, or `Ok` if there were none.
    pub fn check(self) -> syn::Result<()> {
        let mut errors = self.errors.into_iter();
        match errors.next() {
            None => Ok(()),
            Some(mut first) => {
                for e in errors {
                    first.combine(e);
                }
                Err(first)
            }
        }
    }
}
