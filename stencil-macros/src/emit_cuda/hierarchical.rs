//! Hierarchical subiterations (paper 003): the working region of a tile in shared memory, or
//! for narrow 1-D and 2-D regions in the registers of one warp.

use super::common::*;
use super::signature::{Kind, define_defaults, signature};
use crate::ir::Stencil;
use crate::writer::Writer;

/// Read-only fields that the hierarchical kernel stages in shared memory: those read at a
/// point other than the thread's own. The others are read from global memory once per
/// point and subiteration: staging them would take shared memory (fewer resident blocks)
/// for a read that the read-only cache already serves.
pub(super) fn hierarchical_staged(s: &Stencil) -> Vec<usize> {
    (0..s.fields.len())
        .filter(|&f| {
            !s.unknowns.contains(&f) && s.reads.iter().any(|r| r.field == f && r.offset.iter().any(|&d| d != 0))
        })
        .collect()
}

/// Three nested loops, one thread per point, over the local box `[lo, hi)` of the working
/// region; defines the local index `l` and the global index `g` of the grid point the region
/// point stands for (wrapped on a periodic axis).
pub(super) fn region_loops(w: &mut Writer, lo: [&str; 3], hi: [&str; 3]) {
    w.open(format!("for (int l0 = {} + threadIdx.z; l0 < {}; l0 += blockDim.z)", lo[0], hi[0]));
    w.open(format!("for (int l1 = {} + threadIdx.y; l1 < {}; l1 += blockDim.y)", lo[1], hi[1]));
    w.open(format!("for (int l2 = {} + threadIdx.x; l2 < {}; l2 += blockDim.x)", lo[2], hi[2]));
    w.line("const int l = (l0 * w1 + l1) * w2 + l2;");
    w.line("const idx g = stencil_wrap(o0 + l0, N0, R0, wrap0) * s0 + stencil_wrap(o1 + l1, N1, R1, wrap1) * s1");
    w.line("    + stencil_wrap(o2 + l2, N2, R2, wrap2);");
}

/// The device function that wraps a coordinate of a periodic axis onto the interior (the
/// hierarchical and streaming kernels' working regions use it).
pub(super) fn emit_wrap(w: &mut Writer) {
    w.line("// A working region's coordinate x on an axis of n points and radius r: itself, or on a periodic");
    w.line("// axis (wrap) the interior point it stands for, r + (x − r) mod (n − 2r).");
    w.open("__device__ __forceinline__ idx stencil_wrap(const idx x, const idx n, const idx r, const bool wrap)");
    w.line("if (!wrap) return x;");
    w.line("const idx m = n - 2 * r;");
    w.line("const idx y = (x - r) % m;");
    w.line("return r + (y < 0 ? y + m : y);");
    w.close("");
}

/// The mirror rule at region point (l0, l1, l2) of a region at (o0, o1, o2): `m` its mirror
/// point's local coordinates on every mirrored (Neumann) axis where it is in the outer
/// layer; `mirrored`, whether there is one; `kept`, whether it is in another outer layer.
pub(super) fn mirror_rule(w: &mut Writer) {
    w.line("int m[3] = {l0, l1, l2};");
    w.line("bool mirrored = false, kept = false;");
    w.line(
        "const idx x[3] = {o0 + l0, o1 + l1, o2 + l2}, n[3] = {N0, N1, N2}, r[3] = {R0, R1, R2}, o[3] = {o0, o1, o2};",
    );
    w.line("const int edges[3] = {edges0, edges1, edges2};");
    w.line("#pragma unroll");
    w.open("for (int k = 0; k < 3; ++k)");
    w.line("if (edges[k] & 1) continue;");
    w.open("if (x[k] < r[k])");
    w.line("if (edges[k] & 2) { m[k] = (int)(2 * r[k] - 1 - x[k] - o[k]); mirrored = true; } else kept = true;");
    w.reopen("else if (x[k] >= n[k] - r[k])");
    w.line(
        "if (edges[k] & 4) { m[k] = (int)(2 * (n[k] - r[k]) - 1 - x[k] - o[k]); mirrored = true; } else kept = true;",
    );
    w.close("");
    w.close("");
}

