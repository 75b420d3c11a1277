//! `let` bindings, nested blocks, shadowing of bindings and the scope of a block.
use stencil::prelude::*;

stencil! {
    pub fn blocks(mut u: Field1, w: Real) -> Real {
        let left = u[-1];
        let right = u[1];
        let sum = {
            let twice = 2.0 * u[0];
            left + right - twice
        };
        let sum = sum * w;
        let inner = { { sum } };
        u[0] + inner
    }
}

fn main() {
    // Slots in order of first appearance: u[-1], u[1], u[0].
    let reads = [1.0f64, 3.0, 10.0];
    let v = <Blocks as Stencil<1>>::point(|s| reads[s], &BlocksParams { w: 0.25 });
    assert_eq!(v, 10.0 + 0.25 * (1.0 + 3.0 - 20.0));
    assert_eq!(<Blocks as Stencil<1>>::META.reads.len(), 3);
}
