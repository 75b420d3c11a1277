use stencil::prelude::*;

stencil! {
    pub fn exchange(mut u: Field1, mut v: Field1) -> (Real, Real) {
        (0.5 * (u[-1] + v[1]), 0.5 * (v[-1] + u[1]), u[0] * v[0])
    }
}

fn main() {}
