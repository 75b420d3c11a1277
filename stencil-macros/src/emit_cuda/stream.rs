//! Streaming (2.5-D) temporal blocking: an exact hierarchical cycle whose blocks tile the two
//! fast axes and march the slowest, carrying every subiteration ("level") one plane behind
//! the one before it through a ring of planes in shared memory and registers. Each plane of
//! the unknowns is read from memory once and written once per cycle, and nothing along the
//! marching axis is computed twice except the halos of the chunks it is cut into.

use super::common::*;
use super::hierarchical::{core_bounds, mirror_rule};
use super::signature::{Kind, define_defaults, signature};
use crate::ir::Stencil;
use crate::writer::Writer;

/// The plane offsets on the marching axis of the unknowns' reads across columns (d1 or
/// d2 ≠ 0): those a level takes from the previous level's ring in shared memory.
fn reads_across_columns(s: &Stencil) -> impl Iterator<Item = i32> + '_ {
    s.reads
        .iter()
        .filter(|r| s.unknowns.contains(&r.field))
        .map(|r| to_3d(&r.offset))
        .filter(|d| d[1] != 0 || d[2] != 0)
        .map(|d| d[0])
}

/// Whether a step may compute its levels in ascending order, each level right after the one
/// before it and R0 planes behind it: a level's reads across columns then reach only planes
/// the level before finished at an earlier step (before the step's barrier), and its reads at
/// its own columns, R0 planes ahead at most, come from the queue the level before pushed
/// earlier in the same step. Holds where every read across columns lies less than R0 planes
/// ahead. In descending order (the default) the levels are R0 + 1 planes apart, so that every
/// plane a level reads was finished at an earlier step, and a step's levels are independent
/// of each other; a kernel built with the mirror rule always runs them so: a mirrored read at
/// the own column may take another column's value.
fn ascending(s: &Stencil) -> bool {
    let r0 = to_3d(&s.radius)[0];
    r0 > 0 && reads_across_columns(s).all(|d0| i64::from(d0) < r0 as i64)
}

/// The planes of each level's ring in shared memory, for the levels in either order and with
/// the mirror rule (see [`stream_rings`]).
pub(super) struct StreamRings {
    /// Levels in descending order, R0 + 1 planes apart.
    pub descending: usize,
    /// Levels in ascending order, R0 planes apart, where the stencil allows it.
    pub ascending: Option<usize>,
    /// A kernel built with the mirror rule (descending order).
    pub mirrored: usize,
}

/// The planes of a level's ring in shared memory: from the oldest plane a read takes from
/// shared memory to the plane the level writes while the next level reads, `lag − min d0 + 1`,
/// rounded up to a power of two (a plane's slot is then a mask of its index).
/// Reads of an unknown at its own column (d1 = d2 = 0) come from registers, so only reads
/// across columns count. A kernel built with the mirror rule reads every unknown through
/// shared memory (a mirror is another column or plane), and its ring spans the whole radius.
pub(super) fn stream_rings(s: &Stencil) -> StreamRings {
    let r0 = to_3d(&s.radius)[0];
    let lowest = i64::from(reads_across_columns(s).min().unwrap_or(0).min(0));
    let ring = |lag: usize| ((lag as i64 - lowest + 1) as usize).next_power_of_two();
    StreamRings {
        descending: ring(r0 + 1),
        ascending: ascending(s).then(|| ring(r0)),
        mirrored: (2 * r0 + 2).next_power_of_two(),
    }
}

/// Read-only fields read only at the point itself: the first level's value for the next step
/// is loaded at the end of a step, so that the load's latency passes during the barrier, and
/// handed on to the later levels in registers.
fn point_fields(s: &Stencil) -> Vec<usize> {
    (0..s.fields.len())
        .filter(|f| !s.unknowns.contains(f))
        .filter(|&f| s.reads.iter().filter(|r| r.field == f).all(|r| r.offset.iter().all(|&d| d == 0)))
        .filter(|&f| s.reads.iter().any(|r| r.field == f))
        .collect()
}

/// Whether every read-only field the stencil reads is read only at the point (then every read
/// of a steady step but the unknowns' comes from registers).
fn read_only_fields_only_at_the_point(s: &Stencil) -> bool {
    let at_point = point_fields(s);
    s.reads.iter().all(|r| s.unknowns.contains(&r.field) || at_point.contains(&r.field))
}

