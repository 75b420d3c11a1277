//! The plain Jacobi pass: each thread computes `VEC` consecutive points of a row, reading
//! every row of its stencil with one vector load per field and row, for a BLOCK_X × BLOCK_Y
//! column of the two fast axes, and marches MARCH planes along the slowest axis with the
//! rows of its own column in a register queue. It also writes the next iterate's periodic
//! and Neumann outer layers, as images of the interior points.

use super::common::*;
use super::signature::{Kind, signature};
use crate::ir::Stencil;
use crate::writer::Writer;

/// The vector widths the pass is generated for (`-DVEC`); the runtime picks one that
/// divides the contiguous extent (4 in single precision only: CUDA's 32-byte vector of
/// doubles is not used).
const WIDTHS: [usize; 3] = [1, 2, 4];

/// The rows of field `f` the stencil reads, as `[d0, d1]`: those with `d1 = 0` (the thread's
/// own column, kept in the queue) as the range `lo..=hi` of `d0`, and the others in order.
struct Rows {
    queue: Option<(i64, i64)>,
    others: Vec<[i64; 2]>,
}

impl Rows {
    fn of(s: &Stencil, f: usize) -> Self {
        let mut queue: Option<(i64, i64)> = None;
        let mut others = Vec::new();
        for d in s.reads.iter().filter(|r| r.field == f).map(|r| to_3d(&r.offset).map(i64::from)) {
            if d[1] == 0 {
                queue = Some(queue.map_or((d[0], d[0]), |(lo, hi)| (lo.min(d[0]), hi.max(d[0]))));
            } else if !others.contains(&[d[0], d[1]]) {
                others.push([d[0], d[1]]);
            }
        }
        Self { queue, others }
    }

    /// The register holding element `e` of row `[d0, d1]` of field `n`.
    fn register(&self, n: &str, [d0, d1]: [i64; 2], e: i64) -> String {
        match self.queue {
            Some((lo, _)) if d1 == 0 => format!("q_{n}[{}][{e}]", d0 - lo),
            _ => {
                let m = self.others.iter().position(|&r| r == [d0, d1]).expect("a row the stencil reads");
                format!("w_{n}_{m}[{e}]")
            }
        }
    }
}

pub(super) fn emit_pass(w: &mut Writer, s: &Stencil) {
    emit_helpers(w);
    w.line("// Plain Jacobi pass: each thread computes VEC consecutive points of a row (VEC divides N2), reading");
    w.line("// each row its stencil needs with one vector load per field, for a BLOCK_X × BLOCK_Y column of");
    w.line("// threads; it marches MARCH planes along the slowest axis, the rows of its own column in a register");
    w.line("// queue (Giles). Launch with blockDim = (BLOCK_X, BLOCK_Y, 1), gridDim = (⌈N2 / VEC / BLOCK_X⌉,");
    w.line("// ⌈N1 / BLOCK_Y⌉, ⌈interior z / MARCH⌉): the threads start at the array's origin, so every vector is");
    w.line("// aligned. Reads beyond a thread's own vector come from global memory (the cache has them).");
    w.line("// The pass also writes the next iterate's periodic and Neumann outer layers, with the boundary");
    w.line("// fill's maps (low, high, … per axis; low = 0 and high = n where a side keeps its values): every");
    w.line("// interior point's value is stored also at the outer points that map to it, on every axis and");
    w.line("// their combinations. Threads whose points include outer points or sources of outer points store");
    w.line("// point by point; the others store vectors.");
    signature(s, Kind::Plain).open(w);
    index_prologue(w);
    w.line(
        "const idx px = ((idx)blockIdx.x * BLOCK_X + threadIdx.x) * VEC, y = (idx)blockIdx.y * BLOCK_Y + threadIdx.y;",
    );
    w.line("if (px >= N2 || y < R1 || y >= N1 - R1) return;");
    w.line("const idx z_begin = R0 + (idx)blockIdx.z * MARCH;");
    w.line("const idx z_end = min(z_begin + (idx)MARCH, N0 - R0);");
    w.line("const bool edge = px < R2 || px + VEC > N2 - R2");
    w.line(format!("    || stencil_sources(px, px + VEC - 1, N2, {})", axis_maps("", 2)));
    w.line(format!("    || stencil_sources(y, y, N1, {})", axis_maps("", 1)));
    w.line(format!("    || stencil_sources(z_begin, z_end - 1, N0, {});", axis_maps("", 0)));
    let rows: Vec<Rows> = (0..s.fields.len()).map(|f| Rows::of(s, f)).collect();
    for (f, r) in rows.iter().enumerate() {
        if let Some((lo, hi)) = r.queue {
            let n = &c_name(&s.fields[f].name);
            let planes = if hi > lo { format!("rows z{lo:+} … z{hi:+}") } else { format!("row z{lo:+}") };
            w.line(format!("real q_{n}[{}][VEC]; // {planes} of the thread's points", hi - lo + 1));
            if hi > lo {
                w.line("#pragma unroll");
                w.line(format!(
                    "for (int k = 0; k < {}; ++k) stencil_load(q_{n}[k + 1], f_{n} + (z_begin + ({lo}) + k) * s0 + y * s1 + px);",
                    hi - lo
                ));
            }
        }
    }
    w.line("#pragma unroll");
    w.open("for (int k = 0; k < MARCH; ++k)");
    w.line("// Past the block's last plane a step repeats that plane and stores nothing: every load stays in");
    w.line("// bounds and unconditional, so the loads of several planes can be in flight together.");
    w.line("const idx z = min(z_begin + (idx)k, z_end - 1);");
    w.line("const idx row = z * s0 + y * s1, i = row + px;");
    load_rows(w, s, &rows);
    for k in 0..s.unknowns.len() {
        w.line(format!("real next_{k}[VEC];"));
    }
    for (j, &width) in WIDTHS.iter().enumerate() {
        w.line(format!("#{} VEC == {width}", if j == 0 { "if" } else { "elif" }));
        for point in 0..width {
            point_at(w, s, &rows, point as i64, width as i64);
        }
    }
    w.line("#else");
    w.line("#error \"VEC must be 1, 2 or 4\"");
    w.line("#endif");
    w.line("if (z_begin + k >= z_end) continue;");
    w.open("if (!edge)");
    for k in 0..s.unknowns.len() {
        w.line(format!("stencil_store({} + i, next_{k});", output(k)));
    }
    w.close("");
    w.open("else");
    store_images(w, s);
    w.close("");
    w.close("");
    w.close("");
    w.blank();
}

