use stencil::prelude::*;

stencil! {
    pub fn poisson(mut u: Field2, mut f: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
    }
}

fn main() {}
