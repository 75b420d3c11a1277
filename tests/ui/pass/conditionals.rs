//! `if / else if / else`, every comparison, `&&`, `||` and `!`.
use stencil::prelude::*;

stencil! {
    pub fn classify(mut u: Field1, lo: Real, hi: Real, n: i32) -> Real {
        let x = u[0];
        if x < lo {
            -1.0
        } else if x >= hi && !(n == 0) {
            1
        } else if x == 0.5 || x != x {
            0.5
        } else if x <= lo + 0.1 || x > hi - 0.1 {
            2
        } else {
            let bool_ok = n != 3;
            if bool_ok { x } else { -x }
        }
    }
}

fn main() {
    let p = ClassifyParams { lo: 0.0f64, hi: 1.0, n: 1 };
    let at = |x: f64, p: &ClassifyParams<f64>| <Classify as Stencil<1>>::point(|_| x, p);
    assert_eq!(at(-3.0, &p), -1.0);
    assert_eq!(at(1.5, &p), 1.0);
    assert_eq!(at(1.5, &ClassifyParams { n: 0, ..p }), 2.0);
    assert_eq!(at(0.5, &p), 0.5);
    assert_eq!(at(f64::NAN, &p), 0.5);
    assert_eq!(at(0.05, &p), 2.0);
    assert_eq!(at(0.3, &p), 0.3);
    assert_eq!(at(0.3, &ClassifyParams { n: 3, ..p }), -0.3);
    assert_eq!(<Classify as Stencil<1>>::META.radius, &[0]);
}
