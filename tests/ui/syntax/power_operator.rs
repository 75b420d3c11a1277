use stencil::prelude::*;

stencil! {
    pub fn energy(mut u: Field1) -> Real {
        (u[1] - u[-1])^2 / 4.0
    }
}

fn main() {}
