use stencil::prelude::*;

stencil! {
    pub fn signs(mut u: Field1) -> Real {
        if -(u[0] > 0.0) { !u[1] } else { u[-1] }
    }
}

fn main() {}
