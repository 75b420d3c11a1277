//! The wavefront kernel of a sweep stencil: pencils of skewed tiles marching along axis 0.

use super::common::*;
use super::signature::{Kind, define_defaults, signature};
use super::wavefront_parts::{
    emit_step, halo_windows, open_loaded_cell, point_cell_inside, store_planes, wavefront_windows,
};
use super::wavefront_roles::{emit_role_barriers, emit_roles, roles_helpers};
use crate::ir::{self, Stencil};
use crate::writer::Writer;

/// Facts of a sweep on the stencil's own axes, padded to three (a missing axis has one
/// point, radius 0, direction `+` and skew 0): direction signs, skew factors cₖ of
/// zₖ = x'ₖ + cₖ·zₖ₋₁, and the radius of the unknown's reads in z.
pub(super) struct SweepAxes {
    direction: [i64; 3],
    skew: [i64; 3],
    pub z_radius: [i64; 3],
}

impl SweepAxes {
    pub fn new(s: &Stencil, sweep: &ir::SweepPlan) -> Self {
        let direction: [i64; 3] = std::array::from_fn(|k| if k < s.dim && !sweep.ascending[k] { -1 } else { 1 });
        let skew: [i64; 3] = std::array::from_fn(|k| if k < s.dim { sweep.skew[k] as i64 } else { 0 });
        // Over the reads of every field: the read-only fields are staged in windows of the
        // same shape as the unknown's.
        let mut z_radius = [0i64; 3];
        for read in &s.reads {
            let oriented: [i64; 3] =
                std::array::from_fn(|k| read.offset.get(k).map_or(0, |&d| d as i64) * direction[k]);
            let mut z = [0i64; 3];
            for k in 0..3 {
                z[k] = oriented[k] + if k > 0 { skew[k] * z[k - 1] } else { 0 };
                z_radius[k] = z_radius[k].max(z[k].abs());
            }
        }
        Self { direction, skew, z_radius }
    }
}

/// The wavefront kernel of a sweep stencil (`Schedule::Wavefront`). Each block owns a
/// *pencil*: the points whose skewed coordinates z₁ (and z₂) lie in one tile of WF_TILE
/// (× WF_TILE) lanes, one thread per lane, marching along z₀. Thread (t₁, t₂) computes plane
/// z₀ = s − t₁ − t₂ at step s, so one step is one point hyperplane of the pencil, with a
/// barrier of the lanes after it. The pencil's values live in a shared-memory window of
/// planes. From compute capability 8.0 on, helper warps keep it: loaders copy planes in
/// ahead of the lanes once the pencils before this one have published them (their ready
/// flags count the planes each has stored), a storer writes finished planes back and
/// publishes them ([`super::wavefront_roles`]). Before 8.0 every thread stops every
/// WF_CHUNK steps to store, publish, wait and load. Blocks take pencils in tile-hyperplane
/// order from a ticket counter, so a block only ever waits for blocks already running.
pub(super) fn emit_wavefront(w: &mut Writer, s: &Stencil) {
    let Some(sweep) = &s.sweep else { return };
    let axes = SweepAxes::new(s, sweep);
    let unknown = c_name(&s.fields[s.unknown].name);
    wavefront_defines(w, s, &axes);
    roles_helpers(w);
    let windows = wavefront_windows(s);
    signature(s, Kind::Wavefront).open(w);
    index_prologue(w);
    w.line("const int X0 = (int)(N0 - 2 * WF_R0), X1 = (int)(N1 - 2 * WF_R1), X2 = (int)(N2 - 2 * WF_R2);");
    w.line("extern __shared__ __align__(16) unsigned char wf_raw[];");
    w.line("real* win = (real*)wf_raw;");
    w.line("__shared__ int wf_pencil[2];");
    w.line("const int tid = threadIdx.x;");
    w.line("#if __CUDA_ARCH__ >= 800");
    emit_role_barriers(w);
    w.line("#endif");
    w.open("if (tid == 0)");
    w.line("// Tickets follow the tile-hyperplane order of `order`: every pencil this one waits for has a");
    w.line("// smaller ticket, so its block is already running.");
    w.line("const unsigned int k = atomicAdd(ticket, 1u);");
    w.line("wf_pencil[0] = order[2 * k];");
    w.line("wf_pencil[1] = order[2 * k + 1];");
    w.close("");
    w.line("__syncthreads();");
    w.line("// A launch may run several sweeps, each with its own ready flags: the order's second entry carries");
    w.line("// the pencil's sweep.");
    w.line("const int sweep = wf_pencil[1] / pencils2, p1 = wf_pencil[0], p2 = wf_pencil[1] % pencils2;");
    w.line("const int me = p1 * pencils2 + p2, pencils = pencils1 * pencils2;");
    w.line("int* const flags = progress + (idx)sweep * pencils;");
    w.line(
        "// Pencil p covers z in [p·T − origin, …): the runtime shifts the pencils on the grid's contiguous axis so",
    );
    w.line("// that each pencil's rows start on a 32-byte sector, and its stores write whole sectors.");
    w.line("const int base1 = p1 * WF_T1 - origin1, base2 = p2 * WF_T2 - origin2;");
    w.line("const int steps = X0 + WF_LAG;");
    w.line("#if __CUDA_ARCH__ >= 800");
    emit_roles(w, s, &windows, &unknown);
    w.line("#else");
    emit_lockstep(w, s, &windows, &unknown);
    w.line("#endif");
    w.close("");
    w.blank();
}

