use stencil::prelude::*;

stencil! {
    pub fn constant(c: Real) -> Real {
        c
    }
}

fn main() {}
