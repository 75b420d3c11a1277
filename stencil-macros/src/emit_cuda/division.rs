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
    emit_double_div(w);
}

/// Double precision: Markstein's quotient of the dividend scaled by 2^380, scaled back; the
/// quotients that may lie halfway between two subnormals, and the operands out of range,
/// out of line.
fn emit_double_div(w: &mut Writer) {
    w.line("// Double precision: Markstein's quotient. With y the correctly rounded 1/b and q0 = a·y (within about an");
    w.line(
        "// ulp of a/b), the residual a − b·q0 is exact (one fused multiply–add), and q0 plus the residual times y,",
    );
    w.line(
        "// rounded once, is the correctly rounded a/b (Markstein's correction step; the generator's unit tests check",
    );
    w.line("// it against IEEE division) as long as nothing underflows or overflows. So it runs on a·2^380 (an exact");
    w.line(
        "// scaling) for b within 2^±300 and a below 2^320: the scaled dividend then lies from 2^-694 to 2^700, its",
    );
    w.line("// quotient is normal and the residual's bits stay above the subnormals', for every dividend down to the");
    w.line("// smallest subnormal — the tail of a decaying field, met in many steps of a sweep, takes the same path.");
    w.line(
        "// Scaling the quotient back by 2^-380 is exact unless a/b is subnormal; then it rounds a second time, which",
    );
    w.line(
        "// goes wrong only where the scaled quotient lies exactly halfway between two subnormals. Whether it might",
    );
    w.line("// is read from q0 (within two of its ulps of one), so that the branch does not wait for the quotient; the few");
    w.line(
        "// such quotients, and the operands out of range, divide out of line. Three dependent operations after the",
    );
    w.line(
        "// multiply and one to scale back (a loop hoists y for a divisor that does not change); a zero a's quotient",
    );
    w.line("// takes q0's sign.");
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
    emit_midpoint(w);
    w.open("__device__ __forceinline__ double stencil_div(const double a, const double b)");
    w.line("const auto bits = [](const double x) { return (unsigned long long)__double_as_longlong(x); };");
    w.line("const double y = __drcp_rn(b);");
    w.line(format!("const double q0 = __dmul_rn(a, __dmul_rn(y, {UP})), a1 = __dmul_rn(a, {UP});"));
    w.line(format!("const unsigned long long magnitude = {MAGNITUDE};"));
    w.line(format!("const double q1 = __dmul_rn(__fma_rn(__fma_rn(-b, q0, a1), y, q0), {DOWN});"));
    w.line("double q = __longlong_as_double((bits(q1) & magnitude) | (bits(q0) & ~magnitude));");
    w.line(format!(
        "const bool within = (bits(b) & magnitude) - {DIVISOR_LOWEST} <= {DIVISOR_SPAN} && (bits(a) & magnitude) < {DIVIDEND_END};"
    ));
    w.line(format!(
        "const double off = fabs(__fma_rn(-{UP}, __dmul_rn(q0, {DOWN}), q0)); // q0's distance to a subnormal, scaled"
    ));
    w.line(format!("const bool midpoint = off >= {HALFWAY} - {WINDOW} * fabs(q0) && fabs(q0) < {SUBNORMAL_EDGE};"));
    w.line("// Computed before the branch, so the common path does not wait for the checks.");
    w.line("asm volatile(\"\" : \"+d\"(q));");
    w.line("return within && !midpoint ? q : within ? stencil_div_midpoint(a, b, y) : stencil_div_rare(a, b);");
    w.close("");
    w.blank();
}

