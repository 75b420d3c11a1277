use stencil::prelude::*;

stencil! {
    pub fn clamp(mut u: Field1) -> Real {
        if u[0] > 1.0 {} else { u[0] }
    }
}

fn main() {}
