use stencil::prelude::*;

stencil! {
    pub fn nonlinear(mut u: Field1, p: Real) -> Real {
        (u[-1] + u[1]).abs().powf(p) / 2.0
    }
}

fn main() {}