/// After a subiteration, the working region's points in a mirrored (Neumann) outer layer,
/// and in no other outer layer, take their mirror points' new values.
fn emit_mirror(w: &mut Writer, unknowns: &[String]) {
    w.open("if (mirrors)");
    region_loops(w, ["0", "0", "0"], ["w0", "w1", "w2"]);
    mirror_rule(w);
    w.open("if (mirrored && !kept)");
    w.line("const int source = (m[0] * w1 + m[1]) * w2 + m[2];");
    for n in unknowns {
        w.line(format!("next_{n}[l] = next_{n}[source];"));
    }
    w.close("");
    close_region_loops(w);
    w.line("__syncthreads();");
    w.close("");
}

pub(super) fn close_region_loops(w: &mut Writer) {
    w.close("");
    w.close("");
    w.close("");
}

pub(super) fn emit_hierarchical(w: &mut Writer, s: &Stencil) {
    let staged = hierarchical_staged(s);
    let k = s.unknowns.len();
    w.line("// Hierarchical subiterations (paper 003): one block per core tile of `tile` points per axis. The");
    w.line("// block loads the tile's working region (the core and h0, h1, h2 points on each side, clipped at the");
    w.line("// grid's edge) into shared memory, twice for every unknown (double buffer) and once for every");
    w.line("// read-only field read off the point, then runs `sub` Jacobi subiterations on the region's points at");
    w.line("// distance ≥ the radius from its edge; the outer ring keeps its loaded values. Then the core is");
    w.line("// written to the outputs. With `measure` > 0, subiteration `measure` − 1 measures S(u) − u on the core");
    w.line("// (per block and over every unknown, max |·| and Σ(·)² in double) and the written values are checked");
    w.line("// for NaN or ±∞ (atomicMin). `edges` per axis: 1, the axis is periodic and the region goes on past");
    w.line("// the grid's edge, each point standing for the interior point it wraps to; 2 and 4, after each");
    w.line("// subiteration the region's points in the low or high Neumann outer layer take their mirror points'");
    w.line("// values. The cores of the grid's axis 0 tile [lo0, hi0): its interior in one");
    w.line("// process; a part of it, aligned to the whole grid's tiles, under an MPI rank. Launch with one block");
    w.line("// per tile: gridDim = (tiles on axis 2, axis 1, axis 0), any blockDim, and");
    w.line(format!(
        "// dynamic shared memory of ({} + {}) · w0 · w1 · w2 elements (the working region's extents).",
        2 * k,
        staged.len()
    ));
    signature(s, Kind::Hierarchical).open(w);
    w.line("extern __shared__ double stencil_shared[]; // double: aligned for either element type");
    index_prologue(w);
    emit_region_geometry(w, s);
    // Unknown j's two buffers are regions 2j and 2j + 1; they swap after every subiteration.
    let unknowns: Vec<String> = s.unknowns.iter().map(|&f| c_name(&s.fields[f].name)).collect();
    for (j, n) in unknowns.iter().enumerate() {
        w.line(format!("real* current_{n} = (real*)stencil_shared + {} * volume;", 2 * j));
        w.line(format!("real* next_{n} = (real*)stencil_shared + {} * volume;", 2 * j + 1));
    }
    for (j, &f) in staged.iter().enumerate() {
        w.line(format!(
            "real* const region_{} = (real*)stencil_shared + {} * volume;",
            c_name(&s.fields[f].name),
            j + 2 * k
        ));
    }
    region_loops(w, ["0", "0", "0"], ["w0", "w1", "w2"]);
    for n in &unknowns {
        w.line(format!("current_{n}[l] = next_{n}[l] = f_{n}[g];"));
    }
    for &f in &staged {
        let n = &c_name(&s.fields[f].name);
        w.line(format!("region_{n}[l] = f_{n}[g];"));
    }
    close_region_loops(w);
    w.line("__syncthreads();");
    w.line("double my_max = 0.0, my_sum = 0.0;");
    w.open("for (int step = 0; step < sub; ++step)");
    emit_update(w, s, &staged, &unknowns);
    w.line("__syncthreads();");
    emit_mirror(w, &unknowns);
    for n in &unknowns {
        w.line(format!("real* const done_{n} = next_{n};"));
        w.line(format!("next_{n} = current_{n};"));
        w.line(format!("current_{n} = done_{n};"));
    }
    w.close("");
    write_back_core(w, s);
    w.line("if (!measure) return;");
    emit_block_reduction(w);
    w.close("");
    w.blank();
}