/// The device function that maps a read of the working region onto the point whose value it
/// takes under the mirror rule: a point in a Neumann outer layer, and in no other outer
/// layer, stands for its mirror point (on every axis at once), as after a hierarchical
/// subiteration. Returns the region's local coordinates.
fn emit_mirror_map(w: &mut Writer) {
    w.line("// The local coordinates (plane, then column within the plane) of the region point whose value a");
    w.line("// read of region point (l0, l1, l2) takes: itself, or its mirror point when it lies in a mirrored");
    w.line("// (Neumann) outer layer and in no kept one.");
    w.open(
        "__device__ __forceinline__ void stencil_stream_mirror(int& l0, int& l1, int& l2, const idx o0, const idx o1, \
         const idx o2, const idx N0, const idx N1, const idx N2, const int edges0, const int edges1, const int edges2)",
    );
    mirror_rule(w);
    w.open("if (mirrored && !kept)");
    w.line("l0 = m[0]; l1 = m[1]; l2 = m[2];");
    w.close("");
    w.close("");
}

/// The kernel's contract, written above it: what a block does and how it is launched.
fn emit_contract(w: &mut Writer, unknowns: usize, rings: &StreamRings) {
    w.line("// Streaming temporal blocking: an exact hierarchical cycle of `sub` subiterations (levels) whose");
    w.line("// blocks each take one core tile of the two fast axes and a chunk of the slowest axis's cores");
    w.line("// (the cores [lo0, hi0) cut into gridDim.z chunks), with the working region h1, h2 points wider on");
    w.line("// each side and h0 planes longer at each end (clipped at the grid's edge, or wrapped on a periodic");
    w.line("// axis). The block marches the region's planes: at step k it loads plane k (level 0) and level t");
    w.line("// computes plane k − t·LAG, reading the previous level's planes within the radius: across columns");
    w.line("// only planes it finished at earlier steps, and at the own columns (ascending order, LAG = R0) also");
    w.line("// the plane it finished earlier in the same step; the last level's core points are written out.");
    w.line("// A thread owns STREAM_COLS consecutive columns of a plane; reads at its own columns come from");
    w.line("// registers (a queue of 2·R0 + 1 planes per level and column), the others from the previous");
    w.line("// level's ring of planes in shared memory. Points within the radius of the region's edge keep");
    w.line("// their values, and with mirrored (Neumann) sides every read goes through the mirror rule. One");
    w.line("// barrier per step; the steps where every level's plane is updated take a path without the edges'");
    w.line("// tests.");
    w.line("// Launch with gridDim = (tiles on axis 2, tiles on axis 1, chunks), blockDim = (STREAM_THREADS, 1, 1)");
    w.line("// with STREAM_THREADS · STREAM_COLS ≥ STREAM_W1 · STREAM_W2 (the widest region's extents on axes 1");
    w.line("// and 2: a region's column (l1, l2) is element l1 · STREAM_W2 + l2 of a plane), STREAM_SUB ≥ sub (0,");
    w.line("// the default, compiles an empty kernel: only a run that streams pays for its compilation),");
    w.line("// STREAM_MIRRORS = 1 if a region may meet a mirrored side (else the mirror rule is not compiled),");
    w.line("// STREAM_GUARD ≥ STREAM_GUARD_LEAST (what a column's reads reach past a plane: its radius, and the");
    w.line("// columns the last threads hold past it), and");
    w.line(format!(
        "// dynamic shared memory of STREAM_SUB · {unknowns} · ring · STREAM_SLOT elements, ring = {}",
        rings.descending
    ));
    match rings.ascending {
        Some(ring) => {
            w.line(format!("// ({ring} with STREAM_ASCENDING = 1, {} with STREAM_MIRRORS = 1).", rings.mirrored))
        }
        None => w.line(format!("// ({} with STREAM_MIRRORS = 1).", rings.mirrored)),
    }
}

