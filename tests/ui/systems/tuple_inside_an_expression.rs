use stencil::prelude::*;

stencil! {
    pub fn pair(mut u: Field1, mut v: Field1) -> (Real, Real) {
        let both = (u[-1], v[1]);
        (u[0], v[0])
    }
}

fn main() {}
