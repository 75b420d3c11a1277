use stencil::prelude::*;

stencil! {
    pub fn power(mut u: Field1, p: Real) -> Real {
        u[0].powi(p) + u[1].powi(2.0)
    }
}

fn main() {}