pub(super) fn emit_stream(w: &mut Writer, s: &Stencil) {
    let rings = stream_rings(s);
    let unknowns: Vec<String> = s.unknowns.iter().map(|&f| c_name(&s.fields[f].name)).collect();
    let prefetched = point_fields(s);
    emit_contract(w, unknowns.len(), &rings);
    define_defaults(w, &signature(s, Kind::Streaming).defines);
    w.line("// The order of a step's levels (level 0 and then the others ascending, each LAG = R0 planes behind");
    w.line("// the one before it, or the others descending, LAG = R0 + 1 planes apart, and level 0 last), and the");
    w.line("// planes of a level's ring. In descending order level 0 is the levels' loop's last iteration where");
    w.line("// STREAM_ZERO_IN_LOOP = 1, else it follows the loop (the same computation, scheduled differently).");
    w.line("#if STREAM_MIRRORS");
    w.line("#undef STREAM_ASCENDING");
    w.line("#define STREAM_ASCENDING 0");
    w.line(format!("#define STREAM_RING {}", rings.mirrored));
    w.line("#elif STREAM_ASCENDING");
    match rings.ascending {
        Some(ring) => w.line(format!("#define STREAM_RING {ring}")),
        None => w.line("#error \"this stencil reads across columns R0 planes ahead: its levels run descending only\""),
    }
    w.line("#else");
    w.line(format!("#define STREAM_RING {}", rings.descending));
    w.line("#endif");
    w.line("#define STREAM_LAG (STREAM_ASCENDING ? R0 : R0 + 1)");
    w.line("#define STREAM_PITCH (STREAM_W1 * STREAM_W2)");
    w.line("// A plane's slot in shared memory: the plane, with STREAM_GUARD elements on each side that");
    w.line("// reads from the columns at its edges (and past them) may touch and nothing writes.");
    w.line("#define STREAM_GUARD_LEAST (R1 * STREAM_W2 + R2 + STREAM_THREADS * STREAM_COLS - STREAM_PITCH)");
    w.line("#define STREAM_SLOT (STREAM_PITCH + 2 * STREAM_GUARD)");
    w.line("// A thread's columns are consecutive in a plane: column j of thread i is STREAM_COL(j).");
    w.line("#define STREAM_COL(j) ((int)threadIdx.x * STREAM_COLS + (j))");
    w.line("// A read-only field read only at the point is loaded once per plane, for the first level, and");
    w.line("// passed on to the later levels in a queue of registers: level t reads entry (t − 1) · LAG.");
    w.line("#define STREAM_POINTS ((STREAM_SUB - 1) * STREAM_LAG + 1)");
    w.line("#ifndef STREAM_PREFETCH");
    w.line("// Planes ahead of level 0 that are asked into L2: 2·R0, at least 2 (the fastest measured for radius");
    w.line("// 1 among 1, 2, 3, 4 and 8 with `jacobi7`, and for radius 2 between 2 and 4).");
    w.line("#define STREAM_PREFETCH (R0 > 1 ? 2 * R0 : 2)");
    w.line("#endif");
    w.line("#if STREAM_SUB > 0");
    w.line("static_assert(STREAM_THREADS * STREAM_COLS >= STREAM_PITCH, \"a column of the region without a thread\");");
    w.line("static_assert(STREAM_GUARD >= STREAM_GUARD_LEAST, \"reads past a plane's slot\");");
    emit_mirror_map(w);
    w.line("// Asks the line of `p` into L2, without a register to receive it.");
    w.open("__device__ __forceinline__ void stencil_prefetch_l2(const void* p)");
    w.line("asm volatile(\"prefetch.global.L2 [%0];\" :: \"l\"(p));");
    w.close("");
    w.line("#endif");
    signature(s, Kind::Streaming).open(w);
    w.line("#if STREAM_SUB > 0");
    w.line("extern __shared__ double stencil_shared[]; // double: aligned for either element type");
    index_prologue(w);
    emit_geometry(w, s);
    w.line("// Unknown u's ring of level t (t < STREAM_SUB) starts at element (u · STREAM_SUB + t) · ring · SLOT,");
    w.line("// its planes STREAM_GUARD elements into their slots.");
    for (u, n) in unknowns.iter().enumerate() {
        w.line(format!(
            "real* const ring_{n} = (real*)stencil_shared + {u} * STREAM_SUB * ring * STREAM_SLOT + STREAM_GUARD;"
        ));
        w.line(format!("real queue_{n}[STREAM_SUB][STREAM_COLS][2 * R0 + 1];"));
        w.line(format!("real ahead_{n}[STREAM_COLS];"));
    }
    emit_columns(w, &unknowns);
    for &f in &prefetched {
        w.line(format!("real point_{}[STREAM_COLS][STREAM_POINTS] = {{}};", c_name(&s.fields[f].name)));
    }
    emit_prefetch(w, s, &prefetched, "0", false);
    w.line("double my_max = 0.0, my_sum = 0.0;");
    emit_march(w, s, &unknowns, &prefetched);
    w.line("if (!measure) return;");
    emit_block_reduction(w);
    w.line("#endif");
    w.close("");
    w.blank();
}