/// The vector loads, the image map, the test for sources of outer points and the edge
/// threads' store.
fn emit_helpers(w: &mut Writer) {
    w.line("// VEC consecutive values as one load or store: p is aligned to VEC values.");
    w.line("template <typename T, int V> struct stencil_vector_of;");
    w.line("template <typename T> struct stencil_vector_of<T, 1> { typedef T type; };");
    w.line("template <> struct stencil_vector_of<float, 2> { typedef float2 type; };");
    w.line("template <> struct stencil_vector_of<float, 4> { typedef float4 type; };");
    w.line("template <> struct stencil_vector_of<double, 2> { typedef double2 type; };");
    w.line("typedef stencil_vector_of<real, VEC>::type stencil_vector;");
    w.open("__device__ __forceinline__ void stencil_load(real (&a)[VEC], const real* __restrict__ p)");
    w.line("const stencil_vector v = *reinterpret_cast<const stencil_vector*>(p);");
    w.line("const real* e = reinterpret_cast<const real*>(&v);");
    w.line("#pragma unroll");
    w.line("for (int j = 0; j < VEC; ++j) a[j] = e[j];");
    w.close("");
    w.open("__device__ __forceinline__ void stencil_store(real* __restrict__ p, const real (&a)[VEC])");
    w.line("stencil_vector v;");
    w.line("real* e = reinterpret_cast<real*>(&v);");
    w.line("#pragma unroll");
    w.line("for (int j = 0; j < VEC; ++j) e[j] = a[j];");
    w.line("*reinterpret_cast<stencil_vector*>(p) = v;");
    w.close("");
    w.line("// The outer point of an axis of n points whose value is that of p: p itself (side 0), or the low");
    w.line("// (side 1) or high (side 2) outer point mapped to p, or -1. A map's step is ±1, its own inverse.");
    w.line(
        "__device__ __forceinline__ idx stencil_image(const idx p, const int side, const idx n, const long long low,",
    );
    w.open("    const long long low_from, const long long low_step, const long long high, const long long high_from, const long long high_step)");
    w.line("if (side == 0) return p;");
    w.line("const idx q = side == 1 ? (p - (idx)low_from) * (idx)low_step : (p - (idx)high_from) * (idx)high_step;");
    w.line("return side == 1 ? (q >= 0 && q < (idx)low ? q : -1) : (q >= (idx)high && q < n ? q : -1);");
    w.close("");
    w.line("// Whether a point of [a, b] on an axis of n points is the source of an outer point.");
    w.line(
        "__device__ __forceinline__ bool stencil_sources(const idx a, const idx b, const idx n, const long long low,",
    );
    w.open("    const long long low_from, const long long low_step, const long long high, const long long high_from, const long long high_step)");
    w.line("const idx la = (idx)low_from, lb = (idx)low_from + (idx)low_step * ((idx)low - 1);");
    w.line(
        "const idx ha = (idx)high_from + (idx)high_step * (idx)high, hb = (idx)high_from + (idx)high_step * (n - 1);",
    );
    w.line("return ((idx)low > 0 && a <= max(la, lb) && min(la, lb) <= b) || ((idx)high < n && a <= max(ha, hb) && min(ha, hb) <= b);");
    w.close("");
    emit_put(w);
    w.blank();
}

