use stencil::prelude::*;

stencil! {
    pub fn limited(mut u: Field1) -> Real {
        ((u[-1] + u[1]) / 2.0).clamp(0.0, 1.0)
    }
}

fn main() {}