/// The march over the region's planes: steady steps in groups of a ring's period, the
/// others (the levels' start and end, shortened cycles, wrapped or mirrored edges, steps
/// before the first group and after the last) one at a time with every test.
fn emit_march(w: &mut Writer, s: &Stencil, unknowns: &[String], prefetched: &[usize]) {
    w.line("const int steps = (int)(e0 - o0) + sub * STREAM_LAG;");
    w.line("// The steps whose every level computes an updated plane, and the last one a core plane, with the");
    w.line("// kernel's full length and no wrapped or mirrored edge: no test of the edges there.");
    w.line("const bool plain_edges = sub == STREAM_SUB && !wrap0 && !(STREAM_MIRRORS && mirrors);");
    w.line("const int steady_from = STREAM_SUB * STREAM_LAG + max(R0, (int)(c0 - o0));");
    w.line("const int steady_to = min(w0 - R0 + STREAM_LAG, (int)(e0 - o0) + STREAM_SUB * STREAM_LAG);");
    w.open("for (int k = 0; k < steps;)");
    w.open("if (plain_edges && k >= steady_from && (k & (STREAM_RING - 1)) == 0 && k + STREAM_RING <= steady_to)");
    w.line("// Steady steps in groups of the ring's period, each group from a step that is a multiple of it:");
    w.line("// within a group every plane's slot in a ring is known at compile time (u's), and the queues'");
    w.line("// moves become the choice of registers.");
    w.open("for (; k + STREAM_RING <= steady_to; k += STREAM_RING)");
    w.line("#pragma unroll");
    w.open("for (int u = 0; u < STREAM_RING; ++u)");
    emit_steady_levels(w, s, unknowns);
    emit_level_zero_after(w, s, unknowns, true);
    emit_prefetch(w, s, prefetched, "k + u + 1", true);
    w.line("__syncthreads();");
    w.close("");
    w.close("");
    w.reopen("else");
    emit_levels(w, s, unknowns);
    emit_level_zero_after(w, s, unknowns, false);
    emit_prefetch(w, s, prefetched, "k + 1", false);
    w.line("__syncthreads();");
    w.line("++k;");
    w.close("");
    w.close("");
}

/// The flags of the edges, the core and the working region per axis, and the ring's length.
fn emit_geometry(w: &mut Writer, s: &Stencil) {
    w.line("const bool wrap0 = edges0 & 1, wrap1 = edges1 & 1, wrap2 = edges2 & 1;");
    w.line("const bool mirrors = ((edges0 | edges1 | edges2) & 6) != 0;");
    w.line("const int ring = STREAM_RING;");
    w.line("// The core [c, e) and the working region [o, o + w) per axis.");
    if s.dim == 1 {
        let (axis_0, axis_2) = core_bounds(s);
        w.line(format!("const idx c0 = {}, c1 = 0, c2 = {};", axis_0[0], axis_2[0]));
        w.line(format!("const idx e0 = {}, e1 = 1, e2 = {};", axis_0[1], axis_2[1]));
    } else {
        w.line("const idx chunk = ((idx)hi0 - (idx)lo0 + (idx)gridDim.z - 1) / (idx)gridDim.z;");
        w.line("const idx c0 = (idx)lo0 + (idx)blockIdx.z * chunk, e0 = min(c0 + chunk, (idx)hi0);");
        w.line("const idx c1 = R1 + (idx)blockIdx.y * tile, e1 = min(c1 + (idx)tile, N1 - R1);");
        w.line("const idx c2 = R2 + (idx)blockIdx.x * tile, e2 = min(c2 + (idx)tile, N2 - R2);");
    }
    w.line("const idx o0 = wrap0 ? c0 - (idx)h0 : max(c0 - (idx)h0, (idx)0);");
    w.line("const idx o1 = wrap1 ? c1 - (idx)h1 : max(c1 - (idx)h1, (idx)0);");
    w.line("const idx o2 = wrap2 ? c2 - (idx)h2 : max(c2 - (idx)h2, (idx)0);");
    w.line("const int w0 = (int)((wrap0 ? e0 + (idx)h0 : min(e0 + (idx)h0, N0)) - o0);");
    w.line("const int w1 = (int)((wrap1 ? e1 + (idx)h1 : min(e1 + (idx)h1, N1)) - o1);");
    w.line("const int w2 = (int)((wrap2 ? e2 + (idx)h2 : min(e2 + (idx)h2, N2)) - o2);");
}

