use stencil::prelude::*;

stencil! {
    pub fn root(mut u: Field1) -> Real {
        sqrt(u[-1] * u[1])
    }
}

fn main() {}
