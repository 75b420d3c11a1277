//! The `compare` API on the CPU: schedules that must agree do so bit for bit, f32 differs
//! from f64 by rounding, and a variant that cannot run says why without stopping the rest.

use stencil::builtin::Jacobi5;
use stencil::compare::{Precision, Problem, Variant, compare};
use stencil::cuda::{Mode, unusable_reason};
use stencil::prelude::*;

#[test]
fn variants_are_compared_with_the_first() {
    let problem = Problem {
        initial: Grid::<f64, 2>::random_uniform([41, 37], -1.0, 1.0, 1).unwrap(),
        inputs: vec![("f".into(), Grid::<f64, 2>::random_uniform([41, 37], -1.0, 1.0, 2).unwrap())],
        params: vec![("h2".into(), 0.01)],
        iterations: 25,
    };
    let v = |backend, schedule, precision| Variant { backend, schedule, precision, mode: Mode::Exact };
    let variants = [
        v(Backend::Cpu, Schedule::Plain, Precision::F64),
        v(Backend::Cpu, Schedule::Tiled, Precision::F64),
        v(Backend::Cpu, Schedule::Plain, Precision::F32),
        v(Backend::Cuda { device: 7 }, Schedule::Plain, Precision::F64),
    ];
    let cmp = compare(Jacobi5, &problem, &variants).unwrap();
    let ok = |i: usize| cmp.outcomes[i].1.as_ref().unwrap();
    assert!(ok(0).bitwise && ok(0).max_abs == 0.0);
    assert!(ok(1).bitwise, "the tiled schedule is the plain pass on the CPU");
    assert!(!ok(2).bitwise);
    assert!(ok(2).max_rel > 0.0 && ok(2).max_rel < 1e-5, "f32 against f64: {}", ok(2).max_rel);
    if unusable_reason(7).is_some() {
        assert!(cmp.outcomes[3].1.is_err(), "device 7 does not exist here");
    }
    let table = cmp.to_string();
    assert!(table.contains("(reference)") && table.contains("did not run"), "{table}");
}
