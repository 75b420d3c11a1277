//! IR → the Rust half: the stencil type, its parameter struct, metadata and point
//! function (the CPU twin). Generated code names only `::stencil::__private` paths.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use syn::ext::IdentExt;

use crate::ir::{self, BinOp, ExprKind, Method, Stencil, Ty, UnOp};

pub fn emit(s: &Stencil) -> TokenStream {
    let p = quote!(::stencil::__private);
    let docs = &s.docs;
    let vis = &s.vis;
    let ty_name = s.type_name();
    let type_doc_default = format!("The stencil `{}`.", s.name);
    let type_docs = if docs.is_empty() { quote!(#[doc = #type_doc_default]) } else { quote!(#(#docs)*) };
    let params = emit_params(s);
    let meta = emit_meta(s, &p);
    let cuda_source = crate::emit_cuda::emit(s);
    let kernels = crate::emit_cuda::manifest(s);
    let inputs = emit_inputs(s, &p);
    let stencil_impl = emit_stencil_impl(s, &p);
    quote! {
        #type_docs
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        #vis struct #ty_name;

        impl #ty_name {
            /// The stencil's metadata.
            pub const META: &'static #p::StencilMeta = #meta;

            /// The stencil's CUDA translation unit (point function, plain, measuring and
            /// tiled kernels), JIT-compiled with NVRTC at run time.
            pub const CUDA_SOURCE: &'static str = #cuda_source;

            /// The contract of the kernels in `CUDA_SOURCE`: their symbols, parameters,
            /// definitions and the facts their launch geometry follows.
            pub const KERNELS: &'static #p::KernelManifest = #kernels;
        }

        #params

        #inputs

        impl #p::Sealed for #ty_name {}

        #stencil_impl
    }
}

/// The inputs struct `NameInputs`: one public field per read-only field, a reference to
/// its grid, so that a field left out or misspelt is a compile error.
fn emit_inputs(s: &Stencil, p: &TokenStream) -> TokenStream {
    let vis = &s.vis;
    let name = s.inputs_name();
    let ty_name = s.type_name();
    let dim = s.dim;
    let doc = format!("The read-only fields of [`{ty_name}`], for `Solver::inputs`.");
    let inputs: Vec<&ir::Field> =
        s.fields.iter().enumerate().filter(|(i, _)| !s.unknowns.contains(i)).map(|(_, f)| f).collect();
    let names: Vec<&syn::Ident> = inputs.iter().map(|f| &f.name).collect();
    let keys = inputs.iter().map(|f| f.name.unraw().to_string());
    let docs = inputs.iter().map(|f| format!("The grid of `{}`.", f.name.unraw()));
    if inputs.is_empty() {
        return quote! {
            #[doc = #doc]
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            #[allow(dead_code)]
            #vis struct #name;

            impl<'a, T: #p::Real> #p::InputFields<'a, #ty_name, T, #dim> for #name {
                fn fields(self) -> ::std::vec::Vec<(&'static str, &'a #p::Grid<T, #dim>)> {
                    ::std::vec::Vec::new()
                }
            }
        };
    }
    quote! {
        #[doc = #doc]
        #[derive(Clone, Copy, Debug)]
        #[allow(dead_code, non_snake_case)]
        #vis struct #name<'a, T: #p::Real> {
            #(#[doc = #docs] pub #names: &'a #p::Grid<T, #dim>,)*
        }

        impl<'a, T: #p::Real> #p::InputFields<'a, #ty_name, T, #dim> for #name<'a, T> {
            fn fields(self) -> ::std::vec::Vec<(&'static str, &'a #p::Grid<T, #dim>)> {
                ::std::vec![#((#keys, self.#names)),*]
            }
        }
    }
}

/// Whether the parameter struct takes the element type: only a stencil with a `Real`
/// scalar has a field of type `T`. Without one the struct is not generic, so that it can be
/// written as a plain struct literal (`PickParams { n: 1 }`), with no marker field.
fn params_generic(s: &Stencil) -> bool {
    s.scalars.iter().any(|sc| sc.ty == Ty::Real)
}

