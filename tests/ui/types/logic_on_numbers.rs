use stencil::prelude::*;

stencil! {
    pub fn both(mut u: Field1, w: Real) -> Real {
        if u[0] > 0.0 && w { u[0] } else { 0.0 }
    }
}

fn main() {}
