//! Several stencils in one call, doc comments, and `pub` or private visibility.
use stencil::prelude::*;

mod schemes {
    use stencil::prelude::*;

    stencil! {
        /// Public: usable outside this module.
        ///
        /// Doc comments become the documentation of the generated type.
        pub fn smooth(mut u: Field1) -> Real {
            (u[-1] + 2.0 * u[0] + u[1]) / 4.0
        }

        /// Private: only this module sees `Helper` and `HelperParams`.
        fn helper(mut u: Field1, c: Real) -> Real {
            c * u[0]
        }

        pub(crate) fn crate_visible(mut u: Field1) -> Real { u[0] }
    }

    pub fn helper_name() -> &'static str {
        <Helper as Stencil<1>>::META.name
    }

    pub fn helper_value(x: f64) -> f64 {
        <Helper as Stencil<1>>::point(|_| x, &HelperParams { c: 3.0 })
    }
}

use schemes::{CrateVisible, Smooth};

fn main() {
    assert_eq!(<Smooth as Stencil<1>>::META.name, "smooth");
    assert_eq!(<CrateVisible as Stencil<1>>::META.name, "crate_visible");
    assert_eq!(schemes::helper_name(), "helper");
    assert_eq!(schemes::helper_value(2.0), 6.0);

    // A Jacobi run on a 1-D grid: the ends hold the boundary values.
    let mut u = Grid::<f64, 1>::from_fn([5], |[i]| if i == 4 { 4.0 } else { 0.0 }).unwrap();
    let report = Solver::new(Smooth).max_iterations(1).run(&mut u).unwrap();
    assert_eq!(report.iterations, 1);
    assert_eq!(u.as_slice(), &[0.0, 0.0, 0.0, 1.0, 4.0]);
}
