use stencil::prelude::*;

stencil! {
    pub fn upwind(mut u: Field1, c: Real) -> Real {
        u[0] - c * (c > 0.0 ? u[0] - u[-1] : u[1] - u[0])
    }
}

fn main() {}
