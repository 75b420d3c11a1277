use stencil::prelude::*;

stencil! {
    pub fn average(mut u: Field1) -> f64 {
        (u[-1] + u[1]) / 2.0
    }
}

fn main() {}