/// Each thread's columns of the region: `col = STREAM_COL(j)` is column
/// (col / STREAM_W2, col % STREAM_W2); whether it is in the region, updated and in the core,
/// and its memory offset within a plane (wrapped on a periodic axis).
fn emit_columns(w: &mut Writer, unknowns: &[String]) {
    w.line("int col_l1[STREAM_COLS], col_l2[STREAM_COLS];");
    w.line("bool col_valid[STREAM_COLS], col_updates[STREAM_COLS], col_core[STREAM_COLS];");
    w.line("idx col_g[STREAM_COLS];");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < STREAM_COLS; ++j)");
    w.line("const int col = STREAM_COL(j);");
    w.line("col_l1[j] = col / STREAM_W2;");
    w.line("col_l2[j] = col % STREAM_W2;");
    w.line("col_valid[j] = col_l1[j] < w1 && col_l2[j] < w2;");
    w.line("col_updates[j] = col_l1[j] >= R1 && col_l1[j] < w1 - R1 && col_l2[j] >= R2 && col_l2[j] < w2 - R2;");
    w.line("const idx x1 = o1 + col_l1[j], x2 = o2 + col_l2[j];");
    w.line("col_core[j] = col_valid[j] && x1 >= c1 && x1 < e1 && x2 >= c2 && x2 < e2;");
    w.line("col_g[j] = col_valid[j] ? stencil_wrap(x1, N1, R1, wrap1) * s1 + stencil_wrap(x2, N2, R2, wrap2) : 0;");
    for n in unknowns {
        w.line(format!(
            "ahead_{n}[j] = col_valid[j] ? f_{n}[stencil_wrap(o0, N0, R0, wrap0) * s0 + col_g[j]] : (real)0;"
        ));
    }
    w.close("");
}

/// Opens the loop over a step's levels in the order `STREAM_ASCENDING` says, with level 0
/// (`steady`: of a steady step) in it where the levels ascend or `STREAM_ZERO_IN_LOOP` is set
/// (else it follows the loop): the body that follows is level t ≥ 1's. The two places of
/// level 0 in descending order compute the same; NVRTC schedules them differently (with
/// level 0 in the loop it issued the next plane's loads early in the step), and which runs
/// faster depends on the grid (`docs/performance.md`).
fn open_level_loop(w: &mut Writer, s: &Stencil, unknowns: &[String], steady: bool) {
    w.line("#pragma unroll");
    w.open("for (int v = 0; v <= STREAM_SUB; ++v)");
    w.line("const int t = STREAM_ASCENDING ? v : STREAM_SUB - v;");
    w.open("if (t == 0)");
    w.line("#if STREAM_ASCENDING || STREAM_ZERO_IN_LOOP");
    emit_level_zero(w, s, unknowns, steady);
    w.line("#endif");
    w.line("continue;");
    w.close("");
}

/// Level 0 after the levels' loop (`steady`: of a steady step), where it is not in it.
fn emit_level_zero_after(w: &mut Writer, s: &Stencil, unknowns: &[String], steady: bool) {
    w.line("#if !STREAM_ASCENDING && !STREAM_ZERO_IN_LOOP");
    emit_level_zero(w, s, unknowns, steady);
    w.line("#endif");
}

