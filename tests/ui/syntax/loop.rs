use stencil::prelude::*;

stencil! {
    pub fn summed(mut u: Field1) -> Real {
        for k in 0..3 { u[0] }
    }
}

fn main() {}
