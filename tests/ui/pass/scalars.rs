//! `Real` and `i32` scalars: an `i32` meets a `Real` as a `Real`, `powi` takes an `i32`.
use stencil::ScalarKind;
use stencil::prelude::*;

stencil! {
    pub fn scaled(mut u: Field1, a: Real, n: i32, p: i32) -> Real {
        a * n + u[0].powi(p) + u[1].powi(2) + u[-1].powi(-1) + (n + 1) / 2
    }
}

fn main() {
    let m = <Scaled as Stencil<1>>::META;
    assert_eq!(m.params.len(), 3);
    assert_eq!((m.params[0].name, m.params[0].kind), ("a", ScalarKind::Real));
    assert_eq!((m.params[1].name, m.params[1].kind), ("n", ScalarKind::I32));
    assert_eq!((m.params[2].name, m.params[2].kind), ("p", ScalarKind::I32));

    let params = ScaledParams { a: 0.5f64, n: 4, p: 3 };
    let reads = [2.0, 3.0, 4.0]; // u[0], u[1], u[-1] in order of first appearance
    let v = <Scaled as Stencil<1>>::point(|s| reads[s], &params);
    // `n + 1` is i32 arithmetic, but `/` always divides `Real`s: (4 + 1) / 2 = 2.5.
    assert_eq!(v, 0.5 * 4.0 + 8.0 + 9.0 + 0.25 + 2.5);

    // The same parameters, by name (as from a configuration file).
    let named = <Scaled as Stencil<1>>::params_from_values::<f64>(&[("a", 0.5), ("n", 4.0), ("p", 3.0)]).unwrap();
    assert_eq!(named, params);
    assert!(<Scaled as Stencil<1>>::params_from_values::<f64>(&[("a", 0.5), ("n", 4.5), ("p", 3.0)]).is_err());
    assert!(<Scaled as Stencil<1>>::params_from_values::<f64>(&[("a", 0.5), ("n", 4.0)]).is_err());
    assert!(
        <Scaled as Stencil<1>>::params_from_values::<f64>(&[("a", 0.5), ("n", 4.0), ("p", 3.0), ("q", 1.0)]).is_err()
    );

    // f32 works the same way.
    let v32 = <Scaled as Stencil<1>>::point(|s| [2.0f32, 3.0, 4.0][s], &ScaledParams { a: 0.5f32, n: 4, p: 3 });
    assert_eq!(v32, 21.75);
}
