use stencil::prelude::*;

stencil! {
    pub fn scaled(mut u: Field1, n: i32) -> Real {
        u[0] * n as f64
    }
}

fn main() {}
