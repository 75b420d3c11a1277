use stencil::prelude::*;

stencil! {
    fn poisson(mut u: Field2, rhs: Field2) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + rhs[0, 0]) / 4.0
    }
}

fn main() {
    let f = Grid::<f64, 2>::filled([4, 4], 1.0).unwrap();
    let mut u = f.clone();
    Solver::new(Poisson).inputs(PoissonInputs { rhs_: &f }).run(&mut u).unwrap();
}
