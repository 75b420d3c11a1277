use stencil::prelude::*;

stencil! {
    pub fn shifted(mut u: Field2, k: i32) -> Real {
        (u[k, 0] + u[0, 0.5]) / 2.0
    }
}

fn main() {}
