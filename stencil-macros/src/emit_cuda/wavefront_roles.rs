//! The pencil kernel's roles from compute capability 8.0 on: the lanes only compute, storer
//! warps write finished planes back and publish them, loader warps copy planes
//! into the window ahead of the lanes. They hand chunks of planes to each other through
//! three rings of mbarriers, so no role waits on memory unless the one before it is late:
//!
//! ```text
//!   loaders ──full[j]──▶ lanes ──finished[j]──▶ storers ──stored[j]──▶ loaders (chunk j + WF_STAGES)
//! ```
//!
//! Chunk j holds planes [j·WF_CHUNK − WF_RZ0, (j + 1)·WF_CHUNK − WF_RZ0) in slots
//! [(j mod WF_STAGES)·WF_CHUNK, …) of the window.

use super::common::*;
use super::wavefront_parts::{emit_point, halo_windows};
use crate::ir::Stencil;
use crate::writer::Writer;

/// The mbarrier and asynchronous-copy primitives, once per translation unit.
pub(super) fn roles_helpers(w: &mut Writer) {
    w.line("#if __CUDA_ARCH__ >= 800 && !defined(WF_ROLE_HELPERS)");
    w.line("#define WF_ROLE_HELPERS");
    w.open("__device__ __forceinline__ unsigned wf_smem(const void* p)");
    w.line("return (unsigned)__cvta_generic_to_shared(p);");
    w.close("");
    w.open("__device__ __forceinline__ void wf_bar_init(unsigned long long* bar, const unsigned count)");
    w.line("asm volatile(\"mbarrier.init.shared.b64 [%0], %1;\" ::\"r\"(wf_smem(bar)), \"r\"(count) : \"memory\");");
    w.close("");
    w.open("__device__ __forceinline__ void wf_arrive(unsigned long long* bar)");
    w.line("asm volatile(\"{ .reg .b64 state; mbarrier.arrive.shared.b64 state, [%0]; }\" ::\"r\"(wf_smem(bar)) : \"memory\");");
    w.close("");
    w.line("// Whether the phase of `parity` has completed.");
    w.open("__device__ __forceinline__ bool wf_done(unsigned long long* bar, const unsigned parity)");
    w.line("unsigned ok;");
    w.line(
        "asm volatile(\"{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }\"",
    );
    w.line("             : \"=r\"(ok) : \"r\"(wf_smem(bar)), \"r\"(parity) : \"memory\");");
    w.line("return ok != 0;");
    w.close("");
    w.line("// Until the phase of `parity` has completed. From compute capability 9.0 on the thread sleeps in");
    w.line("// `try_wait` instead of spinning, so a waiting block takes no issue slots from the block beside it.");
    w.open("__device__ __forceinline__ void wf_wait(unsigned long long* bar, const unsigned parity)");
    w.line("#if __CUDA_ARCH__ >= 900");
    w.line("asm volatile(\"{ .reg .pred p; WF_WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra WF_WAIT; }\"");
    w.line("             ::\"r\"(wf_smem(bar)), \"r\"(parity) : \"memory\");");
    w.line("#else");
    w.line("while (!wf_done(bar, parity)) {}");
    w.line("#endif");
    w.close("");
    w.line("// A pencil's ready flag, read with acquire semantics: the copies after it see the planes it counts. A");
    w.line("// fence instead would also wait for this thread's copies still in flight.");
    w.open("__device__ __forceinline__ int wf_acquire(const int* flag)");
    w.line("int v;");
    w.line("asm volatile(\"ld.acquire.gpu.global.s32 %0, [%1];\" : \"=r\"(v) : \"l\"(flag) : \"memory\");");
    w.line("return v;");
    w.close("");
    w.line("// One value copied asynchronously into shared memory, at a shared-memory address.");
    w.open("__device__ __forceinline__ void wf_copy_to(const unsigned dst, const real* src)");
    w.line("asm volatile(\"cp.async.ca.shared.global [%0], [%1], %2;\" ::\"r\"(dst), \"l\"(src), \"n\"(sizeof(real)) : \"memory\");");
    w.close("");
    w.line("// Sixteen bytes copied asynchronously, past L1, between addresses on 16 bytes.");
    w.open("__device__ __forceinline__ void wf_copy16_to(const unsigned dst, const void* src)");
    w.line("asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" ::\"r\"(dst), \"l\"(src) : \"memory\");");
    w.close("");
    w.line("// The thread's copies so far arrive on `bar` once they have landed (the barrier counts one arrival per");
    w.line("// loader thread and chunk).");
    w.open("__device__ __forceinline__ void wf_copies_arrive(unsigned long long* bar)");
    w.line("asm volatile(\"cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\" ::\"r\"(wf_smem(bar)) : \"memory\");");
    w.close("");
    w.line("#endif");
}

