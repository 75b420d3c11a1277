//! The measuring Jacobi pass and the 2.5-D tiled pass: one thread per column of the two fast
//! axes, marching along the slowest, reads along the column in a register queue.

use super::common::*;
use super::signature::{Kind, signature};
use crate::ir::Stencil;
use crate::writer::Writer;

/// The planes along axis 0 that a field is read at on the thread's own column, as the
/// range `lo..=hi` of offsets, widened to contain 0 (the measuring kernel reads the old
/// value of the unknown from it).
pub(super) fn column_extent(s: &Stencil, field: usize) -> (i64, i64) {
    s.reads
        .iter()
        .filter(|r| r.field == field)
        .map(|r| to_3d(&r.offset))
        .filter(|d| d[1..] == [0, 0])
        .fold((0, 0), |(lo, hi), d| (lo.min(d[0] as i64), hi.max(d[0] as i64)))
}

/// The plain pass that also measures S(u) − u: one thread per point of a column of the two
/// fast axes, marching along the slowest with reads along the column in a register queue.
pub(super) fn emit_measure(w: &mut Writer, s: &Stencil) {
    w.line("// The plain pass that also measures S(u) − u: per block, max |·| and Σ(·)² (in double), and the");
    w.line("// smallest flat index whose new value is NaN or ±∞ (atomicMin; all ones when there is none).");
    w.line("// Launch with blockDim = (BLOCK_X, BLOCK_Y, 1).");
    signature(s, Kind::PlainMeasure).open(w);
    index_prologue(w);
    w.line("const idx x = (idx)blockIdx.x * BLOCK_X + threadIdx.x;");
    w.line("const idx y = (idx)blockIdx.y * BLOCK_Y + threadIdx.y;");
    w.line("const idx z_begin = R0 + (idx)blockIdx.z * MARCH;");
    w.line("const idx z_end = min(z_begin + (idx)MARCH, N0 - R0);");
    w.line("double my_max = 0.0, my_sum = 0.0;");
    w.open("if (x >= R2 && x < N2 - R2 && y >= R1 && y < N1 - R1)");
    // Fields read along the thread's own column keep those planes in a register queue
    // (Giles): each step loads one new plane and shifts the queue.
    let queued = column_fields(s);
    for &f in &queued {
        declare_queue(w, s, f, "");
    }
    march(w);
    for &f in &queued {
        advance_queue(w, s, f);
        let n = &c_name(&s.fields[f].name);
        let global = format!("f_{n}[i + (d0) * s0 + (d1) * s1 + (d2)]");
        w.line(format!("#define AT_{n}(d0, d1, d2) {}", queue_access(s, f, &global)));
    }
    define_global_access(w, s, &queued);
    point_call(w, s);
    undefine_access(w, s);
    store_values(w, s, "if (z_begin + k < z_end) ");
    measure_step(w, s, &queued);
    w.close("");
    w.close("");
    emit_tree_reduction(w);
    w.close("");
    w.blank();
}

/// The measuring pass's step: the change of every unknown at the point added to the
/// thread's max and sum, or the point's flat index when a new value is not finite.
fn measure_step(w: &mut Writer, s: &Stencil, queued: &[usize]) {
    w.open("if (z_begin + k >= z_end)");
    w.line("// a repeated plane: counted once");
    let non_finite: Vec<String> = (0..s.unknowns.len()).map(|k| format!("!isfinite({})", value(s, k))).collect();
    w.reopen(&format!("else if ({})", non_finite.join(" || ")));
    w.line("atomicMin(first_bad, (unsigned long long)i);");
    w.reopen("else");
    for (k, &f) in s.unknowns.iter().enumerate() {
        let name = &c_name(&s.fields[f].name);
        let old =
            if queued.contains(&f) { format!("q_{name}[{}]", -column_extent(s, f).0) } else { format!("f_{name}[i]") };
        match s.is_system() {
            true => accumulate_change(w, s, k, &old),
            false => accumulate_residual(w, &old),
        }
    }
    w.close("");
}

