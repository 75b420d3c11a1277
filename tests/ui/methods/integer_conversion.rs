use stencil::prelude::*;

// An `i32` becomes a `Real` by itself: `n.sqrt()` is what to write.
stencil! {
    pub fn scaled(mut u: Field1, n: i32) -> Real {
        u[0] / f64::from(n).sqrt()
    }
}

fn main() {}