/// The levels of one step: level t computes local plane k − t·LAG from level t − 1's queue
/// and ring, then (below the last level) writes its ring and pushes its value onto its
/// queue, which level t + 1 reads after it (ascending) or has already read (descending).
fn emit_levels(w: &mut Writer, s: &Stencil, unknowns: &[String]) {
    open_level_loop(w, s, unknowns, false);
    w.line("if (t > sub) continue;");
    w.line("const int p = k - t * STREAM_LAG;");
    w.line("const bool plane_valid = p >= 0 && p < w0;");
    w.line("const bool plane_updates = p >= R0 && p < w0 - R0;");
    w.line("const idx x0 = o0 + p;");
    w.line("const bool plane_core = x0 >= c0 && x0 < e0;");
    w.line("const idx g0 = stencil_wrap(x0, N0, R0, wrap0) * s0;");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < STREAM_COLS; ++j)");
    for n in unknowns {
        w.line(format!("real new_{n} = queue_{n}[t - 1][j][R0];"));
    }
    w.open("if (plane_valid && plane_updates && col_updates[j])");
    w.line("const idx g = g0 + col_g[j];");
    w.line("const int here = STREAM_COL(j);");
    w.line("#if STREAM_MIRRORS");
    w.open("if (mirrors)");
    define_access(w, s, Access::Mirrored);
    compute(w, s, unknowns, "measure == t && plane_core && col_core[j]", None);
    w.close(" else");
    w.line("#endif");
    w.open("");
    define_access(w, s, Access::Ring);
    compute(w, s, unknowns, "measure == t && plane_core && col_core[j]", None);
    w.close("");
    w.close("");
    w.open("if (t == sub && plane_valid && plane_core && col_core[j])");
    emit_store(w, unknowns);
    w.close("");
    w.open("if (t < sub)");
    w.open("if (plane_valid && col_valid[j])");
    for n in unknowns {
        w.line(format!("ring_{n}[(t * ring + (p & (ring - 1))) * STREAM_SLOT + STREAM_COL(j)] = new_{n};"));
    }
    w.close("");
    emit_push(w, unknowns, "t");
    w.close("");
    w.close("");
    w.close("");
}

/// The levels of a steady step `k + u` of a group (k a multiple of the ring's period): every
/// level's plane is updated and the last one's is in the core, the cycle has the kernel's
/// full length, and no edge wraps or mirrors. The plane offsets follow from k without tests,
/// and the slots of the rings from u.
fn emit_steady_levels(w: &mut Writer, s: &Stencil, unknowns: &[String]) {
    w.line("const idx gk = (o0 + k + u) * s0;");
    open_level_loop(w, s, unknowns, true);
    w.line("const int slot = (u - t * STREAM_LAG) & (STREAM_RING - 1);");
    w.line("const idx g0 = gk - (idx)(t * STREAM_LAG) * s0;");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < STREAM_COLS; ++j)");
    w.line("const int here = STREAM_COL(j);");
    for n in unknowns {
        w.line(format!("real new_{n} = queue_{n}[t - 1][j][R0];"));
    }
    // Where every read-only field is read at the point, every column computes, so that the
    // levels' reads and arithmetic are one block the compiler interleaves, and the columns at
    // the region's edge keep their values; their reads stay in the planes' slots and guards,
    // which nothing writes during the step. A read-only field read around the point would be
    // read outside the grid there: then only the updated columns compute.
    let every_column = read_only_fields_only_at_the_point(s);
    w.open(if every_column { "" } else { "if (col_updates[j])" });
    w.line("const idx g = g0 + col_g[j];");
    define_access(w, s, Access::Steady);
    compute(w, s, unknowns, "measure == t && col_core[j]", every_column.then_some("col_updates[j]"));
    w.close("");
    w.open("if (t == STREAM_SUB)");
    w.open("if (col_core[j])");
    emit_store(w, unknowns);
    w.close("");
    w.reopen("else");
    w.open("if (col_valid[j])");
    for n in unknowns {
        w.line(format!("ring_{n}[(t * STREAM_RING + slot) * STREAM_SLOT + here] = new_{n};"));
    }
    w.close("");
    emit_push(w, unknowns, "t");
    w.close("");
    w.close("");
    w.close("");
}

