//! The 2-D twin of `01_poisson3d`: solve −Δu = f on the unit square with zero Dirichlet
//! boundary by Jacobi iterations of the built-in 5-point stencil, until
//! ‖uᵏ⁺¹ − uᵏ‖∞ < 1e-5 (or, with `--residual since-last-check`, the change over a check
//! period). The schedule is `Auto` unless `--schedule` says otherwise. `--png` draws the
//! whole solution.
//!
//! ```text
//! cargo run --release --example 02_poisson2d
//! cargo run --release --example 02_poisson2d -- --size 513 --precision f64 --png u.png
//! ```

mod common;
mod poisson;

use std::process::ExitCode;

use stencil::builtin::Jacobi5;

fn main() -> ExitCode {
    poisson::main(Jacobi5, 257)
}