/// The end of the plain measuring kernel: `my_max` and `my_sum` reduced over the block by
/// a tree in shared memory, and written to the block's entry.
fn emit_tree_reduction(w: &mut Writer) {
    w.line("__shared__ double sh_max[BLOCK_X * BLOCK_Y];");
    w.line("__shared__ double sh_sum[BLOCK_X * BLOCK_Y];");
    w.line("const int t = threadIdx.x + BLOCK_X * threadIdx.y;");
    w.line("sh_max[t] = my_max;");
    w.line("sh_sum[t] = my_sum;");
    w.line("__syncthreads();");
    w.line("// Tree reduction over the block; BLOCK_X * BLOCK_Y need not be a power of two.");
    w.open("for (int width = 1; width < BLOCK_X * BLOCK_Y; width *= 2)");
    w.open("if (t % (2 * width) == 0 && t + width < BLOCK_X * BLOCK_Y)");
    w.line("sh_max[t] = sh_max[t + width] > sh_max[t] ? sh_max[t + width] : sh_max[t];");
    w.line("sh_sum[t] += sh_sum[t + width];");
    w.close("");
    w.line("__syncthreads();");
    w.close("");
    w.open("if (t == 0)");
    w.line("const long long b = blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z);");
    w.line("block_max[b] = sh_max[0];");
    w.line("block_sum[b] = sh_sum[0];");
    w.close("");
}

/// The loop over the block's planes. It always runs MARCH steps, unrolled, and a step past
/// the block's last plane repeats that plane's reads and stores nothing: every load stays
/// in bounds and unconditional, so the compiler can issue the loads of several planes
/// before the first store, which keeps enough bytes in flight to saturate the memory.
pub(super) fn march(w: &mut Writer) {
    w.line("#pragma unroll");
    w.open("for (int k = 0; k < MARCH; ++k)");
    w.line("const idx z = min(z_begin + (idx)k, z_end - 1);");
    w.line("const idx i = z * s0 + y * s1 + x;");
}

/// Declares field `f`'s register queue and loads the planes before the first step;
/// `guard` (empty, or `cond ? `) keeps threads outside the grid from reading.
pub(super) fn declare_queue(w: &mut Writer, s: &Stencil, f: usize, guard: &str) {
    let n = &c_name(&s.fields[f].name);
    let (lo, hi) = column_extent(s, f);
    let len = hi - lo + 1;
    let planes = if len == 1 { format!("plane z{lo:+}") } else { format!("planes z{lo:+} … z{hi:+}") };
    w.line(format!("real q_{n}[{len}]; // {planes}"));
    if len > 1 {
        let zero = if guard.is_empty() { "" } else { " : (real)0" };
        w.line("#pragma unroll");
        w.line(format!(
            "for (int k = 0; k < {}; ++k) q_{n}[k + 1] = {guard}f_{n}[(z_begin + ({lo}) + k) * s0 + y * s1 + x]{zero};",
            len - 1
        ));
    }
}

/// Shifts field `f`'s queue by one plane and loads the newest.
pub(super) fn advance_queue(w: &mut Writer, s: &Stencil, f: usize) {
    let n = &c_name(&s.fields[f].name);
    let (lo, hi) = column_extent(s, f);
    let len = hi - lo + 1;
    if len > 1 {
        w.line("#pragma unroll");
        w.line(format!("for (int q = 0; q < {}; ++q) q_{n}[q] = q_{n}[q + 1];", len - 1));
    }
    w.line(format!("q_{n}[{}] = f_{n}[i + ({hi}) * s0];", len - 1));
}

/// The column access of a queued field, falling back to `other` off the column.
pub(super) fn queue_access(s: &Stencil, f: usize, other: &str) -> String {
    let n = &c_name(&s.fields[f].name);
    let lo = column_extent(s, f).0;
    format!("(((d1) == 0 && (d2) == 0) ? q_{n}[(d0) - ({lo})] : {other})")
}

/// Fields read along the thread's own column at several planes: kept in a register queue.
pub(super) fn column_fields(s: &Stencil) -> Vec<usize> {
    (0..s.fields.len()).filter(|&f| s.reads.iter().any(|r| r.field == f && to_3d(&r.offset)[1..] == [0, 0])).collect()
}

