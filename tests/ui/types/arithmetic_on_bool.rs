use stencil::prelude::*;

stencil! {
    pub fn flag(mut u: Field1) -> Real {
        let up = u[0] > 0.0;
        u[0] + up
    }
}

fn main() {}
