//! The element type of a stencil: `f32` or `f64`.

use std::fmt::{Debug, Display};
use std::ops::{Add, Div, Mul, Neg, Sub};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// A floating-point element type that stencils are generic over (`f32` or `f64`).
///
/// Every method has a CUDA twin of the same name and rounding, so the CPU and GPU halves of
/// a stencil compute the same value from the same operations. The trait is sealed: the
/// generated CUDA code only knows `float` and `double`.
pub trait Real:
    sealed::Sealed
    + ndarray_npy::ReadableElement
    + ndarray_npy::WritableElement
    + cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + Copy
    + Send
    + Sync
    + Default
    + Debug
    + Display
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + 'static
{
    /// `"f32"` or `"f64"`.
    const NAME: &'static str;
    /// Size of one element in bytes.
    const BYTES: usize;
    /// The value 0.
    const ZERO: Self;

    /// Converts a literal of the stencil source (always parsed as `f64`) to this type,
    /// rounding to nearest as C's `(float)` cast does.
    fn from_f64(v: f64) -> Self;
    /// Converts an `i32` scalar parameter, as C's `(float)` cast does.
    fn from_i32(v: i32) -> Self;
    /// Widens to `f64` (exact).
    fn to_f64(self) -> f64;
    /// Whether the value is neither NaN nor infinite.
    fn is_finite(self) -> bool;
    /// Absolute value.
    fn abs(self) -> Self;
    /// Square root (correctly rounded, as CUDA's default `sqrt`).
    fn sqrt(self) -> Self;
    /// e^x.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Integer power by binary exponentiation: the same multiplications, in the same
    /// order, as the CUDA twin (`std`'s `powi` leaves the order to the compiler).
    fn powi(self, n: i32) -> Self;
    /// Smaller of two values; a NaN operand is ignored (as C's `fmin`).
    fn min(self, other: Self) -> Self;
    /// Larger of two values; a NaN operand is ignored (as C's `fmax`).
    fn max(self, other: Self) -> Self;
    /// `self * a + b` with one rounding (as C's `fma`).
    fn mul_add(self, a: Self, b: Self) -> Self;
}

macro_rules! impl_real {
    ($t:ident, $bytes:expr) => {
        impl Real for $t {
            const NAME: &'static str = stringify!($t);
            const BYTES: usize = $bytes;
            const ZERO: Self = 0.0;

            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_i32(v: i32) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                $t::is_finite(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $t::abs(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                $t::sqrt(self)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                $t::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                $t::ln(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                $t::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                $t::cos(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                $t::tanh(self)
            }
            #[inline(always)]
            fn powi(self, n: i32) -> Self {
                let (mut base, mut e, mut r) = (self, n.unsigned_abs(), 1.0);
                loop {
                    if e & 1 == 1 {
                        r *= base;
                    }
                    e >>= 1;
                    if e == 0 {
                        break;
                    }
                    base *= base;
                }
                if n < 0 { 1.0 / r } else { r }
            }
            #[inline(always)]
            fn min(self, other: Self) -> Self {
                $t::min(self, other)
            }
            #[inline(always)]
            fn max(self, other: Self) -> Self {
                $t::max(self, other)
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                $t::mul_add(self, a, b)
            }
        }
    };
}

impl_real!(f32, 4);
impl_real!(f64, 8);
