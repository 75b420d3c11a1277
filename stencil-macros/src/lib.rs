//! The `stencil!` macro. Use it through the facade crate `stencil`, whose documentation
//! describes the language; `docs/dsl.md` has the grammar and every compile error.

mod ctxt;
mod emit_cuda;
mod emit_rust;
mod hyperplane;
mod ir;
mod parse;
mod span;
mod validate;
mod writer;

use proc_macro::TokenStream;

/// Defines one or more stencils; see the crate `stencil` for the language.
#[proc_macro]
pub fn stencil(input: TokenStream) -> TokenStream {
    expand(input.into()).into()
}

/// Parses, checks and emits every item; the errors of all items are reported together.
fn expand(input: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    let parsed: parse::Input = match syn::parse2(input) {
        Ok(p) => p,
        Err(e) => return e.to_compile_error(),
    };
    let mut out = proc_macro2::TokenStream::new();
    for item in &parsed.items {
        match validate::lower(item) {
            Ok(stencil) => out.extend(emit_rust::emit(&stencil)),
            Err(e) => {
                out.extend(e.to_compile_error());
                out.extend(fallback(item));
            }
        }
    }
    out
}

/// On error, the types the user's code names still exist, so the only errors shown are
/// the stencil's own (thiserror's `fallback.rs` does the same).
fn fallback(item: &parse::Item) -> proc_macro2::TokenStream {
    let vis = &item.vis;
    let ty = ir::type_name(&item.name);
    let params = ir::params_name(&item.name);
    quote::quote! {
        #[allow(dead_code)]
        #vis struct #ty;
        #[allow(dead_code)]
        #vis struct #params<T>(::core::marker::PhantomData<T>);
    }
}
