//! The read-only fields given as the generated inputs struct run exactly as given by name; a
//! stencil without read-only fields has a unit inputs struct; raw names are unraw'd.
use stencil::prelude::*;

stencil! {
    /// Jacobi update for −Δu = f with a coefficient field; `h2` is h².
    pub fn weighted(mut u: Field2, f: Field2, r#type: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * r#type[0, 0] * f[0, 0]) / 4.0
    }

    /// Mean of the neighbours.
    pub fn mean(mut u: Field1) -> Real {
        (u[-1] + u[1]) / 2.0
    }
}

fn main() {
    let n = 6;
    let start = Grid::<f64, 2>::from_fn([n, n], |[i, j]| (i * n + j) as f64).unwrap();
    let f = Grid::<f64, 2>::filled([n, n], 1.0).unwrap();
    let k = Grid::<f64, 2>::from_fn([n, n], |[i, _]| 1.0 + i as f64).unwrap();
    let mut typed = start.clone();
    let inputs = WeightedInputs { f: &f, r#type: &k };
    Solver::new(Weighted).inputs(inputs).param("h2", 0.5).max_iterations(3).run(&mut typed).unwrap();
    let mut named = start.clone();
    Solver::new(Weighted).input("f", &f).input("type", &k).param("h2", 0.5).max_iterations(3).run(&mut named).unwrap();
    assert_eq!(typed, named);
    assert_ne!(typed, start);
    let fields = stencil::InputFields::<Weighted, f64, 2>::fields(inputs);
    assert_eq!(fields.iter().map(|(name, _)| *name).collect::<Vec<_>>(), ["f", "type"]);

    let mut u = Grid::<f32, 1>::from_fn([8], |[i]| i as f32).unwrap();
    Solver::new(Mean).inputs(MeanInputs).max_iterations(2).run(&mut u).unwrap();
}
