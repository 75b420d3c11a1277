//! The boundary fill: every point of the periodic and Neumann outer layers set from the
//! interior point it stands for, in one launch. The runtime's `plan::fill` gives the copies,
//! axis by axis, that the CPU twin runs; on each axis they map the outer slices of a side to
//! interior slices, and their composition sets a point of the outer layers to the value at
//! its mapped coordinates on every axis, which this kernel reads directly.

use super::signature::{Kind, signature};
use crate::ir::Stencil;
use crate::writer::Writer;

pub(super) fn emit_boundary(w: &mut Writer, s: &Stencil) {
    w.line("// Boundary fill: on kernel axis k, slices [0, low_k) are the low outer layer, read from slice");
    w.line("// low_from_k + low_step_k·x, and slices [high_k, n_k) the high one, read from high_from_k +");
    w.line("// high_step_k·x (low_k = 0 and high_k = n_k where a side keeps its values). A point of the outer");
    w.line("// layers takes the value at its coordinates mapped on every axis, which lies in no outer layer");
    w.line("// that is written: the points are the shell of slabs on axis 0, then axis 1 within axis 0's");
    w.line("// inner slices, then axis 2 within both. Launch with one thread per point written, 1-D blocks.");
    signature(s, Kind::Boundary).open(w);
    w.line("const idx N0 = (idx)n0, N1 = (idx)n1, N2 = (idx)n2;");
    for k in 0..3 {
        w.line(format!("const idx l{k} = (idx)low{k} < 0 ? 0 : (idx)low{k} > N{k} ? N{k} : (idx)low{k};"));
        w.line(format!("const idx h{k} = (idx)high{k} < l{k} ? l{k} : (idx)high{k} > N{k} ? N{k} : (idx)high{k};"));
    }
    w.line("const idx o0 = l0 + N0 - h0, o1 = l1 + N1 - h1, o2 = l2 + N2 - h2;");
    w.line("const idx c0 = o0 * N1 * N2, c1 = (h0 - l0) * o1 * N2, c2 = (h0 - l0) * (h1 - l1) * o2;");
    w.line("idx e = (idx)blockIdx.x * blockDim.x + threadIdx.x;");
    w.line("idx x0, x1, x2;");
    w.open("if (e < c0)");
    w.line("const idx s0 = e / (N1 * N2);");
    w.line("x0 = s0 < l0 ? s0 : h0 + (s0 - l0); x1 = (e / N2) % N1; x2 = e % N2;");
    w.reopen("else if ((e -= c0) < c1)");
    w.line("const idx s1 = (e / N2) % o1;");
    w.line("x0 = l0 + e / (o1 * N2); x1 = s1 < l1 ? s1 : h1 + (s1 - l1); x2 = e % N2;");
    w.reopen("else if ((e -= c1) < c2)");
    w.line("const idx t = e / o2, s2 = e % o2;");
    w.line("x0 = l0 + t / (h1 - l1); x1 = l1 + t % (h1 - l1); x2 = s2 < l2 ? s2 : h2 + (s2 - l2);");
    w.reopen("else");
    w.line("return;");
    w.close("");
    for k in 0..3 {
        w.line(format!("const idx y{k} = x{k} < l{k} ? (idx)low_from{k} + (idx)low_step{k} * x{k}"));
        w.line(format!("    : x{k} >= h{k} ? (idx)high_from{k} + (idx)high_step{k} * x{k} : x{k};"));
    }
    let u = format!("f_{}", super::c_name(&s.fields[s.unknown].name));
    w.line(format!("{u}[(x0 * N1 + x1) * N2 + x2] = {u}[(y0 * N1 + y1) * N2 + y2];"));
    w.close("");
    w.blank();
}
