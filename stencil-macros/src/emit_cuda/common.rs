//! What the kernels share: the 3-D view of offsets, names as C identifiers, kernel
//! index prologue, the point call and the residual accumulation, the global-memory accessors
//! and the block reduction of the measuring kernels.

use crate::ir::{Stencil, Ty};
use crate::writer::Writer;

/// The stencil's offset or radius on the 3-D axes (see the module's documentation; the
/// runtime maps shapes the same way).
pub(super) fn to_3d<T: Copy + Default>(values: &[T]) -> [T; 3] {
    let zero = T::default();
    match *values {
        [a] => [zero, zero, a],
        [a, b] => [a, zero, b],
        [a, b, c] => [a, b, c],
        _ => unreachable!("stencils have 1 to 3 axes"),
    }
}

/// A name of the stencil as a C identifier: without Rust's raw prefix (`r#type` is `type`)
/// and with every character beyond ASCII as a universal character name (`φ` is `\u03c6`),
/// which NVRTC accepts in identifiers but not as UTF-8. It only ever follows an internal
/// prefix (`f_`, `p_`, `AT_` …), so it cannot be a keyword or meet an internal name.
pub(super) fn c_name(ident: &proc_macro2::Ident) -> String {
    use syn::ext::IdentExt;
    let mut out = String::new();
    for c in ident.unraw().to_string().chars() {
        match c {
            c if c.is_ascii() => out.push(c),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out
}

pub(super) fn scalar_c_type(ty: Ty) -> &'static str {
    match ty {
        Ty::Real => "real",
        Ty::Int => "int",
        Ty::Bool => "bool",
    }
}

pub(super) fn scalar_args(s: &Stencil) -> String {
    s.scalars.iter().map(|sc| format!(", p_{}", c_name(&sc.name))).collect()
}

/// The index prologue every kernel begins with: the grid's extents as `idx` and the strides
/// of axes 0 and 1 (axis 2 is contiguous).
pub(super) fn index_prologue(w: &mut Writer) {
    w.line("const idx N0 = (idx)n0, N1 = (idx)n1, N2 = (idx)n2;");
    w.line("const idx s1 = N2;");
    w.line("const idx s0 = N1 * N2;");
}

/// `const real v = <name>_point(…)`: the point function on the reads as the kernel's
/// accessors give them; a system's writes its unknowns' new values to `v[k]`.
pub(super) fn point_call(w: &mut Writer, s: &Stencil) {
    if s.is_system() {
        w.line(format!("real v[{}];", s.unknowns.len()));
        w.line(format!("{}_point(STENCIL_READS{}, v);", s.name, scalar_args(s)));
    } else {
        w.line(format!("const real v = {}_point(STENCIL_READS{});", s.name, scalar_args(s)));
    }
}

/// The new value of the `k`-th unknown after [`point_call`].
pub(super) fn value(s: &Stencil, k: usize) -> String {
    if s.is_system() { format!("v[{k}]") } else { "v".into() }
}

/// The output parameter of the `k`-th unknown.
pub(super) fn output(k: usize) -> String {
    if k == 0 { "out".into() } else { format!("out_{k}") }
}

/// `guard` followed by the store of every unknown's new value at `i`.
pub(super) fn store_values(w: &mut Writer, s: &Stencil, guard: &str) {
    let stores: Vec<String> = (0..s.unknowns.len()).map(|k| format!("{}[i] = {};", output(k), value(s, k))).collect();
    match stores.as_slice() {
        [one] => w.line(format!("{guard}{one}")),
        _ => {
            w.open(guard.trim_end());
            for store in &stores {
                w.line(store);
            }
            w.close("");
        }
    }
}

/// Adds the change `v − old` to the thread's running max |·| and Σ(·)² (in double).
pub(super) fn accumulate_residual(w: &mut Writer, old: &str) {
    w.line(format!("const double d = (double)(v - {old});"));
    w.line("my_sum += d * d;");
    w.line("my_max = fabs(d) > my_max ? fabs(d) : my_max;");
}

/// The same for a system's unknown `k` (`old` its value before).
pub(super) fn accumulate_change(w: &mut Writer, s: &Stencil, k: usize, old: &str) {
    w.line(format!("const double d{k} = (double)({} - {old});", value(s, k)));
    w.line(format!("my_sum += d{k} * d{k};"));
    w.line(format!("my_max = fabs(d{k}) > my_max ? fabs(d{k}) : my_max;"));
}

/// `#define AT_f(d0, d1, d2) …` for every field, reading global memory around flat index `i`.
pub(super) fn define_global_access(w: &mut Writer, s: &Stencil, skip: &[usize]) {
    for (_, f) in s.fields.iter().enumerate().filter(|(i, _)| !skip.contains(i)) {
        let n = c_name(&f.name);
        w.line(format!("#define AT_{n}(d0, d1, d2) f_{n}[i + (d0) * s0 + (d1) * s1 + (d2)]"));
    }
}

pub(super) fn undefine_access(w: &mut Writer, s: &Stencil) {
    for f in &s.fields {
        w.line(format!("#undef AT_{}", c_name(&f.name)));
    }
}

/// The end of the measuring kernels: `my_max` and `my_sum` reduced within each warp by
/// shuffles, then across the block's warps in shared memory, and written to the block's entry.
pub(super) fn emit_block_reduction(w: &mut Writer) {
    w.line("// Block reduction: within each warp by shuffles, then across warps in shared memory.");
    w.line("__shared__ double warp_max[32], warp_sum[32];");
    w.open("for (int offset = 16; offset > 0; offset /= 2)");
    w.line("const double other_max = __shfl_down_sync(0xffffffffu, my_max, offset);");
    w.line("my_sum += __shfl_down_sync(0xffffffffu, my_sum, offset);");
    w.line("my_max = other_max > my_max ? other_max : my_max;");
    w.close("");
    w.line("const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);");
    w.line("const int warps = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;");
    w.open("if (t % 32 == 0)");
    w.line("warp_max[t / 32] = my_max;");
    w.line("warp_sum[t / 32] = my_sum;");
    w.close("");
    w.line("__syncthreads();");
    w.open("if (t == 0)");
    w.line("double block_maximum = 0.0, block_total = 0.0;");
    w.open("for (int k = 0; k < warps; ++k)");
    w.line("block_maximum = warp_max[k] > block_maximum ? warp_max[k] : block_maximum;");
    w.line("block_total += warp_sum[k];");
    w.close("");
    w.line("const long long b = blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z);");
    w.line("block_max[b] = block_maximum;");
    w.line("block_sum[b] = block_total;");
    w.close("");
}