/// The edges' flags, the core `[c, e)` and the working region `[o, o + w)` per axis.
fn emit_region_geometry(w: &mut Writer, s: &Stencil) {
    w.line("const bool wrap0 = edges0 & 1, wrap1 = edges1 & 1, wrap2 = edges2 & 1;");
    w.line("const bool mirrors = ((edges0 | edges1 | edges2) & 6) != 0;");
    w.line("// Staged read-only fields hold the values at the region's (wrapped) points, which a plain iteration");
    w.line("// reads only away from a periodic edge: with one, they are read around the wrapped point instead.");
    w.line("const bool staged_reads = !(wrap0 || wrap1 || wrap2);");
    w.line("// The core [c, e) and the working region [o, o + w) per axis; the cores of the grid's axis 0 tile");
    w.line("// [lo0, hi0).");
    let (axis_0, axis_2) = core_bounds(s);
    w.line(format!("const idx c0 = {}, c1 = R1 + (idx)blockIdx.y * tile, c2 = {};", axis_0[0], axis_2[0]));
    w.line(format!("const idx e0 = {}, e1 = min(c1 + (idx)tile, N1 - R1), e2 = {};", axis_0[1], axis_2[1]));
    w.line("const idx o0 = wrap0 ? c0 - (idx)h0 : max(c0 - (idx)h0, (idx)0);");
    w.line("const idx o1 = wrap1 ? c1 - (idx)h1 : max(c1 - (idx)h1, (idx)0);");
    w.line("const idx o2 = wrap2 ? c2 - (idx)h2 : max(c2 - (idx)h2, (idx)0);");
    w.line("const int w0 = (int)((wrap0 ? e0 + (idx)h0 : min(e0 + (idx)h0, N0)) - o0);");
    w.line("const int w1 = (int)((wrap1 ? e1 + (idx)h1 : min(e1 + (idx)h1, N1)) - o1);");
    w.line("const int w2 = (int)((wrap2 ? e2 + (idx)h2 : min(e2 + (idx)h2, N2)) - o2);");
    w.line("const int volume = w0 * w1 * w2;");
}

/// One subiteration's update of the region's points at distance ≥ the radius from its edge,
/// with the measurement of the measured one.
fn emit_update(w: &mut Writer, s: &Stencil, staged: &[usize], unknowns: &[String]) {
    region_loops(w, ["R0", "R1", "R2"], ["w0 - R0", "w1 - R1", "w2 - R2"]);
    w.line("const int local_offset_0 = w1 * w2;");
    for (f, field) in s.fields.iter().enumerate() {
        let n = &c_name(&field.name);
        let access = if s.unknowns.contains(&f) {
            format!("current_{n}[l + (d0) * local_offset_0 + (d1) * w2 + (d2)]")
        } else if staged.contains(&f) {
            format!(
                "(staged_reads ? region_{n}[l + (d0) * local_offset_0 + (d1) * w2 + (d2)] : f_{n}[g + (d0) * s0 + (d1) * s1 + (d2)])"
            )
        } else {
            format!("f_{n}[g + (d0) * s0 + (d1) * s1 + (d2)]")
        };
        w.line(format!("#define AT_{n}(d0, d1, d2) {access}"));
    }
    point_call(w, s);
    undefine_access(w, s);
    w.line("const bool in_core = o0 + l0 >= c0 && o0 + l0 < e0 && o1 + l1 >= c1 && o1 + l1 < e1 && o2 + l2 >= c2 && o2 + l2 < e2;");
    w.open("if (measure && step == measure - 1 && in_core)");
    for (j, n) in unknowns.iter().enumerate() {
        match s.is_system() {
            true => accumulate_change(w, s, j, &format!("current_{n}[l]")),
            false => accumulate_residual(w, &format!("current_{n}[l]")),
        }
    }
    w.close("");
    for (j, n) in unknowns.iter().enumerate() {
        w.line(format!("next_{n}[l] = {};", value(s, j)));
    }
    close_region_loops(w);
}

