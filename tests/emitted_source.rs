//! Golden text of the emitted CUDA for the built-in stencils. A change to the emitter shows
//! up here as a diff to review (`cargo insta review`, or `INSTA_UPDATE=always`).

use stencil::builtin::{AtHalf1, GrayScott, Jacobi5, Jacobi7};

#[test]
fn jacobi7_cuda() {
    insta::assert_snapshot!(Jacobi7::CUDA_SOURCE);
}

#[test]
fn jacobi5_cuda() {
    insta::assert_snapshot!(Jacobi5::CUDA_SOURCE);
}

#[test]
fn at_half1_cuda() {
    insta::assert_snapshot!(AtHalf1::CUDA_SOURCE);
}

#[test]
fn gray_scott_cuda() {
    insta::assert_snapshot!(GrayScott::CUDA_SOURCE);
}
