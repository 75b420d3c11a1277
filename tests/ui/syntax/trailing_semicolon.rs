use stencil::prelude::*;

stencil! {
    pub fn average(mut u: Field1) -> Real {
        (u[-1] + u[1]) / 2.0;
    }
}

fn main() {}