/// The barriers' rings and their initialisation by thread 0 (before the block's first barrier).
pub(super) fn emit_role_barriers(w: &mut Writer) {
    w.line("__shared__ unsigned long long wf_bar[3 * WF_STAGES];");
    w.line("#define WF_FULL(j) (&wf_bar[(j) % WF_STAGES])");
    w.line("#define WF_FINISHED(j) (&wf_bar[WF_STAGES + (j) % WF_STAGES])");
    w.line("#define WF_STORED(j) (&wf_bar[2 * WF_STAGES + (j) % WF_STAGES])");
    w.line("// The parity of chunk j's phase of its stage's barriers.");
    w.line("#define WF_PARITY(j) ((unsigned)((j) / WF_STAGES) & 1u)");
    w.open("if (tid == 0)");
    w.open("for (int i = 0; i < WF_STAGES; ++i)");
    w.line("wf_bar_init(WF_FULL(i), WF_LOADERS);");
    w.line("wf_bar_init(WF_FINISHED(i), WF_COMPUTE);");
    w.line("wf_bar_init(WF_STORED(i), WF_STORERS);");
    w.close("");
    w.close("");
}

/// The three roles, after the pencil is known (`p1`, `p2`, `me`, `base1`, `base2`, `steps`).
pub(super) fn emit_roles(w: &mut Writer, s: &Stencil, windows: &[usize], unknown: &str) {
    w.line("// Chunks of planes the window passes, from plane −WF_RZ0 to X0 + WF_RZ0.");
    w.line("const int chunks = (X0 + 2 * WF_RZ0 + WF_CHUNK - 1) / WF_CHUNK;");
    w.line("// From a point of plane p to the same lanes' point of plane p + 1 in the grid.");
    w.line("const idx plane_stride = (idx)WF_D0 * s0 - (idx)(WF_K1 * WF_D1) * s1;");
    w.open("if (tid < WF_COMPUTE)");
    emit_lanes_role(w, s, windows);
    w.reopen("else if (tid < WF_COMPUTE + WF_STORERS)");
    emit_storer_role(w, unknown);
    w.reopen("else");
    emit_loader_role(w, s, windows);
    w.close("");
}

