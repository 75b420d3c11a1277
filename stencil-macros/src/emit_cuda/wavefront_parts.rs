//! What both forms of the pencil kernel share: the fields staged in windows, a lane's step, a
//! cell of the planes being loaded and the store of finished planes.

use super::common::*;
use crate::ir::Stencil;
use crate::writer::Writer;

/// The fields the wavefront kernel stages in shared-memory windows: the unknown first, then
/// the read-only fields the point function reads at an offset, then those it reads only at
/// the point, each group in declaration order. A global load in a step would put the
/// memory's latency on the sweep's critical path once per step.
pub(super) fn wavefront_windows(s: &Stencil) -> Vec<usize> {
    let read = |f: usize| s.reads.iter().any(|r| r.field == f);
    let others = (0..s.fields.len()).filter(|&f| f != s.unknown && read(f));
    let (point, halo): (Vec<usize>, Vec<usize>) = others.partition(|&f| point_only(s, f));
    std::iter::once(s.unknown).chain(halo).chain(point).collect()
}

/// The number of [`wavefront_windows`] read only at the point, the last ones: they are
/// staged without a halo, a plane of them one cell a lane.
pub(super) fn point_windows(s: &Stencil) -> usize {
    wavefront_windows(s).iter().filter(|&&f| f != s.unknown && point_only(s, f)).count()
}

/// The number of [`wavefront_windows`] with a halo, the first ones (the kernel's `WF_NH`).
pub(super) fn halo_windows(s: &Stencil) -> usize {
    wavefront_windows(s).len() - point_windows(s)
}

/// Whether every read of field `f` is at the point itself.
fn point_only(s: &Stencil, f: usize) -> bool {
    s.reads.iter().filter(|r| r.field == f).all(|r| r.offset.iter().all(|&d| d == 0))
}

/// One step of the march: the lane's point of the step's hyperplane, computed from the
/// windows and written back into the unknown's window, by threads where `lane` holds.
pub(super) fn emit_step(w: &mut Writer, s: &Stencil, windows: &[usize], lane: &str) {
    w.line("const int z0 = s - t1 - t2;");
    w.line("const int x1 = z1 - WF_K1 * z0;");
    w.open(format!("if ({lane} && z0 >= 0 && z0 < X0 && x1 >= 0 && x1 < X1 && x2 >= 0 && x2 < X2)"));
    let halo = halo_windows(s);
    let cell = |k: usize| match k < halo {
        true => format!(
            "WF_CELL({k}, z0 + WF_DZ0(e0, e1, e2), t1 + WF_RZ1 + WF_DZ1(e0, e1, e2), t2 + WF_RZ2 + WF_DZ2(e0, e1, e2))"
        ),
        false => format!("WF_POINT_CELL({k}, WF_SLOT(z0), t1, t2)"),
    };
    emit_point(w, s, windows, cell, "WF_CELL(0, z0, t1 + WF_RZ1, t2 + WF_RZ2)");
    w.close("");
}

/// The lane's point: its reads from the windows, window k's cell at offset (e0, e1, e2) being
/// `cell(k)`, and the new value written to `own` (the unknown's cell of the point).
pub(super) fn emit_point(w: &mut Writer, s: &Stencil, windows: &[usize], cell: impl Fn(usize) -> String, own: &str) {
    for (k, &f) in windows.iter().enumerate() {
        w.line(format!("#define AT_{}(e0, e1, e2) {}", c_name(&s.fields[f].name), cell(k)));
    }
    point_call(w, s);
    undefine_access(w, s);
    w.line(format!("{own} = v;"));
}

/// The window cell of load `cell` from plane `loaded` on (plane `p`, window lanes `a`, `b`,
/// oriented coordinates `c1`, `c2`), and a block entered when the cell is a grid point of
/// the planes `[loaded, need)`.
pub(super) fn open_loaded_cell(w: &mut Writer, cell: &str) {
    w.line(format!("const int c = {cell};"));
    w.line("const int p = loaded + c / (WF_E1 * WF_E2), a = c / WF_E2 % WF_E1, b = c % WF_E2;");
    w.line("const int y1 = base1 - WF_RZ1 + a, y2 = base2 - WF_RZ2 + b;");
    w.line("const int c1 = y1 - WF_K1 * p, c2 = y2 - WF_K2 * y1;");
    w.open("if (p < need && c1 >= -WF_R1 && c1 < X1 + WF_R1 && c2 >= -WF_R2 && c2 < X2 + WF_R2)");
}

/// Whether window cell (`a`, `b`) (lanes with the halo) is a lane's own cell, the cells a
/// window of a field read only at the point holds.
pub(super) fn point_cell_inside(a: &str, b: &str) -> String {
    format!("({a} >= WF_RZ1 && {a} < WF_RZ1 + WF_T1 && {b} >= WF_RZ2 && {b} < WF_RZ2 + WF_T2)")
}

/// Stores the pencil's own points of planes `[stored, done)` from the window, thread `id`
/// of `count`.
pub(super) fn store_planes(w: &mut Writer, unknown: &str, id: &str, count: &str) {
    w.open(format!("for (int c = {id}; c < (done - stored) * WF_T1 * WF_T2; c += {count})"));
    w.line("const int p = stored + c / (WF_T1 * WF_T2), a = c / WF_T2 % WF_T1, b = c % WF_T2;");
    w.line("const int y1 = base1 + a, y2 = base2 + b;");
    w.line("const int c1 = y1 - WF_K1 * p, c2 = y2 - WF_K2 * y1;");
    w.open("if (c1 >= 0 && c1 < X1 && c2 >= 0 && c2 < X2)");
    w.line(format!("f_{unknown}[WF_I0(p) * s0 + WF_I1(c1) * s1 + WF_I2(c2)] = WF_CELL(0, p, a + WF_RZ1, b + WF_RZ2);"));
    w.close("");
    w.close("");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_only_at_the_point_are_staged_last_without_a_halo() {
        let item = syn::parse2(quote::quote! {
            sweep(+, +) fn at(mut u: Field2, f: Field2, k: Field2, g: Field2) -> Real {
                (u[-1, 0] + u[0, -1] + k[0, 0] * u[1, 0] + k[0, 1] + f[0, 0] * g[0, 0]) / 5.0
            }
        })
        .expect("parses");
        let s = crate::validate::lower(&item).expect("lowers");
        assert_eq!(wavefront_windows(&s), [0, 2, 1, 3]);
        assert_eq!(point_windows(&s), 2);
    }
}