/// The core of the working region written to the outputs, and checked for NaN or ±∞ when
/// measuring.
fn write_back_core(w: &mut Writer, s: &Stencil) {
    region_loops(
        w,
        ["(int)(c0 - o0)", "(int)(c1 - o1)", "(int)(c2 - o2)"],
        ["(int)(e0 - o0)", "(int)(e1 - o1)", "(int)(e2 - o2)"],
    );
    for (j, &f) in s.unknowns.iter().enumerate() {
        let n = &c_name(&s.fields[f].name);
        w.line(format!("{}[g] = current_{n}[l];", output(j)));
        w.line(format!("if (measure && !isfinite(current_{n}[l])) atomicMin(first_bad, (unsigned long long)g);"));
    }
    close_region_loops(w);
}

/// The first core point of the block's tile and its end on the kernel's axes 0 and 2. The
/// cores of the grid's axis 0 (the kernel's axis 0, or 2 for a 1-D grid, which the kernels
/// see as 1 × 1 × n) tile `[lo0, hi0)`; those of the other axes the interior.
pub(super) fn core_bounds(s: &Stencil) -> ([&'static str; 2], [&'static str; 2]) {
    const CUT_0: [&str; 2] = ["(idx)lo0 + (idx)blockIdx.z * tile", "min(c0 + (idx)tile, (idx)hi0)"];
    const CUT_2: [&str; 2] = ["(idx)lo0 + (idx)blockIdx.x * tile", "min(c2 + (idx)tile, (idx)hi0)"];
    const INTERIOR_0: [&str; 2] = ["R0 + (idx)blockIdx.z * tile", "min(c0 + (idx)tile, N0 - R0)"];
    const INTERIOR_2: [&str; 2] = ["R2 + (idx)blockIdx.x * tile", "min(c2 + (idx)tile, N2 - R2)"];
    if s.dim == 1 { (INTERIOR_0, CUT_2) } else { (CUT_0, INTERIOR_2) }
}

/// The fields the `_hier_rows` kernel keeps in registers: the unknown, then the read-only
/// fields read off the point (they need other rows or lanes). A read-only field read only at
/// the point is read from memory (through the read-only cache) each subiteration instead,
/// which leaves registers for more warps.
pub(super) fn register_fields(s: &Stencil) -> Vec<usize> {
    std::iter::once(s.unknown).chain(hierarchical_staged(s)).collect()
}