/// The lanes: a step is the pencil's hyperplane, with a barrier of the lanes' warps after it.
/// The steps run in groups of WF_CHUNK, unrolled: a lane works out which of its steps are
/// grid points once, and the slots of the planes a group reads once a group, so a step is its
/// reads at constant offsets, the point, its write and the barrier. The waits for loaded
/// chunks and the arrivals on finished ones sit at the group's steps where a chunk can
/// change (the group starts on a chunk's first step).
fn emit_lanes_role(w: &mut Writer, s: &Stencil, windows: &[usize]) {
    w.line("const int t1 = tid / WF_T2, t2 = tid % WF_T2;");
    w.line("const int z1 = base1 + t1, z2 = base2 + t2;");
    w.line("const int x2 = z2 - WF_K2 * z1;");
    w.line(
        "// The lane's grid points: z0 in [z_lo, z_hi), where x1 = z1 − K1·z0 lies in [0, X1) (z1 ≥ 0 where K1 > 0:",
    );
    w.line("// the pencils are shifted only on an axis without skew).");
    w.line("int z_lo = 0, z_hi = X0;");
    w.open("if (WF_K1 > 0)");
    w.line("const int a = z1 - X1 + 1;");
    w.line("z_lo = a > 0 ? (a + WF_K1 - 1) / max(WF_K1, 1) : 0;");
    w.line("z_hi = min(X0, z1 / max(WF_K1, 1) + 1);");
    w.reopen("else if (z1 < 0 || z1 >= X1)");
    w.line("z_hi = 0;");
    w.close("");
    w.line("if (tid >= WF_LANES || x2 < 0 || x2 >= X2) z_hi = 0;");
    w.line("// Step s computes a point where s − first < span (unsigned).");
    w.line("const int first = z_lo + t1 + t2;");
    w.line("const unsigned span = (unsigned)max(z_hi - z_lo, 0);");
    w.line("// The lane's cell of plane slot 0 in the first window.");
    w.line("real* const lane_win = &WF_SLOT_CELL(0, 0, t1 + WF_RZ1, t2 + WF_RZ2);");
    let halo = halo_windows(s);
    if halo < windows.len() {
        w.line("// And of the first window of a field read only at the point.");
        w.line("real* const lane_point = &WF_POINT_CELL(WF_NH, 0, t1, t2);");
    }
    w.line("int have = 0, freed = 0;");
    w.open("for (int g = 0; g < steps; g += WF_CHUNK)");
    w.line("// The offsets of the planes the group reads, zg − WF_RZ0 to zg + WF_CHUNK − 1 + WF_RZ0.");
    w.line("const int zg = g - t1 - t2;");
    w.line("int plane[WF_CHUNK + 2 * WF_RZ0];");
    w.line("#pragma unroll");
    w.line("for (int i = 0; i < WF_CHUNK + 2 * WF_RZ0; ++i) plane[i] = WF_SLOT(zg - WF_RZ0 + i) * WF_PLANE;");
    if halo < windows.len() {
        w.line("int point_plane[WF_CHUNK];");
        w.line("#pragma unroll");
        w.line("for (int i = 0; i < WF_CHUNK; ++i) point_plane[i] = WF_SLOT(zg + i) * (WF_T1 * WF_T2);");
    }
    w.line("#pragma unroll");
    w.open("for (int u = 0; u < WF_CHUNK; ++u)");
    w.line("const int s = g + u;");
    w.line("// The step reads planes up to s + WF_RZ0 (lane 0's), in chunk (s + 2·WF_RZ0) / WF_CHUNK.");
    w.open("if (u == 0 || (u + 2 * WF_RZ0) % WF_CHUNK == 0)");
    w.line("const int need = min((s + 2 * WF_RZ0) / WF_CHUNK, chunks - 1);");
    w.line("for (; have <= need; ++have) wf_wait(WF_FULL(have), WF_PARITY(have));");
    w.close("");
    w.open("if ((unsigned)(s - first) < span)");
    let cell = |k: usize| match k < halo {
        true => format!(
            "lane_win[{k} * WF_WIN * WF_PLANE + plane[u + WF_RZ0 + WF_DZ0(e0, e1, e2)] + WF_DZ1(e0, e1, e2) * WF_P2 + WF_DZ2(e0, e1, e2)]"
        ),
        false => format!("lane_point[({k} - WF_NH) * WF_WIN * WF_T1 * WF_T2 + point_plane[u]]"),
    };
    emit_point(w, s, windows, cell, "lane_win[plane[u + WF_RZ0]]");
    w.close("");
    w.line("// Not the aligned `bar.sync`: the lanes come from their own branches, maybe not yet reconverged.");
    w.line("asm volatile(\"barrier.sync 1, %0;\" ::\"n\"(WF_COMPUTE) : \"memory\");");
    w.line("// Chunk j is finished when its last plane's last reader, the last lane WF_RZ0 planes on, has run:");
    w.line("// after step (j + 1)·WF_CHUNK − 1 + WF_LAG. Every thread arrives for its own reads and writes.");
    w.open("if (((u - WF_LAG + 1) % WF_CHUNK + WF_CHUNK) % WF_CHUNK == 0)");
    w.line(
        "for (; freed < chunks && (freed + 1) * WF_CHUNK - 1 + WF_LAG <= s; ++freed) wf_arrive(WF_FINISHED(freed));",
    );
    w.close("");
    w.close("");
    w.close("");
    w.line("for (; freed < chunks; ++freed) wf_arrive(WF_FINISHED(freed));");
}

