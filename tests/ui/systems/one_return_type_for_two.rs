use stencil::prelude::*;

stencil! {
    pub fn pair(mut u: Field1, mut v: Field1, k: Real) -> Real {
        (u[0] + k * v[1], v[0] - k * u[-1])
    }
}

fn main() {}