/// The last level's stores of column j at plane offset g0, with the check of non-finite
/// values of a measured cycle.
fn emit_store(w: &mut Writer, unknowns: &[String]) {
    w.line("const idx i = g0 + col_g[j];");
    for (k, n) in unknowns.iter().enumerate() {
        w.line(format!("{}[i] = new_{n};", output(k)));
        w.line(format!("if (measure && !isfinite(new_{n})) atomicMin(first_bad, (unsigned long long)i);"));
    }
}

/// How a level reads the unknowns of the level before it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Through the mirror rule.
    Mirrored,
    /// From the queue at the own column and the ring (of the run's length) elsewhere.
    Ring,
    /// As `Ring`, in a steady group: the ring has the unmirrored length and the slot of plane
    /// `k + u − t·LAG + d0` is `(u − t·LAG + d0) mod ring`, known at compile time.
    Steady,
}

/// The accessors of the unknowns at level t − 1 around local plane p and column `here`, and of
/// the read-only fields around global point `g`, read as `access` says.
fn define_access(w: &mut Writer, s: &Stencil, access: Access) {
    let prefetched = point_fields(s);
    let mirrored = access == Access::Mirrored;
    for (f, field) in s.fields.iter().enumerate() {
        let n = &c_name(&field.name);
        let read = if prefetched.contains(&f) {
            format!("point_{n}[j][(t - 1) * STREAM_LAG]")
        } else if !s.unknowns.contains(&f) {
            format!("__ldg(&f_{n}[g + (d0) * s0 + (d1) * s1 + (d2)])")
        } else {
            match access {
                Access::Mirrored => format!(
                    "stencil_stream_read(ring_{n} + (t - 1) * ring * STREAM_SLOT, p, col_l1[j], col_l2[j], d0, d1, d2)"
                ),
                Access::Ring | Access::Steady => {
                    // The ring's length, and the slot of plane p + d0 in it.
                    let (ring, plane) = match access {
                        Access::Ring => ("ring", "p"),
                        _ => ("STREAM_RING", "slot"),
                    };
                    // A column of the thread's own (the point's, or a neighbour on axis 2 among
                    // its consecutive columns) is read from that column's queue.
                    format!(
                        "((d1) == 0 && j + (d2) >= 0 && j + (d2) < STREAM_COLS \
                         ? queue_{n}[t - 1][j + (d2)][R0 + (d0)] \
                         : ring_{n}[((t - 1) * {ring} + (({plane} + (d0)) & ({ring} - 1))) * STREAM_SLOT + here \
                         + (d1) * STREAM_W2 + (d2)])"
                    )
                }
            }
        };
        w.line(format!("#define AT_{n}(d0, d1, d2) {read}"));
    }
    if mirrored {
        w.line("#define stencil_stream_read(r, p, l1, l2, d0, d1, d2) ([&]() -> real { \\");
        w.line("    int m0 = (p) + (d0), m1 = (l1) + (d1), m2 = (l2) + (d2); \\");
        w.line("    stencil_stream_mirror(m0, m1, m2, o0, o1, o2, N0, N1, N2, edges0, edges1, edges2); \\");
        w.line("    return (r)[(m0 & (ring - 1)) * STREAM_SLOT + m1 * STREAM_W2 + m2]; }())");
    }
}

/// Loads, for step `step`, the first level's value of the read-only fields read only at the
/// point (at its plane, clamped to the region; `steady`: a steady step's plane, in the region
/// and not wrapped) into the head of their queues, after moving the queues one entry on: the
/// value the first level read LAG steps earlier is the second level's now, and so on.
fn emit_prefetch(w: &mut Writer, s: &Stencil, fields: &[usize], step: &str, steady: bool) {
    if fields.is_empty() {
        return;
    }
    // A block of its own, so that its names stay out of the kernel's scope.
    w.open("");
    if steady {
        // Past the region only on an axis 0 without reads across planes (R0 = 0), where the
        // steady steps run to the region's last plane.
        w.line(format!("const idx g0 = (o0 + min({step} - STREAM_LAG, w0 - 1)) * s0;"));
    } else {
        w.line(format!("const int p = min(max({step} - STREAM_LAG, 0), w0 - 1);"));
        w.line("const idx g0 = stencil_wrap(o0 + p, N0, R0, wrap0) * s0;");
    }
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < STREAM_COLS; ++j)");
    w.line("#pragma unroll");
    w.open("for (int i = STREAM_POINTS - 1; i > 0; --i)");
    for &f in fields {
        let n = c_name(&s.fields[f].name);
        w.line(format!("point_{n}[j][i] = point_{n}[j][i - 1];"));
    }
    w.close("");
    for &f in fields {
        let n = c_name(&s.fields[f].name);
        w.line(format!("point_{n}[j][0] = col_valid[j] ? __ldg(&f_{n}[g0 + col_g[j]]) : (real)0;"));
    }
    w.close("");
    w.close("");
}

