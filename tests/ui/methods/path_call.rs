use stencil::prelude::*;

stencil! {
    pub fn root(mut u: Field1) -> Real {
        f64::sqrt(u[-1] * u[1])
    }
}

fn main() {}
