use stencil::prelude::*;

stencil! {
    pub fn traced(mut u: Field1) -> Real {
        println!("{}", u[0])
    }
}

fn main() {}
