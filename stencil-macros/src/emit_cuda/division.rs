//! Division by a value in the generated CUDA: the correctly rounded quotient (the CPU twin's
//! bits) without the hardware division's branch to its slow path where it can.

use crate::writer::Writer;

/// Division by a value: `a / b`'s bits. Single precision: the double reciprocal's product,
/// rounded; double precision: Markstein's quotient, the rare operands out of line.
pub(super) fn emit_div(w: &mut Writer) {
    w.line("// Division by a value (not a constant): a / b, bit for bit. The hardware's IEEE quotient checks its");
    w.line("// operands and branches to a subroutine of dozens of instructions for a zero or subnormal dividend,");
    w.line("// common in the untouched or decaying parts of a field.");
    w.line("// Single precision, on the GPUs with fast double precision (half the single-precision rate): a times the");
    w.line("// double reciprocal of b, rounded to float. The product is within 2^-51.9 of a/b (relative), while a");
    w.line("// quotient of two 24-bit significands is never a midpoint between floats (subnormal ones included) and");
    w.line("// never within 2^-48.9 of one, so rounding it gives the correctly rounded a/b, with no branch; zeros,");
    w.line(
        "// infinities and NaN come out as IEEE says. A loop hoists the reciprocal of a divisor that does not change.",
    );
    w.line(
        "// Elsewhere, 0 / b for b neither zero nor NaN is the zero whose sign is the operands' signs' exclusive or,",
    );
    w.line("// and the division runs on a dividend of 1 there. Fast mode's single-precision division is approximate.");
    w.open("__device__ __forceinline__ float stencil_div(const float a, const float b)");
    w.line("#if defined(STENCIL_FAST)");
    w.line("return a / b;");
    w.line(
        "#elif defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 600 || __CUDA_ARCH__ == 700 || __CUDA_ARCH__ == 800 || \\",
    );
    w.line("    __CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000)");
    w.line("return (float)((double)a * (1.0 / (double)b));");
    w.line("#else");
    emit_zero_guarded(w, "float", "unsigned int", "__float_as_uint", "__uint_as_float", "0x80000000u");
    w.line("#endif");
    w.close("");
    w.line("// Double precision: Markstein's quotient. With y the correctly rounded 1/b and q0 = a·y (within about an");
    w.line(
        "// ulp of a/b), the residual a − b·q0 is exact (one fused multiply–add), and q0 plus the residual times y,",
    );
    w.line(
        "// rounded once, is the correctly rounded a/b (Markstein's correction step; the generator's unit tests check",
    );
    w.line("// it against IEEE division) as long as nothing underflows or overflows: here b within 2^±300 and a from");
    w.line(
        "// 2^-960 (so the residual's bits stay above the subnormals') and |b|·2^-1020 (a normal quotient) to 2^700,",
    );
    w.line(
        "// or a zero a, whose quotient has q0's sign. Three dependent operations after the multiply (a loop hoists",
    );
    w.line(
        "// y and the range's start for a divisor that does not change). A smaller nonzero a (the tail of a decaying",
    );
    w.line(
        "// field, met in many steps of a sweep) takes a short path of its own; the other operands divide out of line.",
    );
    w.open("__device__ __noinline__ double stencil_div_rare(const double a, const double b)");
    emit_zero_guarded(
        w,
        "double",
        "unsigned long long",
        "(unsigned long long)__double_as_longlong",
        "__longlong_as_double",
        "0x8000000000000000ull",
    );
    w.close("");
    emit_tiny_dividend(w);
    w.open("__device__ __forceinline__ double stencil_div(const double a, const double b)");
    w.line("const auto bits = [](const double x) { return (unsigned long long)__double_as_longlong(x); };");
    w.line("const double y = __drcp_rn(b);");
    w.line("const double q0 = __dmul_rn(a, y);");
    w.line(format!(
        "const unsigned long long magnitude = {MAGNITUDE}, ma = bits(a) & magnitude, mb = bits(b) & magnitude;"
    ));
    w.line("double q = __longlong_as_double((bits(__fma_rn(__fma_rn(-b, q0, a), y, q0)) & magnitude) | (bits(q0) & ~magnitude));");
    w.line(format!("const bool divisor = mb - {DIVISOR_LOWEST} <= {DIVISOR_SPAN};"));
    w.line(format!(
        "const unsigned long long lowest = mb > {QUOTIENT_SHIFT} + {DIVIDEND_FLOOR} ? mb - {QUOTIENT_SHIFT} : {DIVIDEND_FLOOR};"
    ));
    w.line(format!("const bool within = divisor && (ma - lowest < {DIVIDEND_END} - lowest || ma == 0);"));
    w.line("// Computed before the branch, so the common path does not wait for the range check.");
    w.line("asm volatile(\"\" : \"+d\"(q));");
    w.line("const bool tiny = divisor && ma - 1 < lowest - 1;");
    w.line("return within ? q : tiny ? stencil_div_tiny(a, b, y) : stencil_div_rare(a, b);");
    w.close("");
    w.blank();
}

