use stencil::prelude::*;

stencil! {
    pub fn magnitude(mut u: Field2) -> Real {
        (u[-1, 0] * u[-1, 0] + u[0, -1] * u[0, -1]).sqr()
    }
}

fn main() {}