/// The step's row loads: each queue shifts by a plane and loads its newest row; the rows
/// off the thread's column are loaded afresh.
fn load_rows(w: &mut Writer, s: &Stencil, rows: &[Rows]) {
    for (f, r) in rows.iter().enumerate() {
        let n = &c_name(&s.fields[f].name);
        if let Some((lo, hi)) = r.queue {
            if hi > lo {
                w.line("#pragma unroll");
                w.line(format!(
                    "for (int q = 0; q < {}; ++q) for (int j = 0; j < VEC; ++j) q_{n}[q][j] = q_{n}[q + 1][j];",
                    hi - lo
                ));
            }
            w.line(format!("stencil_load(q_{n}[{}], f_{n} + i + ({hi}) * s0);", hi - lo));
        }
        for (m, [d0, d1]) in r.others.iter().enumerate() {
            w.line(format!("real w_{n}_{m}[VEC];"));
            w.line(format!("stencil_load(w_{n}_{m}, f_{n} + i + ({d0}) * s0 + ({d1}) * s1);"));
        }
    }
}

/// The new values of point `j` of a thread's `width` points: the point function on reads
/// from the thread's rows, or from global memory beyond them (the column clamped to the
/// row, so that a thread at the row's end reads in bounds; its outer points are not stored).
fn point_at(w: &mut Writer, s: &Stencil, rows: &[Rows], j: i64, width: i64) {
    let reads: Vec<String> = s
        .reads
        .iter()
        .map(|r| {
            let n = c_name(&s.fields[r.field].name);
            let [d0, d1, d2] = to_3d(&r.offset).map(i64::from);
            let e = j + d2;
            if (0..width).contains(&e) {
                return rows[r.field].register(&n, [d0, d1], e);
            }
            let column = if e < 0 { format!("max(px + ({e}), (idx)0)") } else { format!("min(px + {e}, N2 - 1)") };
            format!("f_{n}[row + ({d0}) * s0 + ({d1}) * s1 + {column}]")
        })
        .collect();
    let args = reads.join(", ");
    if s.is_system() {
        w.open("");
        w.line(format!("real v[{}];", s.unknowns.len()));
        w.line(format!("{}_point({args}{}, v);", s.name, scalar_args(s)));
        for k in 0..s.unknowns.len() {
            w.line(format!("next_{k}[{j}] = v[{k}];"));
        }
        w.close("");
    } else {
        w.line(format!("next_0[{j}] = {}_point({args}{});", s.name, scalar_args(s)));
    }
}

/// The map's parameters of axis `k`, as the kernel names them, each after `prefix`.
fn axis_maps(prefix: &str, k: usize) -> String {
    format!(
        "{prefix}low{k}, {prefix}low_from{k}, {prefix}low_step{k}, {prefix}high{k}, {prefix}high_from{k}, \
         {prefix}high_step{k}"
    )
}

/// The maps' parameters of the three axes, each after `prefix`.
fn map_args(prefix: &str) -> String {
    (0..3).map(|k| axis_maps(prefix, k)).collect::<Vec<_>>().join(", ")
}

/// The edge threads' stores: each interior point's values at the point and at every outer
/// point mapped to it, through [`emit_put`]'s function.
fn store_images(w: &mut Writer, s: &Stencil) {
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < VEC; ++j)");
    for k in 0..s.unknowns.len() {
        w.line(format!("stencil_put({}, next_{k}[j], z, y, px + j, N0, N1, N2, {});", output(k), map_args("")));
    }
    w.close("");
}

/// `stencil_put`: a value stored at its point, if interior, and at the outer points mapped to
/// it. It is not inlined: only the edge threads call it, and inlined its loops would hold
/// registers that every thread's march then lacks (45 against 32 for `jacobi7` in f32).
fn emit_put(w: &mut Writer) {
    let maps = map_args("const long long ");
    w.line("// A value stored at its point (if interior) and at every outer point mapped to it.");
    w.open(format!(
        "__device__ __noinline__ void stencil_put(real* __restrict__ out, const real v, const idx z, const idx y, \
         const idx x, const idx N0, const idx N1, const idx N2, {maps})"
    ));
    w.line("if (x < R2 || x >= N2 - R2) return;");
    w.line("const idx s1 = N2, s0 = N1 * N2;");
    w.open("for (int a = 0; a < 3; ++a)");
    w.line(format!("const idx za = stencil_image(z, a, N0, {});", axis_maps("", 0)));
    w.line("if (za < 0) continue;");
    w.open("for (int b = 0; b < 3; ++b)");
    w.line(format!("const idx yb = stencil_image(y, b, N1, {});", axis_maps("", 1)));
    w.line("if (yb < 0) continue;");
    w.open("for (int c = 0; c < 3; ++c)");
    w.line(format!("const idx xc = stencil_image(x, c, N2, {});", axis_maps("", 2)));
    w.line("if (xc >= 0) out[za * s0 + yb * s1 + xc] = v;");
    w.close("");
    w.close("");
    w.close("");
    w.close("");
}
