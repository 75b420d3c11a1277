use stencil::prelude::*;

stencil! {
    pub fn limited(mut u: Field1, cap: Real) -> Real {
        u[-1].max() + u[1].abs(cap) + u[0].mul_add(cap)
    }
}

fn main() {}