/// Before compute capability 8.0: every thread stops every WF_CHUNK steps to store, publish,
/// wait for the pencils before and load the next planes; the lanes compute between.
fn emit_lockstep(w: &mut Writer, s: &Stencil, windows: &[usize], unknown: &str) {
    w.line("const int threads = blockDim.x;");
    w.line("const int t1 = tid / WF_T2, t2 = tid % WF_T2;");
    w.line("const int z1 = base1 + t1, z2 = base2 + t2;");
    w.line("const int x2 = z2 - WF_K2 * z1;");
    w.line("int loaded = -WF_RZ0, stored = 0;");
    w.open("for (int s = 0; s < steps; ++s)");
    emit_boundary(w, s, windows, unknown);
    emit_step(w, s, windows, "tid < WF_LANES");
    w.line("__syncthreads();");
    w.close("");
    w.line("const int done = X0;");
    store_planes(w, unknown, "tid", "threads");
    w.line("__syncthreads();");
    w.open("if (tid == 0)");
    w.line("__threadfence();");
    w.line("((volatile int*)flags)[me] = X0;");
    w.close("");
}

/// The macros of the wavefront kernel: tile, chunk and batch sizes, the sweep's directions,
/// skew and radii per axis, the window's shape, and the offset and cell arithmetic.
fn wavefront_defines(w: &mut Writer, s: &Stencil, axes: &SweepAxes) {
    let radius: [usize; 3] = std::array::from_fn(|k| s.radius.get(k).copied().unwrap_or(0));
    w.line("// Wavefront sweep: blocks own pencils of WF_TILE (× WF_TILE) lanes in skewed coordinates z and march");
    w.line("// along z0, one point hyperplane per step with a barrier of the lanes after it; the pencils' ready flags");
    w.line("// count the planes each has stored. Coordinates here are the stencil's own axes (a missing axis has one");
    w.line(
        "// point). Launch with blockDim = (WF_COMPUTE + WF_STORERS + WF_LOADERS, 1, 1), one block per pencil, and a window",
    );
    w.line("// of WF_WIN planes of dynamic shared memory for each staged field.");
    w.line("// WF_CHUNK: planes the helpers pass at a time. WF_WIN: planes in the window, a multiple of WF_CHUNK and");
    w.line("// more than WF_CHUNK + WF_LAG + 2·WF_RZ0 (the chunks the lanes read at once, and one being loaded); a");
    w.line("// power of two where it fits (a slot is then a mask). Set by the runtime.");
    define_defaults(w, &signature(s, Kind::Wavefront).defines);
    let lanes = |axis: usize| if s.dim > axis { "WF_TILE" } else { "1" };
    w.line(format!("#define WF_T1 {}", lanes(1)));
    w.line(format!("#define WF_T2 {}", lanes(2)));
    w.line("#define WF_LAG ((WF_T1 - 1) + (WF_T2 - 1))");
    w.line("// Pencils on along each lane axis whose cells a window's halo holds.");
    w.line("#define WF_A1 ((WF_RZ1 + WF_T1 - 1) / WF_T1)");
    w.line("#define WF_A2 ((WF_RZ2 + WF_T2 - 1) / WF_T2)");
    w.line("// The lanes, the threads of their warps, the storer threads after them and the loader threads last.");
    w.line("#define WF_LANES (WF_T1 * WF_T2)");
    w.line("#define WF_COMPUTE ((WF_LANES + 31) / 32 * 32)");
    w.line("#define WF_STORERS 64");
    w.line("#define WF_LOADERS 128");
    w.line("#define WF_STAGES (WF_WIN / WF_CHUNK)");
    for (k, r) in radius.iter().enumerate() {
        w.line(format!("#define WF_D{k} {}", axes.direction[k]));
        w.line(format!("#define WF_K{k} {}", axes.skew[k]));
        w.line(format!("#define WF_RZ{k} {}", axes.z_radius[k]));
        w.line(format!("#define WF_R{k} {r}"));
    }
    w.line("#if WF_WIN % WF_CHUNK != 0 || WF_WIN <= WF_CHUNK + WF_LAG + 2 * WF_RZ0");
    w.line("#error \"WF_WIN: a multiple of WF_CHUNK above WF_CHUNK + WF_LAG + 2 * WF_RZ0\"");
    w.line("#endif");
    w.line("#define WF_E1 (WF_T1 + 2 * WF_RZ1)");
    w.line("#define WF_E2 (WF_T2 + 2 * WF_RZ2)");
    w.line("// A read's offset (as the point function's slots give it, seen as 3-D) on the stencil's own axes.");
    let own = match s.dim {
        1 => ["(e2)", "0", "0"],
        2 => ["(e0)", "(e2)", "0"],
        _ => ["(e0)", "(e1)", "(e2)"],
    };
    for (k, o) in own.iter().enumerate() {
        w.line(format!("#define WF_O{k}(e0, e1, e2) {o}"));
    }
    w.line("// The offset in skewed coordinates: z0 = x'0, z1 = x'1 + K1·z0, z2 = x'2 + K2·z1 (x' oriented).");
    w.line("#define WF_DZ0(e0, e1, e2) (WF_D0 * WF_O0(e0, e1, e2))");
    w.line("#define WF_DZ1(e0, e1, e2) (WF_D1 * WF_O1(e0, e1, e2) + WF_K1 * WF_DZ0(e0, e1, e2))");
    w.line("#define WF_DZ2(e0, e1, e2) (WF_D2 * WF_O2(e0, e1, e2) + WF_K2 * WF_DZ1(e0, e1, e2))");
    w.line("// Memory index on axis k of oriented interior coordinate x.");
    for k in 0..3 {
        w.line(format!(
            "#define WF_I{k}(x) (WF_D{k} > 0 ? (idx)WF_R{k} + (idx)(x) : N{k} - 1 - (idx)WF_R{k} - (idx)(x))"
        ));
    }
    w.line("// Plane p's slot: chunk j's planes [j·WF_CHUNK − WF_RZ0, …) fill slots [(j mod WF_STAGES)·WF_CHUNK, …).");
    w.line("#define WF_SLOT(p) ((int)((unsigned int)((p) + WF_RZ0) % (unsigned int)WF_WIN))");
    window_defines(w, s);
}

