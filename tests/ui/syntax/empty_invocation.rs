use stencil::prelude::*;

stencil! {}

fn main() {}
