use stencil::prelude::*;

// Every error of an item, and of every item in the call, is reported in one build.
stencil! {
    pub sweep(+, +, +) fn broken(u: Field2, f: Field3, h2: Real, h2: i32) -> Real {
        let a = u[0.5, 0] + f[0, 0];
        (a + h3 * u[1, 0].cube() + u[0, 12]) / 4.0
    }

    pub fn also_broken(mut v: Field1) -> Real {
        v
    }
}

fn main() {}