/// Double precision's quotient whose scaled form may lie halfway between two subnormals:
/// Markstein's scaled quotient, scaled back, and where that rounds a quotient exactly halfway,
/// the neighbour on the side of the true quotient (the exact residual's sign says which).
fn emit_midpoint(w: &mut Writer) {
    w.line("// A quotient a/b (b within 2^±300, a below 2^320) whose scaled form q1 may lie halfway between two");
    w.line(
        "// subnormals: q1·2^-380 is a/b's correct rounding unless q1 lies exactly halfway (d = ±2^-695 below) while",
    );
    w.line("// the true quotient does not, whose side the residual gives.");
    w.open("__device__ __noinline__ double stencil_div_midpoint(const double a, const double b, const double y)");
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

/// The sign bit's complement; the divisors Markstein's quotient covers, [2^-300, 2^300) (the
/// smallest magnitude's bits, and how far above it); the dividends' end, 2^320.
const MAGNITUDE: &str = "0x7fffffffffffffffull";
const DIVISOR_LOWEST: &str = "0x2d30000000000000ull";
const DIVISOR_SPAN: &str = "0x257fffffffffffffull";
const DIVIDEND_END: &str = "0x53f0000000000000ull";
/// The dividend's scaling up and the quotient's back (2^380, 2^-380); half a subnormal's
/// spacing scaled up (2^-1075 · 2^380); 2^-51·|q0|, at least two of q0's ulps, the distance
/// from q0 within which the corrected quotient lies (1.25 ulps at most where it is two ulps,
/// 2.5 where it is four); and the scaled quotients below which the quotient may be subnormal
/// (2^-1022 · 2^380, with a binade's margin).
const UP: &str = "0x1p380";
const DOWN: &str = "0x1p-380";
const HALFWAY: &str = "0x1p-695";
const WINDOW: &str = "0x1p-51";
const SUBNORMAL_EDGE: &str = "0x1p-641";

#[cfg(test)]
mod tests {
    use super::{DIVIDEND_END, DIVISOR_LOWEST, DIVISOR_SPAN, DOWN, HALFWAY, SUBNORMAL_EDGE, UP, WINDOW};

    fn constant(c: &str) -> u64 {
        u64::from_str_radix(c.trim_start_matches("0x").trim_end_matches(['u', 'l']), 16).unwrap()
    }

    /// A hexadecimal power of two as the generator writes it (`0x1pE`).
    fn power(c: &str) -> f64 {
        let e: i32 = c.trim_start_matches("0x1p").parse().unwrap();
        f64::from_bits(((e + 1023) as u64) << 52)
    }

    /// The unbiased exponent of a power of two's bits as the generator writes them.
    fn exponent(c: &str) -> i64 {
        (constant(c) >> 52) as i64 - 1023
    }

    /// The paths of the generated double-precision quotient: Markstein's scaled quotient in
    /// line, the quotients that may lie halfway between two subnormals, and out of line.
    #[derive(PartialEq, Debug)]
    enum Path {
        Markstein,
        Midpoint,
        OutOfLine,
    }

    /// Which path a / b takes, as the generated code decides.
    fn path(a: f64, b: f64) -> Path {
        let magnitude = !(1u64 << 63);
        let divisor = (b.to_bits() & magnitude).wrapping_sub(constant(DIVISOR_LOWEST)) <= constant(DIVISOR_SPAN);
        if !(divisor && a.to_bits() & magnitude < constant(DIVIDEND_END)) {
            return Path::OutOfLine;
        }
        let q0 = a * ((1.0 / b) * power(UP));
        let off = (-power(UP)).mul_add(q0 * power(DOWN), q0).abs();
        if off >= power(HALFWAY) - power(WINDOW) * q0.abs() && q0.abs() < power(SUBNORMAL_EDGE) {
            Path::Midpoint
        } else {
            Path::Markstein
        }
    }

    /// The generated in-line quotient, on the CPU: Markstein's quotient of a·2^380, scaled back.
    fn markstein(a: f64, b: f64) -> f64 {
        let y = 1.0 / b;
        let (q0, a1) = (a * (y * power(UP)), a * power(UP));
        let q1 = (-b).mul_add(q0, a1).mul_add(y, q0) * power(DOWN);
        let magnitude = !(1u64 << 63);
        f64::from_bits((q1.to_bits() & magnitude) | (q0.to_bits() & !magnitude))
    }

    /// The generated quotient that may lie halfway between two subnormals, on the CPU, and
    /// whether it corrected a second rounding.
    fn midpoint(a: f64, b: f64) -> (f64, bool) {
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

    /// The generated double-precision quotient, on the CPU: `None` where it divides out of line.
    fn double(a: f64, b: f64) -> Option<f64> {
        match path(a, b) {
            Path::Markstein => Some(markstein(a, b)),
            Path::Midpoint => Some(midpoint(a, b).0),
            Path::OutOfLine => None,
        }
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
    fn tiny_dividends_divide_correctly_rounded_subnormal_quotients_included() {
        let mut next = numbers();
        let (mut cases, mut halfway, mut rounded_twice) = (0, 0, 0);
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
            if !a.is_finite() || a == 0.0 || path(a, b) == Path::OutOfLine {
                continue;
            }
            cases += 1;
            let q = double(a, b).unwrap();
            assert_eq!(q.to_bits(), (a / b).to_bits(), "{a:e} / {b:e}");
            // The in-line quotient rounds twice exactly where the midpoint path corrects it.
            let (_, corrected) = midpoint(a, b);
            halfway += usize::from(corrected);
            rounded_twice += usize::from(markstein(a, b).to_bits() != q.to_bits());
        }
        assert!(cases > 1_000_000, "{cases} cases");
        assert!(halfway > 1_000, "only {halfway} quotients halfway between subnormals");
        assert!(rounded_twice > 1_000, "only {rounded_twice} quotients the in-line path would round wrongly");
    }

    #[test]
    fn few_quotients_leave_the_in_line_path() {
        let mut next = numbers();
        let (mut subnormal, mut midpoint) = (0, 0);
        for _ in 0..1_000_000 {
            let b = f64::from_bits((next() & 0x000f_ffff_ffff_ffff) | (1023 << 52));
            // Quotients spread evenly over the binades from 2^-1074 to 2^-900.
            let e = (next() % 174) as i32 - 1074;
            let a =
                f64::from_bits((next() & 0x000f_ffff_ffff_ffff) | (1023 << 52)) * 2f64.powi(e + 200) * 2f64.powi(-200);
            let path = path(a * b, b);
            assert_ne!(path, Path::OutOfLine);
            if a < f64::MIN_POSITIVE * 0.25 {
                subnormal += 1;
                midpoint += usize::from(path == Path::Midpoint);
            } else if a > f64::MIN_POSITIVE * 4.0 {
                assert_eq!(path, Path::Markstein, "{a:e}");
            }
        }
        // Two binades' worth of the 50 below 2^-1024, and a fraction of the rest.
        assert!(midpoint * 10 < subnormal, "{midpoint} of {subnormal} subnormal quotients out of line");
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
                // Around the ends of the dividends' range (2^320) and the divisors' (2^±300).
                0 => a = with_exponent(a, exponent(DIVIDEND_END) + shift),
                1 => (a, b) = (with_exponent(a, exponent(DIVIDEND_END) - 1 + shift), with_exponent(b, -300 + shift)),
                2 => (a, b) = (with_exponent(a, (next() % 1300) as i64 - 1000), with_exponent(b, 299 + shift)),
                3 => (a, b) = (with_exponent(a, (next() % 1300) as i64 - 1000), with_exponent(b, -300 + shift)),
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
            assert_eq!(path(a, b), Path::Markstein);
            assert_eq!(double(a, b).unwrap().to_bits(), (a / b).to_bits());
        }
    }
}
