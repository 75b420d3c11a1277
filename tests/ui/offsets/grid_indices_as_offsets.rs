use stencil::prelude::*;

// Offsets are relative to the point being updated; there are no grid indices `i`, `j`.
stencil! {
    pub fn poisson(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[i - 1, j] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[i, j]) / 4.0
    }
}

fn main() {}
