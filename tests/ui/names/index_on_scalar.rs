use stencil::prelude::*;

stencil! {
    pub fn scaled(mut u: Field2, h2: Real) -> Real {
        let s = 0.25;
        h2[0, 0] * u[0, 1] + s[0, 0]
    }
}

fn main() {}