/// Double precision's quotient of a nonzero dividend below Markstein's range (so below
/// 2^-700) by a divisor in range: Markstein's quotient of a·2^600, scaled back, and where
/// that scaling rounds a quotient that fell exactly halfway between two subnormals, the
/// neighbour on the side of the true quotient (the exact residual's sign says which).
fn emit_tiny_dividend(w: &mut Writer) {
    w.line(
        "// A nonzero a below the range (so below 2^-700) by b within 2^±300: q1, Markstein's quotient of a·2^600 (a",
    );
    w.line("// scaling that is exact; a normal quotient), is the correctly rounded a·2^600/b, and q1·2^-600 is a/b's");
    w.line("// correct rounding unless it is subnormal and rounds a second time: that goes wrong only where q1·2^-600");
    w.line(
        "// lies exactly halfway between two subnormals (d = ±2^-475 below) while the true quotient does not, whose",
    );
    w.line(
        "// side the residual gives. Out of line, like the IEEE quotient: in line in every step of an unrolled sweep",
    );
    w.line("// it slowed the steps that do not take it (measured).");
    w.open("__device__ __noinline__ double stencil_div_tiny(const double a, const double b, const double y)");
    w.line(format!("const double a1 = __dmul_rn(a, {UP});"));
    w.line("const double q0 = __dmul_rn(a1, y);");
    w.line("const double q1 = __fma_rn(__fma_rn(-b, q0, a1), y, q0);");
    w.line(format!("const double q = __dmul_rn(q1, {DOWN});"));
    w.line(format!("const double back = __dmul_rn(q, {UP}); // exact, and so is d = q1 − back"));
    w.line(format!("if (fabs(__dadd_rn(q1, -back)) != {HALFWAY}) return q;"));
    w.line("const double r = __fma_rn(-b, q1, a1); // exact: a1 − b·q1, so a1/b − q1 has the sign of r·b");
    w.line("const bool beyond = r != 0 && ((r > 0) == (b > 0)) == (q1 > 0), toward = r != 0 && !beyond;");
    w.line("const bool high = fabs(back) > fabs(q1); // the rounding took the neighbour farther from zero");
    w.line("const long long bits = __double_as_longlong(q);");
    w.line("return __longlong_as_double(beyond && !high ? bits + 1 : toward && high ? bits - 1 : bits);");
    w.close("");
}

/// The IEEE quotient, with a zero dividend's quotient (b neither zero nor NaN) set from the
/// signs, so that the division runs on a dividend of 1 and takes no slow path there.
fn emit_zero_guarded(w: &mut Writer, ty: &str, bits: &str, to_bits: &str, from_bits: &str, sign: &str) {
    w.line("const bool zero = a == 0 && b == b && b != 0;");
    w.line(format!("const {ty} q = (zero ? ({ty})1 : a) / b;"));
    w.line(format!("const {bits} s = ({to_bits}(a) ^ {to_bits}(b)) & {sign};"));
    w.line(format!("return zero ? {from_bits}(s) : q;"));
}

