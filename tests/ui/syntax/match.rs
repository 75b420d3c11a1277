use stencil::prelude::*;

stencil! {
    pub fn pick(mut u: Field1, n: i32) -> Real {
        match n {
            0 => u[-1],
            _ => u[1],
        }
    }
}

fn main() {}
