use stencil::prelude::*;

stencil! {
    sweep(+, -) pub fn gauss_seidel(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
    }
}

fn main() {
    // The stencil is still generated with the visibility it was given.
    let _ = GaussSeidel::META;
}
