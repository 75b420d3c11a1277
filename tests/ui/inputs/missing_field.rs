use stencil::prelude::*;

stencil! {
    fn weighted(mut u: Field2, f: Field2, k: Field2) -> Real {
        (u[-1, 0] + u[1, 0] + k[0, 0] * f[0, 0]) / 4.0
    }
}

fn main() {
    let f = Grid::<f64, 2>::filled([4, 4], 1.0).unwrap();
    let mut u = f.clone();
    Solver::new(Weighted).inputs(WeightedInputs { f: &f }).run(&mut u).unwrap();
}
