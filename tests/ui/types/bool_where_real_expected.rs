use stencil::prelude::*;

stencil! {
    pub fn upwind(mut u: Field1) -> Real {
        u[-1] > u[1]
    }
}

fn main() {}