/// The register form of the hierarchical kernel, for 1-D and 2-D stencils whose working
/// region is at most 32 points wide along the contiguous axis: one warp per tile, lane `x`
/// holding column `x` of the working region (HIER_ROWS points along the slow axis) in
/// registers. Neighbours along the column are other registers of the same thread, neighbours
/// across columns come from other lanes by shuffles; no shared memory and no barrier. Same
/// partition, same operations and same results as `<name>_hier`.
pub(super) fn emit_hierarchical_rows(w: &mut Writer, s: &Stencil) {
    let unknown = &c_name(&s.fields[s.unknown].name);
    let kept = register_fields(s);
    w.line("// Hierarchical subiterations in registers (1-D and 2-D): one warp per core tile, lane x holding");
    w.line("// column x of the working region (HIER_ROWS points along the slow axis; rows past the grid repeat");
    w.line("// its last row, lanes past the region repeat its last column, and neither is ever updated or");
    w.line("// stored) of the unknown and of the read-only fields read off the point; fields read only at the");
    w.line("// point are read from memory. A read across columns is a shuffle from the lane d2 away; every");
    w.line("// lane evaluates every read, so the shuffles never diverge. Same partition and operations as the");
    w.line("// shared-memory kernel. Launch with gridDim = (tiles on axis 2, 1, tiles on axis 0), blockDim =");
    w.line("// (32, 1, 1), and -DHIER_ROWS = the working region's rows, min(tile + 2·h0, n0).");
    w.line("// HIER_MIN_BLOCKS: warps resident per SM that the register allocation must allow (the launch bound).");
    define_defaults(w, &signature(s, Kind::HierarchicalRows).defines);
    w.line("// The value held by the lane `d` columns away (`d` is a constant once the reads are unrolled).");
    w.open("__device__ __forceinline__ real stencil_lane_shift(const real v, const int d)");
    w.line("return d == 0 ? v : d > 0 ? __shfl_down_sync(0xffffffffu, v, d) : __shfl_up_sync(0xffffffffu, v, -d);");
    w.close("");
    signature(s, Kind::HierarchicalRows).open(w);
    index_prologue(w);
    w.line("// The core [c, e) and the working region [o, o + w) on axes 0 and 2; the cores of the grid's axis 0");
    w.line("// tile [lo0, hi0).");
    let (axis_0, axis_2) = core_bounds(s);
    w.line(format!("const idx c0 = {}, c2 = {};", axis_0[0], axis_2[0]));
    w.line(format!("const idx e0 = {}, e2 = {};", axis_0[1], axis_2[1]));
    w.line("const idx o0 = max(c0 - (idx)h0, (idx)0), o2 = max(c2 - (idx)h2, (idx)0);");
    w.line("const int w0 = (int)(min(e0 + (idx)h0, N0) - o0), w2 = (int)(min(e2 + (idx)h2, N2) - o2);");
    w.line("const int lane = threadIdx.x;");
    w.line("const bool lane_in_core = o2 + lane >= c2 && o2 + lane < e2;");
    w.line("const bool lane_updates = lane >= R2 && lane < w2 - R2;");
    w.line("// Row j of this lane's column is at base + j · s0 (j < w0).");
    w.line("const idx base = o0 * s0 + o2 + min(lane, w2 - 1);");
    for &f in &kept {
        w.line(format!("real reg_{}[HIER_ROWS];", c_name(&s.fields[f].name)));
    }
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < HIER_ROWS; ++j)");
    w.line("const idx g = base + (idx)min(j, w0 - 1) * s0;");
    for &f in &kept {
        let n = &c_name(&s.fields[f].name);
        w.line(format!("reg_{n}[j] = f_{n}[g];"));
    }
    w.close("");
    w.line("double my_max = 0.0, my_sum = 0.0;");
    w.open("for (int step = 0; step < sub; ++step)");
    // The measuring subiteration (`measure` − 1) has its own copy of the loop, so that the
    // other subiterations carry no test for it.
    w.open("if (measure && step == measure - 1)");
    emit_rows_subiteration(w, s, &kept, true);
    w.reopen("else");
    emit_rows_subiteration(w, s, &kept, false);
    w.close("");
    w.close("");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < HIER_ROWS; ++j)");
    w.open("if (lane_in_core && o0 + j >= c0 && o0 + j < e0)");
    w.line("const idx g = base + (idx)j * s0;");
    w.line(format!("out[g] = reg_{unknown}[j];"));
    w.line(format!("if (measure && !isfinite(reg_{unknown}[j])) atomicMin(first_bad, (unsigned long long)g);"));
    w.close("");
    w.close("");
    w.line("if (!measure) return;");
    emit_block_reduction(w);
    w.close("");
    w.blank();
}

/// One subiteration of `_hier_rows` over the lane's column, unrolled; `measure`: also
/// accumulate S(u) − u over the core.
pub(super) fn emit_rows_subiteration(w: &mut Writer, s: &Stencil, kept: &[usize], measure: bool) {
    let unknown = &c_name(&s.fields[s.unknown].name);
    w.line("real next[HIER_ROWS];");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < HIER_ROWS; ++j)");
    w.open("if (j < R0 || j >= HIER_ROWS - R0)");
    w.line(format!("next[j] = reg_{unknown}[j];"));
    w.line("continue;");
    w.close("");
    for (f, field) in s.fields.iter().enumerate() {
        let n = &c_name(&field.name);
        if kept.contains(&f) {
            w.line(format!("#define AT_{n}(d0, d1, d2) stencil_lane_shift(reg_{n}[j + (d0)], (d2))"));
        } else {
            // Read only at the point (d0 = d1 = d2 = 0): the lane's own row j.
            w.line(format!("#define AT_{n}(d0, d1, d2) __ldg(&f_{n}[base + (idx)min(j, w0 - 1) * s0])"));
        }
    }
    point_call(w, s);
    undefine_access(w, s);
    if measure {
        w.open("if (lane_in_core && o0 + j >= c0 && o0 + j < e0)");
        accumulate_residual(w, &format!("reg_{unknown}[j]"));
        w.close("");
    }
    w.line(format!("next[j] = lane_updates && j < w0 - R0 ? v : reg_{unknown}[j];"));
    w.close("");
    w.line("#pragma unroll");
    w.line(format!("for (int j = 0; j < HIER_ROWS; ++j) reg_{unknown}[j] = next[j];"));
}