/// The point function on the accessors; where `measured` holds, the level adds S(u) − u.
/// `take_if`: the condition under which the new value replaces the old one (else always).
fn compute(w: &mut Writer, s: &Stencil, unknowns: &[String], measured: &str, take_if: Option<&str>) {
    point_call(w, s);
    undefine_access(w, s);
    w.line("#undef stencil_stream_read");
    w.open(format!("if ({measured})"));
    for (k, n) in unknowns.iter().enumerate() {
        match s.is_system() {
            true => accumulate_change(w, s, k, &format!("new_{n}")),
            false => accumulate_residual(w, &format!("new_{n}")),
        }
    }
    w.close("");
    for (k, n) in unknowns.iter().enumerate() {
        match take_if {
            Some(condition) => w.line(format!("new_{n} = {condition} ? {} : new_{n};", value(s, k))),
            None => w.line(format!("new_{n} = {};", value(s, k))),
        }
    }
}

/// Pushes `new_<u>` onto level `level`'s queue of column j.
fn emit_push(w: &mut Writer, unknowns: &[String], level: &str) {
    w.line("#pragma unroll");
    w.open("for (int i = 0; i < 2 * R0; ++i)");
    for n in unknowns {
        w.line(format!("queue_{n}[{level}][j][i] = queue_{n}[{level}][j][i + 1];"));
    }
    w.close("");
    for n in unknowns {
        w.line(format!("queue_{n}[{level}][j][2 * R0] = new_{n};"));
    }
}

/// Level 0: the plane loaded at the previous step (`ahead`) goes to the ring and the queue,
/// and the next plane's load is issued, to arrive while the next step computes; every field's
/// plane `STREAM_PREFETCH` steps ahead is asked into L2, so that those loads, and the first
/// level's reads of the read-only fields, find it there. Past the region's last plane the
/// queue still moves, so that it stays aligned with the levels.
/// `steady`: a steady step, whose plane k is in the region and not wrapped.
fn emit_level_zero(w: &mut Writer, s: &Stencil, unknowns: &[String], steady: bool) {
    match steady {
        true => {
            w.line("const idx next0 = (o0 + min(k + u + 1, w0 - 1)) * s0;");
            w.line("const idx early0 = (o0 + min(k + u + STREAM_PREFETCH, w0 - 1)) * s0;");
        }
        false => {
            w.line("const idx next0 = stencil_wrap(o0 + min(k + 1, w0 - 1), N0, R0, wrap0) * s0;");
            w.line("const idx early0 = stencil_wrap(o0 + min(k + STREAM_PREFETCH, w0 - 1), N0, R0, wrap0) * s0;");
        }
    }
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < STREAM_COLS; ++j)");
    for n in unknowns {
        w.line(format!("const real new_{n} = ahead_{n}[j];"));
    }
    w.open(if steady { "if (col_valid[j])" } else { "if (k < w0 && col_valid[j])" });
    for n in unknowns {
        let slot = if steady { "(u & (STREAM_RING - 1))" } else { "(k & (ring - 1))" };
        w.line(format!("ring_{n}[{slot} * STREAM_SLOT + STREAM_COL(j)] = new_{n};"));
        w.line(format!("ahead_{n}[j] = f_{n}[next0 + col_g[j]];"));
    }
    for field in &s.fields {
        w.line(format!("stencil_prefetch_l2(&f_{}[early0 + col_g[j]]);", c_name(&field.name)));
    }
    w.close("");
    emit_push(w, unknowns, "0");
    w.close("");
}