/// The storer warps: each finished chunk's own points back to the grid, then the planes
/// stored so far published in the pencil's ready flag. A fence waits for the stores to land,
/// so while the next chunk is already finished the storers store it before they publish,
/// never more than two chunks a fence: storers that fenced every chunk would fall behind the
/// lanes. Storer 0 decides for all, through a word a chunk parity.
fn emit_storer_role(w: &mut Writer, unknown: &str) {
    w.line("const int sid = tid - WF_COMPUTE;");
    w.line("__shared__ int wf_publish[2];");
    w.line("int published = 0;");
    w.open("for (int j = 0; j < chunks; ++j)");
    w.line("wf_wait(WF_FINISHED(j), WF_PARITY(j));");
    w.line("const int stored = max(j * WF_CHUNK - WF_RZ0, 0), done = max(min((j + 1) * WF_CHUNK - WF_RZ0, X0), 0);");
    store_owned_cells(w, unknown);
    w.line("wf_arrive(WF_STORED(j));");
    w.line("if (sid == 0) wf_publish[j & 1] = j + 1 == chunks || j - published >= 1 || !wf_done(WF_FINISHED(j + 1), WF_PARITY(j + 1));");
    w.line("asm volatile(\"barrier.sync 2, %0;\" ::\"n\"(WF_STORERS) : \"memory\");");
    w.line("if (!wf_publish[j & 1]) continue;");
    w.line("asm volatile(\"fence.acq_rel.gpu;\" ::: \"memory\"); // the stores above, made visible before the flag");
    w.line("asm volatile(\"barrier.sync 2, %0;\" ::\"n\"(WF_STORERS) : \"memory\");");
    w.line("if (sid == 0) ((volatile int*)flags)[me] = done;");
    w.line("published = j + 1;");
    w.close("");
}

/// The loader warps: chunk j's planes copied in once its slots are stored (chunk
/// j − WF_STAGES) and the pencils before this one have published them.
fn emit_loader_role(w: &mut Writer, s: &Stencil, windows: &[usize]) {
    w.line("const int lid = tid - WF_COMPUTE - WF_STORERS, lane = tid & 31;");
    w.line("// Planes the pencils before this one have published, as last seen.");
    w.line("int ready = 0;");
    w.line("// In a sweep after the first of the launch, the window's old values are the sweep before's: they are");
    w.line("// there once the furthest pencil whose cells the window holds has published them in that sweep (the");
    w.line("// pencils between come before it there).");
    w.line("const int after = min(p1 + WF_A1, pencils1 - 1) * pencils2 + min(p2 + WF_A2, pencils2 - 1);");
    w.open("for (int j = 0; j < chunks; ++j)");
    w.open("if (j >= WF_STAGES)");
    w.line("// The slots' last chunk read by the lanes and stored (the stores follow the lanes' finish).");
    w.line("wf_wait(WF_FINISHED(j - WF_STAGES), WF_PARITY(j - WF_STAGES));");
    w.line("wf_wait(WF_STORED(j - WF_STAGES), WF_PARITY(j - WF_STAGES));");
    w.close("");
    w.line("const int loaded = j * WF_CHUNK - WF_RZ0, need = min(loaded + WF_CHUNK, X0 + WF_RZ0);");
    w.open("if (ready < min(need, X0))");
    w.line("// Lanes 0, 1 and 2 of each loader warp read the three flags at once, one round trip a poll; the warp's");
    w.line("// barrier after the reads orders its other lanes' copies after the acquiring lanes' reads.");
    w.open("do");
    w.line("int seen = X0;");
    w.line("if (lane == 0 && p1 > 0) seen = wf_acquire(&flags[me - pencils2]);");
    w.line("if (lane == 1 && p2 > 0) seen = wf_acquire(&flags[me - 1]);");
    w.line("if (lane == 2 && p1 > 0 && p2 > 0) seen = wf_acquire(&flags[me - pencils2 - 1]);");
    w.line("if (lane == 3 && sweep > 0) seen = wf_acquire(&flags[after - pencils]);");
    w.line("ready = __reduce_min_sync(0xffffffffu, seen);");
    w.close(" while (ready < min(need, X0));");
    w.line("__syncwarp();");
    w.close("");
    w.line("// Old values of this pencil and of the pencils after it, new values of those before it; and the");
    w.line("// read-only fields.");
    copy_owned_cells(w, s, windows);
    w.line("wf_copies_arrive(WF_FULL(j));");
    w.close("");
}

