use stencil::prelude::*;

stencil! {
    pub fn inside(mut u: Field1, lo: Real, hi: Real) -> Real {
        if lo < u[0] < hi { u[0] } else { lo }
    }
}

fn main() {}
