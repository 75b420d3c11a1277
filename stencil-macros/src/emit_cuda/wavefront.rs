//! The wavefront kernel of a sweep stencil: pencils of skewed tiles marching along axis 0.

use super::common::*;
use super::signature::{Kind, define_defaults, signature};
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

/// The fields the wavefront kernel stages in shared-memory windows: the unknown first, then
/// every read-only field that the point function reads, in declaration order. A global load
/// in a step would put the memory's latency on the sweep's critical path once per step.
pub(super) fn wavefront_windows(s: &Stencil) -> Vec<usize> {
    let read = |f: usize| s.reads.iter().any(|r| r.field == f);
    std::iter::once(s.unknown).chain((0..s.fields.len()).filter(|&f| f != s.unknown && read(f))).collect()
}

/// The wavefront kernel of a sweep stencil (`Schedule::Wavefront`). Each block owns a
/// *pencil*: the points whose skewed coordinates z₁ (and z₂) lie in one tile of WF_TILE
/// (× WF_TILE) lanes, one thread per lane, marching along z₀. Thread (t₁, t₂) computes plane
/// z₀ = s − t₁ − t₂ at step s, so one step is one point hyperplane of the pencil, with a block
/// barrier after it. The pencil's values live in a shared-memory window of planes; every
/// WF_CHUNK steps the block stores the planes all its threads have finished, publishes how
/// many it has (its ready flag), waits until the pencils before it have published the planes
/// it is about to read, and loads the next planes. Blocks take pencils in tile-hyperplane
/// order from a ticket counter, so a block only ever waits for blocks already running.
pub(super) fn emit_wavefront(w: &mut Writer, s: &Stencil) {
    let Some(sweep) = &s.sweep else { return };
    let axes = SweepAxes::new(s, sweep);
    let unknown = c_name(&s.fields[s.unknown].name);
    wavefront_defines(w, s, &axes);
    let windows = wavefront_windows(s);
    signature(s, Kind::Wavefront).open(w);
    index_prologue(w);
    w.line("const int X0 = (int)(N0 - 2 * WF_R0), X1 = (int)(N1 - 2 * WF_R1), X2 = (int)(N2 - 2 * WF_R2);");
    w.line("extern __shared__ unsigned char wf_raw[];");
    w.line("real* win = (real*)wf_raw;");
    w.line("__shared__ int wf_pencil[2];");
    w.line("// Helper threads (the last block axis beyond the lanes) only load and store the windows.");
    w.line("const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);");
    w.line("const int threads = blockDim.x * blockDim.y * blockDim.z;");
    let (t1, t2) = match s.dim {
        3 => ("threadIdx.y", "threadIdx.x"),
        2 => ("threadIdx.x", "0"),
        _ => ("0", "0"),
    };
    w.line(format!("const int t1 = {t1}, t2 = {t2};"));
    w.open("if (tid == 0)");
    w.line("// Tickets follow the tile-hyperplane order of `order`: every pencil this one waits for has a");
    w.line("// smaller ticket, so its block is already running.");
    w.line("const unsigned int k = atomicAdd(ticket, 1u);");
    w.line("wf_pencil[0] = order[2 * k];");
    w.line("wf_pencil[1] = order[2 * k + 1];");
    w.close("");
    w.line("__syncthreads();");
    w.line("const int p1 = wf_pencil[0], p2 = wf_pencil[1];");
    w.line("const int me = p1 * pencils2 + p2;");
    w.line("const int base1 = p1 * WF_T1, base2 = p2 * WF_T2;");
    w.line("const int z1 = base1 + t1, z2 = base2 + t2;");
    w.line("const int x2 = z2 - WF_K2 * z1;");
    w.line("const int steps = X0 + WF_LAG;");
    w.line("int loaded = -WF_RZ0, stored = 0;");
    w.open("for (int s = 0; s < steps; ++s)");
    emit_boundary(w, s, &windows, &unknown);
    emit_step(w, s, &windows);
    w.line("__syncthreads();");
    w.close("");
    w.line("const int done = X0;");
    emit_wavefront_store(w, &unknown);
    w.line("__syncthreads();");
    w.open("if (tid == 0)");
    w.line("__threadfence();");
    w.line("((volatile int*)progress)[me] = X0;");
    w.close("");
    w.close("");
    w.blank();
}