/// The sign bit's complement, and the magnitudes (bits without the sign) Markstein's double
/// quotient covers: divisors in [2^-300, 2^300) (the smallest, and how far above it), nonzero
/// dividends from the larger of 2^-960 and |b|·2^-1020 (|b|'s bits less 1020 in the exponent)
/// to 2^700.
const MAGNITUDE: &str = "0x7fffffffffffffffull";
const DIVISOR_LOWEST: &str = "0x2d30000000000000ull";
const DIVISOR_SPAN: &str = "0x257fffffffffffffull";
const DIVIDEND_FLOOR: &str = "0x03f0000000000000ull";
const QUOTIENT_SHIFT: &str = "0x3fc0000000000000ull";
const DIVIDEND_END: &str = "0x6bb0000000000000ull";
/// The tiny dividends' scaling up and back (2^600, 2^-600), and half a subnormal's spacing
/// scaled up (2^-1075 · 2^600).
const UP: &str = "0x1p600";
const DOWN: &str = "0x1p-600";
const HALFWAY: &str = "0x1p-475";

#[cfg(test)]
mod tests {
    use super::{DIVIDEND_END, DIVIDEND_FLOOR, DIVISOR_LOWEST, DIVISOR_SPAN, DOWN, HALFWAY, QUOTIENT_SHIFT, UP};

    fn constant(c: &str) -> u64 {
        u64::from_str_radix(c.trim_start_matches("0x").trim_end_matches(['u', 'l']), 16).unwrap()
    }

    /// The paths of the generated double-precision quotient: Markstein's range, the tiny
    /// dividends' path, and out of line.
    #[derive(PartialEq, Debug)]
    enum Path {
        Markstein,
        Tiny,
        OutOfLine,
    }

    /// Which path a / b takes, as the generated code decides.
    fn path(a: f64, b: f64) -> Path {
        let magnitude = !(1u64 << 63);
        let (ma, mb) = (a.to_bits() & magnitude, b.to_bits() & magnitude);
        let divisor = mb.wrapping_sub(constant(DIVISOR_LOWEST)) <= constant(DIVISOR_SPAN);
        let (shift, floor) = (constant(QUOTIENT_SHIFT), constant(DIVIDEND_FLOOR));
        let lowest = if mb > shift + floor { mb - shift } else { floor };
        if divisor && (ma.wrapping_sub(lowest) < constant(DIVIDEND_END) - lowest || ma == 0) {
            Path::Markstein
        } else if divisor && ma.wrapping_sub(1) < lowest - 1 {
            Path::Tiny
        } else {
            Path::OutOfLine
        }
    }

    /// The generated double-precision quotient, on the CPU: `None` where it divides out of line.
    fn double(a: f64, b: f64) -> Option<f64> {
        match path(a, b) {
            Path::Markstein => {
                let y = 1.0 / b;
                let q0 = a * y;
                let q = (-b).mul_add(q0, a).mul_add(y, q0);
                let magnitude = !(1u64 << 63);
                Some(f64::from_bits((q.to_bits() & magnitude) | (q0.to_bits() & !magnitude)))
            }
            Path::Tiny => Some(tiny(a, b).0),
            Path::OutOfLine => None,
        }
    }

    /// The unbiased exponent of a power of two's bits as the generator writes them.
    fn exponent(c: &str) -> i64 {
        (constant(c) >> 52) as i64 - 1023
    }

    /// A hexadecimal power of two as the generator writes it (`0x1pE`).
    fn power(c: &str) -> f64 {
        let e: i32 = c.trim_start_matches("0x1p").parse().unwrap();
        f64::from_bits(((e + 1023) as u64) << 52)
    }

    /// The generated quotient of a nonzero dividend below Markstein's range, on the CPU, and
    /// whether it corrected a second rounding.
    fn tiny(a: f64, b: f64) -> (f64, bool) {
        let y = 1.0 / b;
        let a1 = a * power(UP);
        let q0 = a1 * y;
        let q1 = (-b).mul_add(q0, a1).mul_add(y, q0);
        let q = q1 * power(DOWN);
        let back = q * power(UP);
        if (q1 - back).abs() != power(HALFWAY) {
            return (q, false);
        }
        let r = (-b).mul_add(q1, a1);
        let beyond = r != 0.0 && ((r > 0.0) == (b > 0.0)) == (q1 > 0.0);
        let toward = r != 0.0 && !beyond;
        let high = back.abs() > q1.abs();
        let bits = q.to_bits() as i64;
        let bits = if beyond && !high {
            bits + 1
        } else if toward && high {
            bits - 1
        } else {
            bits
        };
        (f64::from_bits(bits as u64), true)
    }

