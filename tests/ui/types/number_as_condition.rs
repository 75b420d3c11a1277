use stencil::prelude::*;

stencil! {
    pub fn clip(mut u: Field1, limit: Real) -> Real {
        if limit { u[0].min(limit) } else { u[0] }
    }
}

fn main() {}