/// The loader's copies of chunk j's planes `[loaded, need)`: the windows with a halo, then
/// those of the fields read only at the point.
fn copy_owned_cells(w: &mut Writer, s: &Stencil, windows: &[usize]) {
    let halo = halo_windows(s);
    w.line("const int slot = WF_SLOT(loaded); // the chunk's planes fill slots [slot, slot + WF_CHUNK)");
    copy_halo_rows(w, s, &windows[..halo]);
    for (k, &f) in windows.iter().enumerate().skip(halo) {
        copy_point_rows(w, k, &c_name(&s.fields[f].name));
    }
}

/// The loaders' copies of chunk j's planes `[loaded, need)` of the windows with a halo (the
/// first `windows`). A row of a plane (WF_E2 cells on the last lane axis) is WF_PIECES
/// pieces: its lanes in groups of WF_GROUP, then its halo cells one by one. A loader thread
/// owns the same piece of every plane, so its coordinates and addresses are worked out once
/// a chunk and its planes follow at constant strides. A group goes in one 16-byte copy past
/// L1 where it runs forward in memory, lies inside the grid and starts on 16 bytes in both
/// memories (the pencils shifted onto sectors and the window's padded rows put it there),
/// else a value at a time.
fn copy_halo_rows(w: &mut Writer, s: &Stencil, windows: &[usize]) {
    w.line("#pragma unroll 1");
    w.open("for (int m = 0; m < (WF_E1 * WF_PIECES + WF_LOADERS - 1) / WF_LOADERS; ++m)");
    w.line("const int c = lid + m * WF_LOADERS, a = c / WF_PIECES, piece = c % WF_PIECES;");
    w.line("const bool group = piece < WF_T2 / WF_GROUP;");
    w.line("// The piece's first cell b, counted from the row's first lane, and its cells n.");
    w.line("const int h = piece - WF_T2 / WF_GROUP;");
    w.line("const int b = group ? piece * WF_GROUP : h < WF_RZ2 ? h - WF_RZ2 : WF_T2 + h - WF_RZ2, n = group ? WF_GROUP : 1;");
    w.line("const int y1 = base1 - WF_RZ1 + a, c2 = base2 + b - WF_K2 * y1;");
    w.line("if (c >= WF_E1 * WF_PIECES || c2 + n <= -WF_R2 || c2 >= X2 + WF_R2) continue;");
    w.line("const bool whole = WF_GROUP > 1 && group && WF_D2 > 0 && c2 >= -WF_R2 && c2 + WF_GROUP <= X2 + WF_R2;");
    w.line("const idx g = WF_I0(loaded) * s0 + WF_I1(y1 - WF_K1 * loaded) * s1 + WF_I2(c2);");
    w.line("const unsigned at = wf_smem(&WF_SLOT_CELL(0, slot, a, WF_RZ2 + b));");
    w.line("#pragma unroll");
    w.open("for (int q = 0; q < WF_CHUNK; ++q)");
    w.line("const int c1 = y1 - WF_K1 * (loaded + q);");
    w.line("if (q >= need - loaded || c1 < -WF_R1 || c1 >= X1 + WF_R1) continue;");
    for (k, &f) in windows.iter().enumerate() {
        let n = &c_name(&s.fields[f].name);
        w.line(format!("const real* const from{k} = &f_{n}[g + q * plane_stride];"));
        w.line(format!("const unsigned to{k} = at + ({k} * WF_WIN + q) * WF_PLANE_BYTES;"));
        w.line(format!("if (whole && (size_t)from{k} % 16 == 0 && to{k} % 16 == 0) wf_copy16_to(to{k}, from{k});"));
        w.open("else");
        w.line("#pragma unroll");
        w.open("for (int e = 0; e < n; ++e)");
        w.line(format!(
            "if (c2 + e >= -WF_R2 && c2 + e < X2 + WF_R2) wf_copy_to(to{k} + e * (int)sizeof(real), from{k} + WF_D2 * e);"
        ));
        w.close("");
        w.close("");
    }
    w.close("");
    w.close("");
}