pub(super) fn emit_tiled(w: &mut Writer, s: &Stencil) {
    // Fields read at other points of the current plane are staged plane by plane in shared
    // memory; reads along the column come from the register queue, the rest from global memory.
    let staged: Vec<usize> = (0..s.fields.len())
        .filter(|&f| {
            s.reads.iter().any(|r| r.field == f && to_3d(&r.offset)[0] == 0 && to_3d(&r.offset)[1..] != [0, 0])
        })
        .collect();
    let queued = column_fields(s);
    w.line("// 2.5-D tiled pass: the block marches MARCH planes like the plain pass; at each plane it stages");
    w.line("// the plane's tile and a halo of the radius (clipped at the grid's edge) in shared memory for every");
    w.line("// field read elsewhere in the plane, and keeps reads along the column in registers. Launch with");
    w.line("// blockDim = (BLOCK_X, BLOCK_Y, 1), gridDim = (⌈interior x / BLOCK_X⌉, then as the plain pass). The");
    w.line("// threads start at the interior's origin, so that each staged tile starts on an aligned segment.");
    signature(s, Kind::Tiled).open(w);
    w.line("const int TX = BLOCK_X + 2 * R2, TY = BLOCK_Y + 2 * R1;");
    index_prologue(w);
    w.line("const idx x = R2 + (idx)blockIdx.x * BLOCK_X + threadIdx.x;");
    w.line("const idx y = R1 + (idx)blockIdx.y * BLOCK_Y + threadIdx.y;");
    w.line("const idx tile_x = (idx)blockIdx.x * BLOCK_X, tile_y = (idx)blockIdx.y * BLOCK_Y;");
    w.line("const idx z_begin = R0 + (idx)blockIdx.z * MARCH;");
    w.line("const idx z_end = min(z_begin + (idx)MARCH, N0 - R0);");
    w.line("const bool inside = x < N2 - R2 && y < N1 - R1;");
    w.line("const int tid = threadIdx.x + BLOCK_X * threadIdx.y;");
    if !staged.is_empty() {
        w.line("// A block's static shared memory is at most 48 KiB: fields are staged in order while their planes");
        w.line("// fit, and the others (with many fields, a wide radius or a large block in double) are read from");
        w.line("// global memory, which gives the same values.");
        w.line("constexpr int plane_len = (BLOCK_Y + 2 * R1) * (BLOCK_X + 2 * R2);");
    }
    for (j, &f) in staged.iter().enumerate() {
        w.line(format!("constexpr bool staged_{j} = {} * plane_len * sizeof(real) <= 48 * 1024;", j + 1));
        w.line(format!("__shared__ real plane_{}[staged_{j} ? plane_len : 1];", c_name(&s.fields[f].name)));
    }
    for &f in &queued {
        declare_queue(w, s, f, "inside ? ");
    }
    march(w);
    if !staged.is_empty() {
        w.open("if (staged_0)");
        w.line("__syncthreads(); // every thread is done with the previous plane");
        w.open("for (int t = tid; t < TX * TY; t += BLOCK_X * BLOCK_Y)");
        w.line("const idx gx = tile_x + t % TX, gy = tile_y + t / TX;");
        w.open("if (gx < N2 && gy < N1)");
        for (j, &f) in staged.iter().enumerate() {
            let n = &c_name(&s.fields[f].name);
            // The first field is staged whenever this loop runs.
            let guard = if j == 0 { String::new() } else { format!("if (staged_{j}) ") };
            w.line(format!("{guard}plane_{n}[t] = f_{n}[z * s0 + gy * s1 + gx];"));
        }
        w.close("");
        w.close("");
        w.line("__syncthreads();");
        w.close("");
    }
    w.line("if (!inside) continue;");
    for &f in &queued {
        advance_queue(w, s, f);
    }
    for (f, field) in s.fields.iter().enumerate() {
        let n = &c_name(&field.name);
        let global = format!("f_{n}[i + (d0) * s0 + (d1) * s1 + (d2)]");
        let column = if queued.contains(&f) { queue_access(s, f, &global) } else { global };
        let access = match staged.iter().position(|&g| g == f) {
            Some(j) => format!(
                "((staged_{j} && (d0) == 0) ? plane_{n}[(threadIdx.y + R1 + (d1)) * TX + (threadIdx.x + R2 + (d2))] : {column})"
            ),
            None => column,
        };
        w.line(format!("#define AT_{n}(d0, d1, d2) {access}"));
    }
    point_call(w, s);
    undefine_access(w, s);
    store_values(w, s, "if (z_begin + k < z_end) ");
    w.close("");
    w.close("");
}
