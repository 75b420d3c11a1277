use stencil::prelude::*;

stencil! {
    pub fn average(mut u: Field1) -> Real {
        let s = u[-1];
        s += u[1]
    }
}

fn main() {}
