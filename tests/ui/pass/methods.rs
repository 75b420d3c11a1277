//! Every method of the language, checked against the same operation on `f64`.
use stencil::prelude::*;

stencil! {
    pub fn abs(mut u: Field1) -> Real { u[0].abs() }
    pub fn sqrt(mut u: Field1) -> Real { u[0].sqrt() }
    pub fn exp(mut u: Field1) -> Real { u[0].exp() }
    pub fn ln(mut u: Field1) -> Real { u[0].ln() }
    pub fn sin(mut u: Field1) -> Real { u[0].sin() }
    pub fn cos(mut u: Field1) -> Real { u[0].cos() }
    pub fn tanh(mut u: Field1) -> Real { u[0].tanh() }
    pub fn powi(mut u: Field1, k: i32) -> Real { u[0].powi(k) + u[0].powi(2) }
    pub fn power(mut u: Field1, k: i32) -> Real { u[0].powi(k) }
    pub fn min(mut u: Field1) -> Real { u[-1].min(u[1]) }
    pub fn max(mut u: Field1) -> Real { u[-1].max(u[1]) }
    pub fn mul_add(mut u: Field1, a: Real) -> Real { u[0].mul_add(a, 1) }
    pub fn chained(mut u: Field1) -> Real { u[0].abs().sqrt().max(0.5).min(2.0) }
}

fn main() {
    let x = 0.7f64;
    let one = |s: usize| [x, -1.5][s];
    let none = AbsParams;
    assert_eq!(<Abs as Stencil<1>>::point(|_| -x, &none), x.abs());
    assert_eq!(<Sqrt as Stencil<1>>::point(one, &SqrtParams), x.sqrt());
    assert_eq!(<Exp as Stencil<1>>::point(one, &ExpParams), x.exp());
    assert_eq!(<Ln as Stencil<1>>::point(one, &LnParams), x.ln());
    assert_eq!(<Sin as Stencil<1>>::point(one, &SinParams), x.sin());
    assert_eq!(<Cos as Stencil<1>>::point(one, &CosParams), x.cos());
    assert_eq!(<Tanh as Stencil<1>>::point(one, &TanhParams), x.tanh());
    let p = PowiParams { k: 3 };
    assert_eq!(<Powi as Stencil<1>>::point(one, &p), x.powi(3) + x.powi(2));
    let pm = MinParams;
    assert_eq!(<Min as Stencil<1>>::point(one, &pm), -1.5);
    let px = MaxParams;
    assert_eq!(<Max as Stencil<1>>::point(one, &px), 0.7);
    assert_eq!(<MulAdd as Stencil<1>>::point(one, &MulAddParams { a: 3.0 }), x.mul_add(3.0, 1.0));
    let pc = ChainedParams;
    assert_eq!(<Chained as Stencil<1>>::point(|_| -9.0, &pc), 2.0);
    assert_eq!(<Chained as Stencil<1>>::point(|_| 0.01, &pc), 0.5);
    // `powi` multiplies by binary exponentiation, lowest bit first (docs/dsl.md, *Methods*).
    for x in [0.7f64, 1.1, -3.3, 1e-3, 123.456] {
        let powi = |k: i32| <Power as Stencil<1>>::point(|_| x, &PowerParams { k });
        let x2 = x * x;
        let x4 = x2 * x2;
        assert_eq!(powi(5).to_bits(), (x * x4).to_bits());
        assert_eq!(powi(13).to_bits(), (x * x4 * (x4 * x4)).to_bits());
        assert_eq!(powi(-2).to_bits(), (1.0 / x2).to_bits());
    }
    // mul_add counts two operations, every other method one.
    assert_eq!(<MulAdd as Stencil<1>>::META.flops, 2);
    assert_eq!(<Chained as Stencil<1>>::META.flops, 4);
}
