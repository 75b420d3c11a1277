use stencil::prelude::*;

stencil! {
    pub fn average(mut u: Field1) -> Real {
        let s: Real = u[-1] + u[1];
        s / 2.0
    }
}

fn main() {}
