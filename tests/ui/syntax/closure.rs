use stencil::prelude::*;

stencil! {
    pub fn halved(mut u: Field1) -> Real {
        let half = |x| x / 2.0;
        half(u[-1] + u[1])
    }
}

fn main() {}
