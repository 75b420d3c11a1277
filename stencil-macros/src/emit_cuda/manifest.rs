//! The kernel manifest (`Name::KERNELS`, the runtime's `KernelManifest`): every kernel's
//! signature as `signature.rs` describes it, and the facts the kernels' launch geometry
//! follows, as the kernel families compute them.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::common::to_3d;
use super::hierarchical::{hierarchical_staged, register_fields};
use super::lane_plan::{LINES, LanePlan};
use super::signature::{REGISTER_WIDTH, kernels, plain_block, signature};
use super::stream::stream_rings;
use super::wavefront::SweepAxes;
use super::wavefront_parts::{point_windows, wavefront_windows};
use crate::ir::Stencil;

/// The kernel manifest of `s` as a constant expression of type `&'static KernelManifest`.
pub fn manifest(s: &Stencil) -> TokenStream {
    let p = quote!(::stencil::__private);
    let kernels = kernels(s).into_iter().map(|kind| {
        let sig = signature(s, kind);
        let guard = kind.guard();
        let kind = format_ident!("{}", kind.variant());
        let symbol = &sig.symbol;
        let params = sig.params.iter().map(|param| {
            let (name, role, ty) = (&param.name, param.role.tokens(&p), format_ident!("{}", param.ty.variant()));
            quote!(#p::KernelParam { name: #name, role: #role, ty: #p::ParamType::#ty })
        });
        let defines = sig.defines.iter().map(|(name, default)| quote!((#name, #default)));
        quote!(#p::KernelSpec { kind: #p::KernelKind::#kind, symbol: #symbol, guard: #guard, params: &[#(#params),*], defines: &[#(#defines),*] })
    });
    let axes: &[usize] = match s.dim {
        1 => &[2],
        2 => &[0, 2],
        _ => &[0, 1, 2],
    };
    let radius = to_3d(&s.radius);
    let [bx, by, march] = plain_block(s.dim);
    let staged = hierarchical_staged(s);
    let registers = register_fields(s);
    let unknowns = s.unknowns.len();
    let rings = stream_rings(s);
    let (ring, mirrored_ring) = (rings.descending, rings.mirrored);
    let ascending_ring = match rings.ascending {
        Some(ring) => quote!(::core::option::Option::Some(#ring)),
        None => quote!(::core::option::Option::None),
    };
    let wavefront = match &s.sweep {
        Some(sweep) => {
            let windows = wavefront_windows(s);
            let point_windows = point_windows(s);
            let z = SweepAxes::new(s, sweep).z_radius.map(|r| r as usize);
            let lane_axes = s.dim - 1;
            let lane_reals = LINES.map(|lines| LanePlan::new(s).map_or(0, |plan| plan.block_reals(lines)));
            quote!(::core::option::Option::Some(#p::WavefrontFacts {
                windows: &[#(#windows),*], point_windows: #point_windows, z_radius: [#(#z),*], lane_axes: #lane_axes, lane_reals: [#(#lane_reals),*],
            }))
        }
        None => quote!(::core::option::Option::None),
    };
    quote! {
        &#p::KernelManifest {
            kernels: &[#(#kernels),*],
            axes: &[#(#axes),*],
            radius: [#(#radius),*],
            plain_block: [#bx, #by, #march],
            hierarchical: #p::HierarchicalFacts {
                unknowns: #unknowns,
                staged: &[#(#staged),*],
                registers: &[#(#registers),*],
                register_width: #REGISTER_WIDTH,
            },
            streaming: #p::StreamingFacts { ring: #ring, ascending_ring: #ascending_ring, mirrored_ring: #mirrored_ring },
            wavefront: #wavefront,
        }
    }
}
