use stencil::prelude::*;

stencil! {
    sweep(+) fn pair(mut u: Field1, mut v: Field1) -> (Real, Real) {
        (0.5 * (u[-1] + v[1]), 0.5 * (v[-1] + u[1]))
    }
}

fn main() {}