/// The macros of the windows' layout: a window's plane and cell, with a halo and without.
fn window_defines(w: &mut Writer, s: &Stencil) {
    w.line("// A plane of a window with a halo: WF_E1 rows of WF_P2 reals. Where a row's lanes are whole 16-byte");
    w.line("// copies of WF_V values, each row's lanes start on 16 bytes (WF_LEAD2 reals into the row: the halo");
    w.line("// before them and a pad) and the plane holds whole copies, so the loaders copy the lanes 16 bytes at a");
    w.line("// time; the pad after a row's last halo cell is the next row's pad before its first. Only values of 8");
    w.line("// bytes and more are copied so: rows of 4-byte values padded to 16 bytes cost more than the copies save.");
    w.line("#define WF_V ((int)sizeof(real) >= 8 ? 16 / (int)sizeof(real) : 1)");
    w.line("#define WF_GROUPED (WF_V > 1 && (WF_T2 * (int)sizeof(real)) % 16 == 0)");
    w.line("#define WF_P2 (WF_GROUPED ? (WF_E2 + WF_V - 1) / WF_V * WF_V : WF_E2)");
    w.line("#define WF_LEAD2 (WF_GROUPED ? (WF_RZ2 + WF_V - 1) / WF_V * WF_V : WF_RZ2)");
    w.line(
        "#define WF_PLANE (WF_GROUPED ? ((WF_E1 - 1) * WF_P2 + WF_LEAD2 + WF_T2 + WF_RZ2 + WF_V - 1) / WF_V * WF_V : WF_E1 * WF_E2)",
    );
    w.line("// The loaders copy a row of a window with a halo in pieces: its lanes in groups of WF_GROUP (a 16-byte");
    w.line("// copy each where the row allows), then its halo cells.");
    w.line("#define WF_GROUP (WF_GROUPED ? WF_V : 1)");
    w.line("#define WF_PIECES (WF_T2 / WF_GROUP + 2 * WF_RZ2)");
    w.line("// Cell (plane p or slot, lanes a, b with the halo) of staged field k's window.");
    w.line("#define WF_PLANE_BYTES (WF_PLANE * (int)sizeof(real))");
    w.line("#define WF_SLOT_CELL(k, slot, a, b) win[((k) * WF_WIN + (slot)) * WF_PLANE + (a) * WF_P2 + (b) + (WF_LEAD2 - WF_RZ2)]");
    w.line("#define WF_CELL(k, p, a, b) WF_SLOT_CELL(k, WF_SLOT(p), a, b)");
    w.line("// The windows of the fields read only at the point, after the WF_NH with a halo: a plane is the lanes");
    w.line("// (a, b) alone.");
    w.line(format!("#define WF_NH {}", halo_windows(s)));
    w.line("#define WF_HALO_REALS (WF_NH * WF_WIN * WF_PLANE)");
    w.line("#define WF_POINT_PLANE_BYTES (WF_T1 * WF_T2 * (int)sizeof(real))");
    w.line("#define WF_POINT_CELL(k, slot, a, b) win[WF_HALO_REALS + ((((k) - WF_NH) * WF_WIN + (slot)) * WF_T1 + (a)) * WF_T2 + (b)]");
}

