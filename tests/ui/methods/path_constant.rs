use stencil::prelude::*;

stencil! {
    pub fn wave(mut u: Field1, k: Real) -> Real {
        u[0] * (2.0 * std::f64::consts::PI * k).cos()
    }
}

fn main() {}
