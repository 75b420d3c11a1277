use stencil::prelude::*;

stencil! {
    pub fn smooth(mut u: Field2) -> Real {
        (u[-1] + u[1, 0, 0] + u[0, 0]) / 3.0
    }

    pub fn smooth1(mut v: Field1) -> Real {
        (v[-1, 0] + v[1]) / 2.0
    }
}

fn main() {}