/// The macros of the wavefront kernel: tile, chunk and batch sizes, the sweep's directions,
/// skew and radii per axis, the window's shape, and the offset and cell arithmetic.
fn wavefront_defines(w: &mut Writer, s: &Stencil, axes: &SweepAxes) {
    let radius: [usize; 3] = std::array::from_fn(|k| s.radius.get(k).copied().unwrap_or(0));
    w.line("// Wavefront sweep: blocks own pencils of WF_TILE (× WF_TILE) lanes in skewed coordinates z and march");
    w.line("// along z0, one point hyperplane per step with a barrier after it; the pencils' ready flags count the");
    w.line("// planes each has stored. Coordinates here are the stencil's own axes (a missing axis has one point).");
    w.line("// Launch with blockDim = (lanes on the last lane axis, lanes on the first, 1), one block per pencil, and");
    w.line("// a window of WF_WIN × WF_E1 × WF_E2 reals of dynamic shared memory for each staged field.");
    w.line("// WF_WIN: planes in the window, at least the chunk being loaded, the lag between the first and last");
    w.line("// lane, and the reads' reach on both sides; a power of two where it fits (a slot is then a mask). Set");
    w.line("// by the runtime.");
    define_defaults(w, &signature(s, Kind::Wavefront).defines);
    let lanes = |axis: usize| if s.dim > axis { "WF_TILE" } else { "1" };
    w.line(format!("#define WF_T1 {}", lanes(1)));
    w.line(format!("#define WF_T2 {}", lanes(2)));
    w.line("#define WF_LAG ((WF_T1 - 1) + (WF_T2 - 1))");
    for (k, r) in radius.iter().enumerate() {
        w.line(format!("#define WF_D{k} {}", axes.direction[k]));
        w.line(format!("#define WF_K{k} {}", axes.skew[k]));
        w.line(format!("#define WF_RZ{k} {}", axes.z_radius[k]));
        w.line(format!("#define WF_R{k} {r}"));
    }
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
    w.line("#define WF_SLOT(p) ((int)((unsigned int)((p) + WF_WIN) % (unsigned int)WF_WIN))");
    w.line("// Cell (plane p, lanes a, b with the halo) of staged field k's window.");
    w.line("#define WF_CELL(k, p, a, b) win[(((k) * WF_WIN + WF_SLOT(p)) * WF_E1 + (a)) * WF_E2 + (b)]");
}

/// Every WF_CHUNK steps: store the planes this pencil has finished, publish them, wait for
/// the pencils before it, and load the next planes of every staged field into the windows.
fn emit_boundary(w: &mut Writer, s: &Stencil, windows: &[usize], unknown: &str) {
    w.open("if (s % WF_CHUNK == 0)");
    w.line("const int done = min(max(s - WF_LAG, 0), X0);");
    emit_wavefront_store(w, unknown);
    w.line("stored = done;");
    w.line("__syncthreads();");
    w.line("const int need = min(s + WF_CHUNK + WF_RZ0, X0 + WF_RZ0);");
    w.open("if (tid == 0)");
    w.line("__threadfence(); // the stores above, made visible before the flag");
    w.line("((volatile int*)progress)[me] = done;");
    w.line("const int wait = min(need, X0);");
    w.line("if (p1 > 0) while (((volatile int*)progress)[me - pencils2] < wait) {}");
    w.line("if (p2 > 0) while (((volatile int*)progress)[me - 1] < wait) {}");
    w.line("if (p1 > 0 && p2 > 0) while (((volatile int*)progress)[me - pencils2 - 1] < wait) {}");
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
    open_loaded_cell(w);
    w.line("const idx g = WF_I0(p) * s0 + WF_I1(c1) * s1 + WF_I2(c2);");
    for (k, &f) in windows.iter().enumerate() {
        let n = &c_name(&s.fields[f].name);
        let load = if f == s.unknown { "__ldcg" } else { "__ldg" };
        w.line(format!("batch[j][{k}] = {load}(&f_{n}[g]);"));
    }
    w.close("");
    w.close("");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < WF_BATCH; ++j)");
    open_loaded_cell(w);
    for k in 0..windows.len() {
        w.line(format!("WF_CELL({k}, p, a, b) = batch[j][{k}];"));
    }
    w.close("");
    w.close("");
    w.close("");
    w.line("loaded = need;");
    w.line("__syncthreads();");
    w.close("");
}

