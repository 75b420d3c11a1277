use stencil::prelude::*;

stencil! {
    pub fn scaled(mut u: Field1) -> Real {
        u[0] * 10000000000
    }
}

fn main() {}
