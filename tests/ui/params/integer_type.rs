use stencil::prelude::*;

stencil! {
    pub fn repeat(mut u: Field1, n: usize) -> Real {
        u[0] * n
    }
}

fn main() {}
