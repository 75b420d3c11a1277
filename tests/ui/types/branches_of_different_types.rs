use stencil::prelude::*;

stencil! {
    pub fn pick(mut u: Field1) -> Real {
        if u[0] > 0.0 { u[-1] } else { u[1] > 0.0 }
    }
}

fn main() {}