/// One step of the march: the lane's point of the step's hyperplane, computed from the
/// windows and written back into the unknown's window.
fn emit_step(w: &mut Writer, s: &Stencil, windows: &[usize]) {
    w.line("const int z0 = s - t1 - t2;");
    w.line("const int x1 = z1 - WF_K1 * z0;");
    w.open(format!(
        "if ({} == 0 && z0 >= 0 && z0 < X0 && x1 >= 0 && x1 < X1 && x2 >= 0 && x2 < X2)",
        if s.dim == 3 { "threadIdx.z" } else { "threadIdx.y" }
    ));
    for (k, &f) in windows.iter().enumerate() {
        w.line(format!(
            "#define AT_{}(e0, e1, e2) WF_CELL({k}, z0 + WF_DZ0(e0, e1, e2), t1 + WF_RZ1 + WF_DZ1(e0, e1, e2), t2 + WF_RZ2 + WF_DZ2(e0, e1, e2))",
            c_name(&s.fields[f].name)
        ));
    }
    point_call(w, s);
    undefine_access(w, s);
    w.line("WF_CELL(0, z0, t1 + WF_RZ1, t2 + WF_RZ2) = v;");
    w.close("");
}

/// Inside a boundary's batch loop: the window cell of the batch's `j`-th load (plane `p`,
/// window lanes `a`, `b`, oriented coordinates `c1`, `c2`), and a block entered when the
/// cell is a grid point of the planes being loaded.
pub(super) fn open_loaded_cell(w: &mut Writer) {
    w.line("const int c = c0 + j * threads;");
    w.line("const int p = loaded + c / (WF_E1 * WF_E2), a = c / WF_E2 % WF_E1, b = c % WF_E2;");
    w.line("const int y1 = base1 - WF_RZ1 + a, y2 = base2 - WF_RZ2 + b;");
    w.line("const int c1 = y1 - WF_K1 * p, c2 = y2 - WF_K2 * y1;");
    w.open("if (p < need && c1 >= -WF_R1 && c1 < X1 + WF_R1 && c2 >= -WF_R2 && c2 < X2 + WF_R2)");
}

/// Stores the pencil's own points of planes `[stored, done)` from the window.
pub(super) fn emit_wavefront_store(w: &mut Writer, unknown: &str) {
    w.open("for (int c = tid; c < (done - stored) * WF_T1 * WF_T2; c += threads)");
    w.line("const int p = stored + c / (WF_T1 * WF_T2), a = c / WF_T2 % WF_T1, b = c % WF_T2;");
    w.line("const int y1 = base1 + a, y2 = base2 + b;");
    w.line("const int c1 = y1 - WF_K1 * p, c2 = y2 - WF_K2 * y1;");
    w.open("if (c1 >= 0 && c1 < X1 && c2 >= 0 && c2 < X2)");
    w.line(format!("f_{unknown}[WF_I0(p) * s0 + WF_I1(c1) * s1 + WF_I2(c2)] = WF_CELL(0, p, a + WF_RZ1, b + WF_RZ2);"));
    w.close("");
    w.close("");
}
