use stencil::prelude::*;

// The stencil's name also names its CUDA kernels; its parameters may have any name.
stencil! {
    pub fn glätten(mut u: Field1) -> Real {
        (u[-1] + u[1]) / 2.0
    }
}

fn main() {}
