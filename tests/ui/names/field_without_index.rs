use stencil::prelude::*;

stencil! {
    pub fn relax(mut u: Field2, f: Field2) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + f) / 4.0
    }
}

fn main() {}
