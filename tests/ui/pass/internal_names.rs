//! Parameters and bindings named like what the generated Rust and CUDA use for themselves
//! (`point`, `load`, `params`, `T`, `N`, `idx`, `i`, `x`, `tid`, `out`, `REAL`, `R0`, `MARCH`
//! …), names beyond ASCII and raw identifiers: each is the stencil's own, and the stencil
//! computes what it says (`tests/nvrtc_compile.rs` compiles the same stencils' CUDA).
#![deny(warnings)]
use stencil::prelude::*;

stencil! {
    /// A Jacobi stencil whose every name is one the generated code also uses.
    pub fn idx(mut i: Field2, x: Field2, tid: Field2, out: Field2, T: Real, N: i32, point: Real, load: Real,
               params: Real, value: Real, R0: Real, MARCH: Real, REAL: Real, λ: Real, r#type: Real,
               __element: i32) -> Real {
        let k = i[-1, 0] + i[1, 0];
        let j = x[0, -1] * tid[0, 1] + out[0, 0];
        let s0 = k * T + j * N;
        let v = point * load + params * value;
        let z = R0 + MARCH * REAL + λ * r#type + __element;
        let y = { let k = s0 + v; k * z };
        y + k
    }

    /// A sweep (its wavefront kernel has names of its own) named like a kernel macro's prefix.
    pub sweep(+, -) fn at(mut READS: Field2, win: Field2, order: Real, progress: Real, ticket: Real) -> Real {
        let me = READS[-1, 0] + READS[0, 1];
        let done = win[0, 0] * order;
        me * progress + done * ticket
    }
}

fn main() {
    let m = <Idx as Stencil<2>>::META;
    let names: Vec<&str> = m.params.iter().map(|p| p.name).collect();
    assert_eq!(names, ["T", "N", "point", "load", "params", "value", "R0", "MARCH", "REAL", "λ", "type", "__element"]);
    let params = IdxParams {
        T: 2.0,
        N: 3,
        point: 5.0,
        load: 7.0,
        params: 11.0,
        value: 13.0,
        R0: 17.0,
        MARCH: 19.0,
        REAL: 23.0,
        λ: 29.0,
        r#type: 31.0,
        __element: 37,
    };
    // Slots: i[-1, 0], i[1, 0], x[0, -1], tid[0, 1], out[0, 0].
    let reads = [1.0f64, 2.0, 3.0, 4.0, 5.0];
    let k = 1.0 + 2.0;
    let j = 3.0 * 4.0 + 5.0;
    let s0 = k * 2.0 + j * 3.0;
    let v = 5.0 * 7.0 + 11.0 * 13.0;
    let z = 17.0 + 19.0 * 23.0 + 29.0 * 31.0 + 37.0;
    assert_eq!(<Idx as Stencil<2>>::point(|s| reads[s], &params), (s0 + v) * z + k);

    // A run, with the parameters by name as well as in the struct.
    let g = Grid::<f64, 2>::from_fn([4, 4], |[a, b]| (a * 4 + b) as f64).unwrap();
    let mut by_struct = g.clone();
    Solver::new(Idx)
        .input("x", &g)
        .input("tid", &g)
        .input("out", &g)
        .params(params)
        .max_iterations(1)
        .run(&mut by_struct)
        .unwrap();
    let mut by_name = g.clone();
    let mut solver = Solver::new(Idx).input("x", &g).input("tid", &g).input("out", &g).max_iterations(1);
    for (name, value) in [("T", 2.0), ("N", 3.0), ("point", 5.0), ("load", 7.0), ("params", 11.0), ("value", 13.0)] {
        solver = solver.param(name, value);
    }
    for (name, value) in
        [("R0", 17.0), ("MARCH", 19.0), ("REAL", 23.0), ("λ", 29.0), ("type", 31.0), ("__element", 37.0)]
    {
        solver = solver.param(name, value);
    }
    solver.run(&mut by_name).unwrap();
    assert_eq!(by_struct, by_name);
    let at = |a: usize, b: usize| g[[a, b]];
    let (k, j) = (at(0, 1) + at(2, 1), at(1, 0) * at(1, 2) + at(1, 1));
    assert_eq!(by_struct[[1, 1]], (k * 2.0 + j * 3.0 + v) * z + k);

    let reads = [1.0f32, 2.0, 3.0];
    let p = AtParams { order: 0.5, progress: 2.0, ticket: 4.0 };
    assert_eq!(<At as Stencil<2>>::point(|s| reads[s], &p), (1.0 + 2.0) * 2.0 + 3.0 * 0.5 * 4.0);
}