/// The loaders' copies of chunk j's planes `[loaded, need)` of window `k`, a field `f_{name}`
/// read only at the point: a row of the pencil's lanes a thread, in 16-byte copies where the
/// row runs forward in memory, lies inside the grid and starts on 16 bytes in both memories
/// (as the pencils shifted onto sectors put it), else a value at a time.
fn copy_point_rows(w: &mut Writer, k: usize, name: &str) {
    w.line("#pragma unroll 1");
    w.open("for (int r = lid; r < WF_CHUNK * WF_T1; r += WF_LOADERS)");
    w.line("const int q = r / WF_T1, a = r % WF_T1, p = loaded + q;");
    w.line("const int y1 = base1 + a, c1 = y1 - WF_K1 * p, c2 = base2 - WF_K2 * y1;");
    w.line("if (p >= need || c1 < -WF_R1 || c1 >= X1 + WF_R1) continue;");
    w.line(format!("const real* const from = &f_{name}[WF_I0(p) * s0 + WF_I1(c1) * s1 + WF_I2(c2)];"));
    w.line(format!("const unsigned to = wf_smem(&WF_POINT_CELL({k}, slot + q, a, 0));"));
    w.line(
        "const bool whole = WF_D2 > 0 && (WF_T2 * sizeof(real)) % 16 == 0 && c2 >= -WF_R2 && c2 + WF_T2 <= X2 + WF_R2",
    );
    w.line("    && ((size_t)from % 16 == 0) && to % 16 == 0;");
    w.open("if (whole)");
    w.line("#pragma unroll");
    w.line("for (int v = 0; v < (int)(WF_T2 * sizeof(real) / 16); ++v) wf_copy16_to(to + 16 * v, (const char*)from + 16 * v);");
    w.reopen("else");
    w.line("#pragma unroll 1");
    w.open("for (int b = 0; b < WF_T2; ++b)");
    w.line("if (c2 + b < -WF_R2 || c2 + b >= X2 + WF_R2) continue;");
    w.line(format!(
        "wf_copy_to(to + b * (int)sizeof(real), &f_{name}[WF_I0(p) * s0 + WF_I1(c1) * s1 + WF_I2(c2 + b)]);"
    ));
    w.close("");
    w.close("");
    w.close("");
}

/// The storer's stores of the pencil's own points of planes `[stored, done)`, at most a
/// chunk in consecutive slots: like the loaders, a storer thread owns the same lanes of every
/// plane.
fn store_owned_cells(w: &mut Writer, unknown: &str) {
    w.line("#pragma unroll 1");
    w.open("for (int m = 0; m < (WF_T1 * WF_T2 + WF_STORERS - 1) / WF_STORERS; ++m)");
    w.line("const int c = sid + m * WF_STORERS, a = c / WF_T2, b = c % WF_T2;");
    w.line("const int y1 = base1 + a, c2 = base2 + b - WF_K2 * y1;");
    w.line("if (c >= WF_T1 * WF_T2 || c2 < 0 || c2 >= X2) continue;");
    w.line("const idx g = WF_I0(stored) * s0 + WF_I1(y1 - WF_K1 * stored) * s1 + WF_I2(c2);");
    w.line("const real* const from = &WF_SLOT_CELL(0, WF_SLOT(stored), a + WF_RZ1, b + WF_RZ2);");
    w.line("#pragma unroll");
    w.open("for (int q = 0; q < WF_CHUNK; ++q)");
    w.line("const int c1 = y1 - WF_K1 * (stored + q);");
    w.line("if (q >= done - stored || c1 < 0 || c1 >= X1) continue;");
    w.line(format!("f_{unknown}[g + q * plane_stride] = from[q * WF_PLANE];"));
    w.close("");
    w.close("");
}