    #[test]
    fn tiny_dividends_divide_correctly_rounded_subnormal_quotients_included() {
        let mut next = numbers();
        let (mut halfway, mut cases) = (0, 0);
        for i in 0..2_000_000u64 {
            let sign = next() & 0x8000_0000_0000_0000;
            // Divisors across the range 2^±300, and near 1 (the quotients of the tail of a field).
            let e = if i % 2 == 0 { (next() % 600) as i64 - 300 } else { (next() % 8) as i64 - 4 };
            let b = f64::from_bits(sign ^ (next() & 0x800f_ffff_ffff_ffff) | (((e + 1023) as u64) << 52));
            let a = match i % 3 {
                // Any nonzero dividend below 2^-700, subnormals included.
                0 => f64::from_bits((next() % 0x1430_0000_0000_0000).max(1) | (next() & 0x8000_0000_0000_0000)),
                // A subnormal.
                1 => f64::from_bits((next() & 0x000f_ffff_ffff_ffff).max(1)),
                // Near a midpoint between two subnormals times b: the quotients that round twice.
                _ => ((2 * (next() % (1 << 52)) + 1) as f64 * b) * power("0x1p-1000") * power("0x1p-75"),
            };
            if !a.is_finite() || path(a, b) != Path::Tiny {
                continue;
            }
            cases += 1;
            let (q, corrected) = tiny(a, b);
            halfway += usize::from(corrected);
            assert_eq!(q.to_bits(), (a / b).to_bits(), "{a:e} / {b:e}");
        }
        assert!(cases > 1_000_000, "{cases} cases");
        assert!(halfway > 1_000, "only {halfway} quotients halfway between subnormals");
    }

    /// xorshift64: many cases, reproducible, no dependency.
    fn numbers() -> impl FnMut() -> u64 {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    #[test]
    fn double_precision_quotient_is_correctly_rounded_in_its_range() {
        let mut next = numbers();
        let (mut inside, mut cases) = (0, 0);
        for i in 0..1_500_000u64 {
            let with_exponent = |bits: u64, e: i64| (bits & 0x800f_ffff_ffff_ffff) | (((e + 1023) as u64) << 52);
            let (mut a, mut b) = (next(), next());
            let shift = (next() % 6) as i64 - 3;
            match i % 6 {
                // Around the range's ends: its floor (2^-960), 2^700, |b|·2^-1020.
                0 => a = with_exponent(a, exponent(DIVIDEND_FLOOR) + shift),
                1 => a = with_exponent(a, exponent(DIVIDEND_END) - 1 + shift),
                2 => {
                    // |b|·2^-1020 normal: b from 2^0 to 2^300.
                    let e = (next() % 300) as i64;
                    (a, b) = (with_exponent(a, e - (exponent(QUOTIENT_SHIFT) + 1023) + shift), with_exponent(b, e));
                }
                3 => (a, b) = (with_exponent(a, 699 + shift), with_exponent(b, -300 + shift)),
                4 => (a, b) = (a & 0x8000_0000_0000_0000, with_exponent(b, shift * 97)),
                _ => (a, b) = (with_exponent(a, shift * 200), with_exponent(b | 0x000f_ffff_ffff_ff00, shift * 90)),
            }
            let (a, b) = (f64::from_bits(a), f64::from_bits(b));
            cases += 1;
            if let Some(q) = double(a, b) {
                inside += 1;
                assert_eq!(q.to_bits(), (a / b).to_bits(), "{a:e} / {b:e}");
            }
        }
        // About half the cases lie at or past the range's ends, by design.
        assert!(inside > cases / 3, "{inside} of {cases} inside the range");
    }

    #[test]
    fn zero_dividends_keep_the_sign_of_the_quotient() {
        for (a, b) in [(0.0f64, 3.0f64), (-0.0, 3.0), (0.0, -3.0), (-0.0, -3.0)] {
            assert_eq!(double(a, b).unwrap().to_bits(), (a / b).to_bits());
        }
    }
}