/// The parameter struct as a type: `NameParams<T>` or `NameParams`.
fn params_type(s: &Stencil) -> TokenStream {
    let name = s.params_name();
    if params_generic(s) { quote!(#name<T>) } else { quote!(#name) }
}

/// The parameter struct `NameParams`, one public field per scalar, and its constructor.
fn emit_params(s: &Stencil) -> TokenStream {
    let vis = &s.vis;
    let name = s.params_name();
    let doc = format!("Run-time parameters of [`{}`].", s.type_name());
    let fields = s.scalars.iter().map(|sc| {
        let n = &sc.name;
        let t = scalar_type(sc.ty);
        let doc = format!("`{}`: {}.", n, if sc.ty == Ty::Real { "`Real`" } else { "`i32`" });
        quote!(#[doc = #doc] pub #n: #t)
    });
    let args = s.scalars.iter().map(|sc| {
        let n = &sc.name;
        let t = scalar_type(sc.ty);
        quote!(#n: #t)
    });
    let inits = s.scalars.iter().map(|sc| &sc.name);
    // The fields are named as the stencil's parameters, which follow the stencil's own
    // conventions (`Re`, `Pe`), not Rust's.
    let (head, generics, body) = match (params_generic(s), s.scalars.is_empty()) {
        (true, _) => (quote!(#name<T> { #(#fields,)* }), quote!(<T>), quote!(Self { #(#inits,)* })),
        (false, false) => (quote!(#name { #(#fields,)* }), quote!(), quote!(Self { #(#inits,)* })),
        (false, true) => (quote!(#name;), quote!(), quote!(Self)),
    };
    let derives = if s.scalars.is_empty() { quote!(Default, Eq, Hash,) } else { quote!() };
    quote! {
        #[doc = #doc]
        #[derive(Clone, Copy, Debug, PartialEq, #derives)]
        #[allow(non_snake_case)]
        #vis struct #head

        #[allow(non_snake_case)]
        impl #generics #name #generics {
            /// Parameters in declaration order.
            #[allow(clippy::too_many_arguments, clippy::new_without_default)]
            pub fn new(#(#args),*) -> Self {
                #body
            }
        }
    }
}

/// `impl Stencil<N> for Name`: the point function, its row loop and the parameters by name.
fn emit_stencil_impl(s: &Stencil, p: &TokenStream) -> TokenStream {
    let ty_name = s.type_name();
    let params_name = s.params_name();
    let params_ty = params_type(s);
    let dim = s.dim;
    let slots = s.reads.len();
    // Internal names are numbered, never built from the stencil's names, so that no
    // parameter or binding can shadow them and no lint speaks of them.
    let loads = (0..slots).map(|i| {
        let r = read_name(i);
        quote!(let #r: T = load(#i);)
    });
    let scalars = s.scalars.iter().enumerate().map(|(i, sc)| {
        let n = &sc.name;
        let local = scalar_name(i);
        let t = scalar_type(sc.ty);
        quote!(let #local: #t = params.#n;)
    });
    let point = emit_point(s, p, quote!(#(#loads)* #(#scalars)*));
    let values = s.scalars.iter().map(|sc| {
        let n = &sc.name;
        match sc.ty {
            Ty::Int => quote!(#p::ScalarValue::I32(params.#n)),
            _ => quote!(#p::ScalarValue::Real(params.#n)),
        }
    });
    let from_values = s.scalars.iter().map(|sc| {
        let n = &sc.name;
        let key = n.unraw().to_string();
        match sc.ty {
            Ty::Int => quote!(#n: #p::param_i32(Self::META, values, #key)?),
            _ => quote!(#n: <T as #p::Real>::from_f64(#p::param_value(Self::META, values, #key)?)),
        }
    });
    let built = if s.scalars.is_empty() { quote!(#params_name) } else { quote!(#params_name { #(#from_values,)* }) };
    quote! {
        impl #p::Stencil<#dim> for #ty_name {
            type Params<T: #p::Real> = #params_ty;

            const META: &'static #p::StencilMeta = #ty_name::META;

            const CUDA_SOURCE: &'static str = #ty_name::CUDA_SOURCE;

            const KERNELS: &'static #p::KernelManifest = #ty_name::KERNELS;

            #point

            #[allow(unused_variables)]
            fn param_values<T: #p::Real>(params: &Self::Params<T>) -> ::std::vec::Vec<#p::ScalarValue<T>> {
                ::std::vec![#(#values),*]
            }

            fn params_from_values<T: #p::Real>(values: &[(&str, f64)]) -> #p::Result<Self::Params<T>> {
                #p::check_params(Self::META, values)?;
                Ok(#built)
            }
        }
    }
}

/// The point functions and row loops; `prologue` binds the reads and scalars. A single
/// unknown's `point` holds the body (the trait's `point_all` and `apply_rows` call it); a
/// system's `point_all` holds it and `point` gives its first value.
fn emit_point(s: &Stencil, p: &TokenStream, prologue: TokenStream) -> TokenStream {
    let dim = s.dim;
    let slots = s.reads.len();
    let count = s.unknowns.len();
    let lets = emit_lets(s, &s.body.lets);
    let values: Vec<TokenStream> = s.body.values.iter().map(|v| emit_expr(s, v)).collect();
    let this = quote!(<Self as #p::Stencil<#dim>>);
    let allow = quote!(#[allow(unused_variables, unused_parens, clippy::all)]);
    let rows = quote!(let rows: [&[T]; #slots] = #p::row_slices(reads, len););
    if count == 1 {
        let value = &values[0];
        return quote! {
            #[inline(always)]
            #allow
            fn point<T: #p::Real>(load: impl Fn(usize) -> T, params: &Self::Params<T>) -> T {
                #prologue
                #lets
                #value
            }

            #[inline]
            fn apply_row<T: #p::Real>(reads: &[&[T]], out: &mut [T], params: &Self::Params<T>) {
                let len = out.len();
                #rows
                for (j, o) in out.iter_mut().enumerate() {
                    *o = #this::point(|s| rows[s][j], params);
                }
            }
        };
    }
    let k = 0..count;
    quote! {
        #[inline(always)]
        fn point<T: #p::Real>(load: impl Fn(usize) -> T, params: &Self::Params<T>) -> T {
            let mut out = [<T as #p::Real>::from_f64(0.0); #count];
            #this::point_all(load, params, &mut out);
            out[0]
        }

        #[inline(always)]
        #allow
        fn point_all<T: #p::Real>(load: impl Fn(usize) -> T, params: &Self::Params<T>, out: &mut [T]) {
            #prologue
            #lets
            #(out[#k] = #values;)*
        }

        #[inline]
        fn apply_row<T: #p::Real>(reads: &[&[T]], out: &mut [T], params: &Self::Params<T>) {
            let len = out.len();
            #rows
            for (j, o) in out.iter_mut().enumerate() {
                *o = #this::point(|s| rows[s][j], params);
            }
        }

        #[inline]
        fn apply_rows<T: #p::Real>(reads: &[&[T]], outs: &mut [&mut [T]], params: &Self::Params<T>) {
            let len = outs[0].len();
            #rows
            let mut values = [<T as #p::Real>::from_f64(0.0); #count];
            for j in 0..len {
                #this::point_all(|s| rows[s][j], params, &mut values);
                for (out, value) in outs.iter_mut().zip(values) {
                    out[j] = value;
                }
            }
        }
    }
}

/// The point function's local for read slot `i`.
fn read_name(i: usize) -> proc_macro2::Ident {
    format_ident!("__stencil_r{}", i)
}

/// The point function's local for scalar `i`.
fn scalar_name(i: usize) -> proc_macro2::Ident {
    format_ident!("__stencil_p{}", i)
}

fn scalar_type(ty: Ty) -> TokenStream {
    match ty {
        Ty::Int => quote!(i32),
        Ty::Bool => quote!(bool),
        Ty::Real => quote!(T),
    }
}

fn emit_meta(s: &Stencil, p: &TokenStream) -> TokenStream {
    let name = s.name.to_string();
    let dim = s.dim;
    let fields = s.fields.iter().enumerate().map(|(i, f)| {
        let n = f.name.unraw().to_string();
        let unknown = s.unknowns.contains(&i);
        let offsets = s.offsets_of(i);
        let offsets = offsets.iter().map(|o| quote!(&[#(#o),*]));
        quote!(#p::FieldMeta { name: #n, unknown: #unknown, offsets: &[#(#offsets),*] })
    });
    let params = s.scalars.iter().map(|sc| {
        let n = sc.name.unraw().to_string();
        let kind = if sc.ty == Ty::Int { quote!(I32) } else { quote!(Real) };
        quote!(#p::ParamMeta { name: #n, kind: #p::ScalarKind::#kind })
    });
    let reads = s.reads.iter().map(|r| {
        let f = r.field;
        let o = &r.offset;
        quote!(#p::ReadMeta { field: #f, offset: &[#(#o),*] })
    });
    let radius = &s.radius;
    let sweep = match &s.sweep {
        None => quote!(None),
        Some(plan) => {
            let dirs = plan.ascending.iter().map(|&up| if up { quote!(Ascending) } else { quote!(Descending) });
            let a = &plan.hyperplane;
            let c = &plan.skew;
            quote!(Some(#p::SweepMeta {
                directions: &[#(#p::Direction::#dirs),*],
                hyperplane: &[#(#a),*],
                skew: &[#(#c),*],
            }))
        }
    };
    let unknown = s.unknown;
    let unknowns = &s.unknowns;
    let flops = s.flops();
    let arrays = s.arrays_per_point();
    quote!(&#p::StencilMeta {
        name: #name,
        dim: #dim,
        fields: &[#(#fields),*],
        unknown: #unknown,
        unknowns: &[#(#unknowns),*],
        params: &[#(#params),*],
        reads: &[#(#reads),*],
        radius: &[#(#radius),*],
        sweep: #sweep,
        flops: #flops,
        arrays_per_point: #arrays,
    })
}

/// The point function's local for `let` binding `i`.
fn local_name(i: usize) -> proc_macro2::Ident {
    format_ident!("__stencil_l{}", i)
}

fn emit_lets(s: &Stencil, lets: &[(usize, ir::Expr)]) -> TokenStream {
    let lets = lets.iter().map(|(i, e)| {
        let n = local_name(*i);
        let t = scalar_type(s.locals[*i].ty);
        let v = emit_expr(s, e);
        quote!(let #n: #t = #v;)
    });
    quote!(#(#lets)*)
}

fn emit_block_inner(s: &Stencil, b: &ir::Block) -> TokenStream {
    let lets = emit_lets(s, &b.lets);
    let v = emit_expr(s, &b.value);
    quote!(#lets #v)
}

/// Every operation is parenthesised, so evaluation order is the IR's on every backend.
fn emit_expr(s: &Stencil, e: &ir::Expr) -> TokenStream {
    let p = quote!(::stencil::__private);
    match &e.kind {
        ExprKind::Real(v) => {
            let lit = Literal::f64_suffixed(*v);
            quote!(<T as #p::Real>::from_f64(#lit))
        }
        ExprKind::Int(v) => {
            let lit = Literal::i32_suffixed(*v);
            quote!(#lit)
        }
        ExprKind::Bool(v) => quote!(#v),
        ExprKind::Scalar(i) => {
            let n = scalar_name(*i);
            quote!(#n)
        }
        ExprKind::Local(i) => {
            let n = local_name(*i);
            quote!(#n)
        }
        ExprKind::Read(slot) => {
            let r = read_name(*slot);
            quote!(#r)
        }
        ExprKind::Unary(op, x) => {
            let x = emit_expr(s, x);
            match (op, e.ty) {
                (UnOp::Neg, Ty::Int) => quote!((#x).wrapping_neg()),
                (UnOp::Neg, _) => quote!((-#x)),
                (UnOp::Not, _) => quote!((!#x)),
            }
        }
        ExprKind::Binary(op, l, r) => {
            let int = l.ty == Ty::Int;
            let (l, r) = (emit_expr(s, l), emit_expr(s, r));
            // i32 arithmetic wraps, as two's complement hardware (and CUDA in practice) does.
            match (op, int) {
                (BinOp::Add, true) => quote!((#l).wrapping_add(#r)),
                (BinOp::Sub, true) => quote!((#l).wrapping_sub(#r)),
                (BinOp::Mul, true) => quote!((#l).wrapping_mul(#r)),
                _ => {
                    let o: TokenStream = op.symbol().parse().expect("operator");
                    quote!((#l #o #r))
                }
            }
        }
        ExprKind::If(c, t, f) => {
            let c = emit_expr(s, c);
            let t = emit_block_inner(s, t);
            let f = emit_block_inner(s, f);
            quote!((if #c { #t } else { #f }))
        }
        ExprKind::Block(b) => {
            let b = emit_block_inner(s, b);
            quote!({ #b })
        }
        ExprKind::Method(m, recv, args) => {
            let recv = emit_expr(s, recv);
            let args = args.iter().map(|a| emit_expr(s, a));
            let f = format_ident!("{}", method_fn(*m));
            quote!(<T as #p::Real>::#f(#recv #(, #args)*))
        }
        ExprKind::IntToReal(x) => {
            let x = emit_expr(s, x);
            quote!(<T as #p::Real>::from_i32(#x))
        }
    }
}

fn method_fn(m: Method) -> &'static str {
    m.name()
}
