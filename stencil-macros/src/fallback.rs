//! What an item that did not compile still generates (thiserror's `fallback.rs` does the
//! same): its stencil type, implementing `Stencil` when the dimension can be told, its
//! parameter struct with one field per declared scalar, and its inputs struct with one
//! field per field not marked `mut`. Code that uses the stencil then
//! type-checks, so the only errors shown are the stencil's own. None of it ever runs: the
//! crate does not compile.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::Item;
use crate::ir;

/// The placeholder items of `item`.
pub fn emit(item: &Item) -> TokenStream {
    let p = quote!(::stencil::__private);
    let vis = &item.vis;
    let ty = ir::type_name(&item.name);
    let params = ir::params_name(&item.name);
    let mut seen = Vec::new();
    let mut fields = Vec::new();
    let mut inputs = Vec::new();
    let mut dim = None;
    for param in &item.params {
        let name = param.name.to_string();
        if seen.contains(&name) {
            continue;
        }
        seen.push(name);
        match declared(&param.ty) {
            Declared::Field(d) => {
                if d > 0 {
                    dim = dim.or(Some(d));
                }
                if param.mutability.is_none() {
                    inputs.push(&param.name);
                }
            }
            Declared::Scalar(t) => {
                let n = &param.name;
                fields.push((quote!(#n), t));
            }
        }
    }
    let generic = fields.iter().any(|(_, t)| t.to_string() == "T");
    let fields = fields.iter().map(|(n, t)| quote!(pub #n: #t));
    let (params_head, params_ty) = if generic {
        (quote!(#params<T> { #(#fields,)* }), quote!(#params<T>))
    } else {
        (quote!(#params { #(#fields,)* }), quote!(#params))
    };
    let name = item.name.to_string();
    let stencil_impl = dim.map(|dim| stencil_impl(&ty, dim, &params_ty));
    let inputs = inputs_struct(item, dim, &inputs);
    quote! {
        #[allow(dead_code, missing_docs)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        #vis struct #ty;

        #[allow(dead_code, missing_docs)]
        impl #ty {
            pub const META: &'static #p::StencilMeta = &#p::StencilMeta {
                name: #name,
                dim: 0,
                fields: &[],
                unknown: 0,
                unknowns: &[],
                params: &[],
                reads: &[],
                radius: &[],
                sweep: None,
                flops: 0,
                arrays_per_point: 0,
            };
            pub const CUDA_SOURCE: &'static str = "";
        }

        #stencil_impl

        #[allow(dead_code, missing_docs, non_snake_case)]
        #[derive(Clone, Copy, Debug, PartialEq)]
        #vis struct #params_head

        #inputs

        impl #p::Sealed for #ty {}
    }
}

/// The inputs struct, over grids of the stencil's dimension (any, when it cannot be told),
/// implementing `InputFields`.
fn inputs_struct(item: &Item, dim: Option<usize>, inputs: &[&syn::Ident]) -> TokenStream {
    let p = quote!(::stencil::__private);
    let vis = &item.vis;
    let ty = ir::type_name(&item.name);
    let name = ir::inputs_name(&item.name);
    let (generics, n) = match dim {
        Some(d) => (quote!(), quote!(#d)),
        None => (quote!(, const N: usize), quote!(N)),
    };
    let (head, self_ty) = if inputs.is_empty() {
        (quote!(#name;), quote!(#name))
    } else {
        let args = if dim.is_some() { quote!(<'a, T>) } else { quote!(<'a, T, N>) };
        (quote!(#name<'a, T: #p::Real #generics> { #(pub #inputs: &'a #p::Grid<T, #n>,)* }), quote!(#name #args))
    };
    quote! {
        #[allow(dead_code, missing_docs, non_snake_case)]
        #[derive(Clone, Copy, Debug)]
        #vis struct #head

        impl<'a, T: #p::Real #generics> #p::InputFields<'a, #ty, T, #n> for #self_ty {
            fn fields(self) -> ::std::vec::Vec<(&'static str, &'a #p::Grid<T, #n>)> {
                ::core::unreachable!()
            }
        }
    }
}

/// `impl Stencil<dim> for ty`, whose functions are never called.
fn stencil_impl(ty: &syn::Ident, dim: usize, params_ty: &TokenStream) -> TokenStream {
    let p = quote!(::stencil::__private);
    quote! {
        impl #p::Stencil<#dim> for #ty {
            type Params<T: #p::Real> = #params_ty;
            const META: &'static #p::StencilMeta = #ty::META;
            const CUDA_SOURCE: &'static str = "";
            const KERNELS: &'static #p::KernelManifest = &#p::KernelManifest::NONE;
            fn point<T: #p::Real>(_: impl Fn(usize) -> T, _: &Self::Params<T>) -> T {
                ::core::unreachable!()
            }
            fn apply_row<T: #p::Real>(_: &[&[T]], _: &mut [T], _: &Self::Params<T>) {
                ::core::unreachable!()
            }
            fn param_values<T: #p::Real>(_: &Self::Params<T>) -> ::std::vec::Vec<#p::ScalarValue<T>> {
                ::core::unreachable!()
            }
            fn params_from_values<T: #p::Real>(_: &[(&str, f64)]) -> #p::Result<Self::Params<T>> {
                ::core::unreachable!()
            }
        }
    }
}

enum Declared {
    Field(usize),
    Scalar(TokenStream),
}

/// What a parameter's type declares, read as its fix would read it (`&Field2` and
/// `Field2` are fields, `f64` and `Real` are `T`).
fn declared(ty: &syn::Type) -> Declared {
    let ty = match ty {
        syn::Type::Reference(r) => &*r.elem,
        other => other,
    };
    let name = match ty {
        syn::Type::Path(p) => p.path.get_ident().map(ToString::to_string),
        _ => None,
    };
    match name.as_deref() {
        Some("Field1") => Declared::Field(1),
        Some("Field2") => Declared::Field(2),
        Some("Field3") => Declared::Field(3),
        Some(t) if t.starts_with("Field") => Declared::Field(0),
        Some("i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128" | "usize") => {
            Declared::Scalar(quote!(i32))
        }
        Some("bool") => Declared::Scalar(quote!(bool)),
        _ => Declared::Scalar(quote!(T)),
    }
}
