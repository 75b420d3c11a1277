//! A stencil of your own in a dozen lines: Jacobi for variable-coefficient diffusion
//! −∇·(k∇u) = f in 2-D, with a coefficient field `k` read through arithmetic-mean face
//! coefficients. It runs through `Solver` for a fixed number of iterations and is checked
//! against a hand-written Rust loop doing the same operations in the same order: the two
//! must agree bit for bit.
//!
//! ```text
//! cargo run --release --example 03_custom_stencil
//! ```

mod common;

use std::f64::consts::PI;
use std::process::ExitCode;

use clap::Parser;
use stencil::prelude::*;

stencil! {
    /// Jacobi update for −∇·(k∇u) = f on a uniform 2-D grid; `h2` is h².
    pub fn diffusion(mut u: Field2, k: Field2, f: Field2, h2: Real) -> Real {
        let k_w = (k[0, 0] + k[-1, 0]) / 2.0;
        let k_e = (k[0, 0] + k[1, 0]) / 2.0;
        let k_s = (k[0, 0] + k[0, -1]) / 2.0;
        let k_n = (k[0, 0] + k[0, 1]) / 2.0;
        (k_w * u[-1, 0] + k_e * u[1, 0] + k_s * u[0, -1] + k_n * u[0, 1] + h2 * f[0, 0])
            / (k_w + k_e + k_s + k_n)
    }
}

const N: usize = 129;
const ITERATIONS: usize = 2000;

/// Run a user-written diffusion stencil and a hand-written loop for 2000 iterations on
/// 129 × 129 points: they must agree bit for bit.
#[derive(Parser)]
struct Args {}

fn main() -> ExitCode {
    let Args {} = common::parse();
    common::exit(run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let h = 1.0 / (N - 1) as f64;
    let h2 = (h * h) as f32;
    // A wavy medium (conductivity 0.1 to 1.9) around a disc 100 times as conductive,
    // heated uniformly.
    let k = Grid::<f32, 2>::from_fn([N, N], |[i, j]| {
        let (x, y) = (i as f64 * h, j as f64 * h);
        let medium = 1.0 + 0.9 * (6.0 * PI * x).sin() * (4.0 * PI * y).sin();
        let disc = (x - 0.5).powi(2) + (y - 0.5).powi(2) < 0.25f64.powi(2);
        (if disc { 100.0 * medium } else { medium }) as f32
    })?;
    let f = Grid::<f32, 2>::filled([N, N], 1.0)?;
    let u0 = Grid::<f32, 2>::zeros([N, N])?;

    let mut u = u0.clone();
    let report = Solver::new(Diffusion)
        .input("k", &k)
        .input("f", &f)
        .params(DiffusionParams { h2 })
        .max_iterations(ITERATIONS)
        .run(&mut u)?;
    println!("{report}\n");

    let by_hand = hand_loop(u0.as_slice(), k.as_slice(), f.as_slice(), h2, ITERATIONS);
    let max_diff = u.as_slice().iter().zip(&by_hand).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    println!("u at the centre          {:.6e}", u[[N / 2, N / 2]]);
    println!("max |Solver − hand loop| {max_diff}");
    let bitwise = u.as_slice().iter().zip(&by_hand).all(|(a, b)| a.to_bits() == b.to_bits());
    if !bitwise {
        return Err("the Solver and the hand loop differ".into());
    }
    println!("bitwise equal            yes");
    Ok(())
}

/// The same `iterations` Jacobi passes written out in plain Rust: two buffers swapped after
/// each pass, boundary values never written. The parentheses are those the macro keeps:
/// `a + b + c` is `(a + b) + c`, as in Rust, and no multiply–add is fused.
fn hand_loop(u0: &[f32], k: &[f32], f: &[f32], h2: f32, iterations: usize) -> Vec<f32> {
    let mut old = u0.to_vec();
    let mut new = u0.to_vec();
    let at = |i: usize, j: usize| i * N + j;
    for _ in 0..iterations {
        for i in 1..N - 1 {
            for j in 1..N - 1 {
                let c = at(i, j);
                let k_w = (k[c] + k[at(i - 1, j)]) / 2.0;
                let k_e = (k[c] + k[at(i + 1, j)]) / 2.0;
                let k_s = (k[c] + k[at(i, j - 1)]) / 2.0;
                let k_n = (k[c] + k[at(i, j + 1)]) / 2.0;
                new[c] = ((((k_w * old[at(i - 1, j)] + k_e * old[at(i + 1, j)]) + k_s * old[at(i, j - 1)])
                    + k_n * old[at(i, j + 1)])
                    + h2 * f[c])
                    / (((k_w + k_e) + k_s) + k_n);
            }
        }
        std::mem::swap(&mut old, &mut new);
    }
    old
}
