//! Unary minus on reads, scalars and groups; parenthesised and negated offsets.
use stencil::prelude::*;

stencil! {
    pub fn signs(mut u: Field2, n: i32) -> Real {
        -u[(-1), 0] + -(u[0, (1)] - u[-(1), 0]) * -n + (((u[0, 0])))
    }
}

fn main() {
    let m = <Signs as Stencil<2>>::META;
    // `u[(-1), 0]` and `u[-(1), 0]` are the same read.
    assert_eq!(m.reads.len(), 3);
    assert_eq!(m.reads[0].offset, &[-1, 0]);
    assert_eq!(m.reads[1].offset, &[0, 1]);
    assert_eq!(m.reads[2].offset, &[0, 0]);
    let reads = [2.0f64, 5.0, 7.0];
    let v = <Signs as Stencil<2>>::point(|s| reads[s], &SignsParams { n: 3 });
    assert_eq!(v, -2.0 + -(5.0 - 2.0) * -3.0 + 7.0);
}
