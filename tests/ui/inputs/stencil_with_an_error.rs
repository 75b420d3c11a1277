use stencil::prelude::*;

stencil! {
    fn heat(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + h2 * f[0, 0]) / undefined
    }
}

fn main() {
    let f = Grid::<f64, 2>::filled([4, 4], 1.0).unwrap();
    let mut u = f.clone();
    let _ = Heat::KERNELS;
    Solver::new(Heat).inputs(HeatInputs { f: &f }).params(HeatParams { h2: 0.1 }).run(&mut u).unwrap();
}
