use stencil::prelude::*;

stencil! {
    /// Doc comments are kept; other attributes would not reach the generated items.
    #[inline]
    pub fn average(mut u: Field1) -> Real {
        (u[-1] + u[1]) / 2.0
    }
}

fn main() {}
