use stencil::prelude::*;

stencil! {
    pub fn chain(mut a: Field2, mut b: Field2, mut c: Field2) -> (Real, Real, Real) {
        (a[0, 1] + b[0, 0], b[1, 0] - c[0, 0])
    }
}

fn main() {}
