use stencil::prelude::*;

stencil! {
    pub fn damped(mut u: Field1, w: Real) -> Real {
        let w = w / 2.0;
        (1.0 - w) * u[0] + w * (u[-1] + u[1]) / 2.0
    }
}

fn main() {}