/// Every WF_CHUNK steps: store the planes this pencil has finished, publish them, wait for
/// the pencils before it, and load the next planes of every staged field into the windows.
fn emit_boundary(w: &mut Writer, s: &Stencil, windows: &[usize], unknown: &str) {
    w.open("if (s % WF_CHUNK == 0)");
    w.line("const int done = min(max(s - WF_LAG, 0), X0);");
    store_planes(w, unknown, "tid", "threads");
    w.line("stored = done;");
    w.line("__syncthreads();");
    w.line("const int need = min(s + WF_CHUNK + WF_RZ0, X0 + WF_RZ0);");
    w.open("if (tid == 0)");
    w.line("__threadfence(); // the stores above, made visible before the flag");
    w.line("((volatile int*)flags)[me] = done;");
    w.line("const int wait = min(need, X0);");
    w.line("if (p1 > 0) while (((volatile int*)flags)[me - pencils2] < wait) {}");
    w.line("if (p2 > 0) while (((volatile int*)flags)[me - 1] < wait) {}");
    w.line("if (p1 > 0 && p2 > 0) while (((volatile int*)flags)[me - pencils2 - 1] < wait) {}");
    w.line("__threadfence();");
    w.close("");
    w.line("__syncthreads();");
    w.line("// Planes [loaded, need): old values of this pencil and of the pencils after it, new values of those");
    w.line("// before it, through L2 (another block wrote them); and the read-only fields.");
    w.line("// WF_BATCH loads per thread are issued before the first is stored, so that a boundary waits for the");
    w.line("// memory's latency a few times, not once per cell.");
    w.open("for (int c0 = tid; c0 < (need - loaded) * WF_E1 * WF_E2; c0 += WF_BATCH * threads)");
    w.line(format!("real batch[WF_BATCH][{}];", windows.len()));
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < WF_BATCH; ++j)");
    open_loaded_cell(w, "c0 + j * threads");
    w.line("const idx g = WF_I0(p) * s0 + WF_I1(c1) * s1 + WF_I2(c2);");
    let halo = halo_windows(s);
    for (k, &f) in windows.iter().enumerate() {
        let n = &c_name(&s.fields[f].name);
        let load = if f == s.unknown { "__ldcg" } else { "__ldg" };
        match k < halo {
            true => w.line(format!("batch[j][{k}] = {load}(&f_{n}[g]);")),
            false => w.line(format!("batch[j][{k}] = {} ? {load}(&f_{n}[g]) : (real)0;", point_cell_inside("a", "b"))),
        }
    }
    w.close("");
    w.close("");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < WF_BATCH; ++j)");
    open_loaded_cell(w, "c0 + j * threads");
    for k in 0..windows.len() {
        match k < halo {
            true => w.line(format!("WF_CELL({k}, p, a, b) = batch[j][{k}];")),
            false => w.line(format!(
                "if ({}) WF_POINT_CELL({k}, WF_SLOT(p), a - WF_RZ1, b - WF_RZ2) = batch[j][{k}];",
                point_cell_inside("a", "b")
            )),
        }
    }
    w.close("");
    w.close("");
    w.close("");
    w.line("loaded = need;");
    w.line("__syncthreads();");
    w.close("");
}
