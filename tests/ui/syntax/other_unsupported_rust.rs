use stencil::prelude::*;

// One error per item; all of them are reported by one build.
stencil! {
    pub fn a_while(mut u: Field1) -> Real { while u[0] > 1.0 { u[0] } }
    pub fn a_loop(mut u: Field1) -> Real { loop { u[0] } }
    pub fn an_unsafe(mut u: Field1) -> Real { unsafe { u[0] } }
    pub fn a_return(mut u: Field1) -> Real { return u[0] }
    pub fn an_array(mut u: Field1) -> Real { [u[-1], u[1]] }
    pub fn a_tuple(mut u: Field1) -> Real { (u[-1], u[1]) }
    pub fn a_tuple_field(mut u: Field1) -> Real { u[0].0 }
    pub fn a_struct_field(mut u: Field1) -> Real { u[0].re }
    pub fn a_string(mut u: Field1) -> Real { "one" }
    pub fn a_remainder(mut u: Field1) -> Real { u[0] % 2.0 }
    pub fn a_bit_and(mut u: Field1) -> Real { if u[0] > 0.0 & true { u[0] } else { 0.0 } }
    pub fn a_shift(mut u: Field1, n: i32) -> Real { u[0] * (n << 1) }
    pub fn a_bit_or(mut u: Field1) -> Real { if u[0] > 0.0 | true { u[0] } else { 0.0 } }
    pub fn a_shift_right(mut u: Field1, n: i32) -> Real { u[0] * (n >> 1) }
    pub fn a_break(mut u: Field1) -> Real { break }
    pub fn a_min_call(mut u: Field1) -> Real { min(u[-1], u[1]) }
}

fn main() {}
