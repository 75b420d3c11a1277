use stencil::prelude::*;

stencil! {
    pub fn switch(mut u: Field1, on: bool) -> Real {
        if on { u[-1] } else { u[1] }
    }
}

fn main() {}
