use stencil::prelude::*;

stencil! {
    pub fn nothing(mut u: Field1) -> Real {}
}

fn main() {}
