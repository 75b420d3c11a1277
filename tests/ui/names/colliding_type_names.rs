use stencil::prelude::*;

// Both names give the type `Heat2d` (and `Heat2dParams`).
stencil! {
    pub fn heat_2d(mut u: Field2) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]) / 4.0
    }

    pub fn heat2d(mut u: Field2) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + u[0, 0]) / 5.0
    }
}

fn main() {
    let _ = Heat2d::META;
}
