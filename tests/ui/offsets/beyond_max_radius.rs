use stencil::prelude::*;

stencil! {
    pub fn wide(mut u: Field1) -> Real {
        (u[-9] + u[8]) / 2.0
    }
}

fn main() {}
