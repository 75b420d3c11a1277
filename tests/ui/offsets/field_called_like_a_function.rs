use stencil::prelude::*;

// A field is read with square brackets. The code below that uses the stencil adds no
// errors of its own: the stencil's types exist even though it does not compile.
stencil! {
    pub fn poisson(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u(-1, 0) + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
    }
}

fn main() {
    let f = Grid::<f64, 2>::filled([9, 9], 1.0).unwrap();
    let mut u = Grid::<f64, 2>::zeros([9, 9]).unwrap();
    let _ = Solver::new(Poisson).input("f", &f).params(PoissonParams { h2: 0.25 }).run(&mut u);
}
