//! The boundary fill: slices of one axis copied within the unknown's buffer, which sets the
//! periodic and Neumann outer layers from the interior (the runtime's `plan::fill` says
//! which slices, in which order; the CPU twin runs the same copies).

use super::signature::{Kind, signature};
use crate::ir::Stencil;
use crate::writer::Writer;

pub(super) fn emit_boundary(w: &mut Writer, s: &Stencil) {
    w.line("// Boundary fill: `count` slices of kernel axis `axis` (every point of the other two axes) copied");
    w.line("// within the unknown, slice `from + k·from_step` to slice `to + k·to_step`. The slices read are");
    w.line("// never among those written. Launch with one thread per point copied, 1-D blocks.");
    signature(s, Kind::Boundary).open(w);
    w.line("const idx N0 = (idx)n0, N1 = (idx)n1, N2 = (idx)n2;");
    w.line("// The slice's two axes, slowest first, and the point of it this thread copies.");
    w.line("const idx a = axis == 0 ? N1 : N0;");
    w.line("const idx b = axis == 2 ? N1 : N2;");
    w.line("const idx e = (idx)blockIdx.x * blockDim.x + threadIdx.x;");
    w.line("if (e >= (idx)count * a * b) return;");
    w.line("const idx k = e / (a * b), i = (e % (a * b)) / b, j = e % b;");
    w.line("const idx source = (idx)from + k * from_step, target = (idx)to + k * to_step;");
    let u = format!("f_{}", super::c_name(&s.fields[s.unknown].name));
    w.open("if (axis == 0)");
    w.line(format!("{u}[(target * N1 + i) * N2 + j] = {u}[(source * N1 + i) * N2 + j];"));
    w.reopen("else if (axis == 1)");
    w.line(format!("{u}[(i * N1 + target) * N2 + j] = {u}[(i * N1 + source) * N2 + j];"));
    w.reopen("else");
    w.line(format!("{u}[(i * N1 + j) * N2 + target] = {u}[(i * N1 + j) * N2 + source];"));
    w.close("");
    w.close("");
    w.blank();
}
