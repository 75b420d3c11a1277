use stencil::prelude::*;

stencil! {
    pub fn average(mut u: Field1) -> Real {
        let a = u[-1] + u[1];
        a / 2.0 a
    }
}

fn main() {}
