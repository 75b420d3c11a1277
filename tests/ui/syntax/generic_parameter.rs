use stencil::prelude::*;

// The element type is `Real`; `T` is reported once, not again where it is used.
stencil! {
    pub fn poisson<T>(mut u: Field2, f: Field2, h2: T) -> T {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
    }
}

fn main() {}
