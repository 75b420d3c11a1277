use stencil::prelude::*;

stencil! {
    pub fn damped(mut u: Field1, w: Real) -> Real {
        let mut s = u[-1] + u[1];
        let s = s * w;
        s / 2.0
    }
}

fn main() {}
