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

/// Double precision: the quotient in line (the dividend scaled by 2^380, the approximation
/// scaled back onto the subnormals' grid, Markstein's correction rounded once), the operands
/// out of range and the exact midpoints' divisors out of line.
fn emit_double_div(w: &mut Writer) {
    w.line("// Double precision: Markstein's quotient. With y the correctly rounded 1/b and q0 = a·y (within about an");
    w.line(
        "// ulp of a/b), the residual a − b·q0 is exact (one fused multiply–add), and q0 plus the residual times y,",
    );
    w.line(
        "// rounded once, is the correctly rounded a/b (Markstein's correction step; the generator's unit tests check",
    );
    w.line(
        "// it against IEEE division). Here q0 is taken of a·2^380 (exact scaling: b within [2^-300, 2^52), a below",
    );
    w.line("// 2^320) and scaled back to g, which rounds it onto the subnormals' grid where a/b is below 2^-1022; the");
    w.line(
        "// residual (a − b·g)·2^380 is still exact, and g plus the residual times y·2^-380 is rounded once, onto the",
    );
    w.line("// grid. That is a/b's correct rounding there too: the sum lies within |a/b − g|·|1 − b·y| of a/b, nearer");
    w.line(
        "// than any midpoint between two subnormals that a/b does not lie on, and a/b lies exactly on one only for",
    );
    w.line("// b an even integer (not a power of two), whose quotients below 2^-1020 divide out of line. So every");
    w.line("// dividend down to the smallest subnormal — the tail of a decaying field, met in many steps of a sweep —");
    w.line(
        "// takes one path, with no branch that waits for the quotient: four dependent operations (a loop hoists the",
    );
    w.line("// divisor's terms when it does not change). A zero a's quotient takes q0's sign.");
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
    w.open("__device__ __forceinline__ double stencil_div(const double a, const double b)");
    w.line("const auto bits = [](const double x) { return (unsigned long long)__double_as_longlong(x); };");
    w.line("const double y = __drcp_rn(b);");
    w.line(format!("const double q0 = __dmul_rn(a, __dmul_rn(y, {UP})), g = __dmul_rn(q0, {DOWN});"));
    w.line(format!(
        "const double q1 = __fma_rn(__fma_rn(-__dmul_rn(b, {UP}), g, __dmul_rn(a, {UP})), __dmul_rn(y, {DOWN}), g);"
    ));
    w.line(format!("const unsigned long long magnitude = {MAGNITUDE}, mb = bits(b) & magnitude;"));
    w.line("double q = __longlong_as_double((bits(q1) & magnitude) | (bits(q0) & ~magnitude));");
    w.line(
        "// b an even integer, not a power of two: its lowest set bit (the fraction's, or the implicit one) 2 or more.",
    );
    w.line(format!("const unsigned long long fraction = mb & {FRACTION};"));
    w.line(format!(
        "const bool even = fraction != 0 && (int)(mb >> 52) + __ffsll((long long)(fraction | {IMPLICIT})) >= {EVEN_FROM};"
    ));
    w.line("// The range on the magnitudes' high words (the bounds' low words are zero): per divisor (hoisted where b");
    w.line("// does not change) the dividends' lowest high word — past b·2^-1020's for an even b — and their span,");
    w.line("// none for b out of range; per division one subtraction and one compare.");
    w.line("const unsigned int ha = (unsigned int)__double2hiint(a) & 0x7fffffffu, hb = (unsigned int)(mb >> 32);");
    w.line(format!("const unsigned int lowest = even ? hb - {TIES_BELOW} + 1u : 0u;"));
    w.line(format!("const unsigned int span = hb - {DIVISOR_LOWEST} < {DIVISOR_SPAN} ? {DIVIDEND_END} - lowest : 0u;"));
    w.line("const bool within = ha - lowest < span;");
    w.line("// Computed before the branch, so the common path does not wait for the range check.");
    w.line("asm volatile(\"\" : \"+d\"(q));");
    w.line("return within ? q : stencil_div_rare(a, b);");
    w.close("");
    w.blank();
}

/// The IEEE quotient, with a zero dividend's quotient (b neither zero nor NaN) set from the
/// signs, so that the division runs on a dividend of 1 and takes no slow path there.
fn emit_zero_guarded(w: &mut Writer, ty: &str, bits: &str, to_bits: &str, from_bits: &str, sign: &str) {
    w.line("const bool zero = a == 0 && b == b && b != 0;");
    w.line(format!("const {ty} q = (zero ? ({ty})1 : a) / b;"));
    w.line(format!("const {bits} s = ({to_bits}(a) ^ {to_bits}(b)) & {sign};"));
    w.line(format!("return zero ? {from_bits}(s) : q;"));
}

/// The sign bit's complement; on the magnitudes' high words, the divisors the quotient in line
/// covers, [2^-300, 2^52) (the smallest's high word, and how many above it), and the dividends'
/// end, 2^320.
const MAGNITUDE: &str = "0x7fffffffffffffffull";
const DIVISOR_LOWEST: &str = "0x2d300000u";
const DIVISOR_SPAN: &str = "0x16000000u";
const DIVIDEND_END: &str = "0x53f00000u";
/// The fraction's bits and the implicit one's; b is an even integer where its biased exponent
/// plus the 1-based position of its significand's lowest set bit is at least 1077 (that bit is
/// worth 2^(exponent + position − 1076)); its quotients may lie exactly halfway between two
/// subnormals where the dividend is below b·2^-1020 (1020 less in the exponent: the high word
/// less `TIES_BELOW`).
const FRACTION: &str = "0x000fffffffffffffull";
const IMPLICIT: &str = "0x0010000000000000ull";
const EVEN_FROM: &str = "1077";
const TIES_BELOW: &str = "0x3fc00000u";
/// The dividend's scaling up and the quotient's back (2^380, 2^-380).
const UP: &str = "0x1p380";
const DOWN: &str = "0x1p-380";

#[cfg(test)]
mod tests {
    use super::{DIVIDEND_END, DIVISOR_LOWEST, DIVISOR_SPAN, DOWN, EVEN_FROM, FRACTION, IMPLICIT, TIES_BELOW, UP};

    fn constant(c: &str) -> u64 {
        u64::from_str_radix(c.trim_start_matches("0x").trim_end_matches(['u', 'l']), 16).unwrap()
    }

    /// A power of two, subnormal ones included.
    fn two_to(e: i32) -> f64 {
        if e < -1022 { f64::from_bits(1 << (e + 1074)) } else { f64::from_bits(((e + 1023) as u64) << 52) }
    }

    /// A hexadecimal power of two as the generator writes it (`0x1pE`).
    fn power(c: &str) -> f64 {
        two_to(c.trim_start_matches("0x1p").parse().unwrap())
    }

    const MAGNITUDE: u64 = !(1 << 63);

    /// Whether b is an even integer, not a power of two, as the generated code decides.
    fn even(b: f64) -> bool {
        let mb = b.to_bits() & MAGNITUDE;
        let fraction = mb & constant(FRACTION);
        let position = (fraction | constant(IMPLICIT)).trailing_zeros() as i64 + 1;
        fraction != 0 && (mb >> 52) as i64 + position >= EVEN_FROM.parse::<i64>().unwrap()
    }

    /// Whether the generated double-precision quotient divides a / b in line, as it decides.
    fn in_line(a: f64, b: f64) -> bool {
        let high = |x: f64| ((x.to_bits() & MAGNITUDE) >> 32) as u32;
        let word = |c: &str| constant(c) as u32;
        let (ha, hb) = (high(a), high(b));
        let lowest = if even(b) { hb - word(TIES_BELOW) + 1 } else { 0 };
        let span =
            if hb.wrapping_sub(word(DIVISOR_LOWEST)) < word(DIVISOR_SPAN) { word(DIVIDEND_END) - lowest } else { 0 };
        ha.wrapping_sub(lowest) < span
    }

    /// The range the generated code means: b within [2^-300, 2^52), a below 2^320 and, for an
    /// even b, at or above b·2^-1020.
    fn documented_range(a: f64, b: f64) -> bool {
        let (a, b) = (a.abs(), b.abs());
        (two_to(-300)..two_to(52)).contains(&b) && a < two_to(320) && !(even(b) && a < b * two_to(-1020))
    }

    /// The generated in-line quotient, on the CPU.
    fn quotient(a: f64, b: f64) -> f64 {
        let y = 1.0 / b;
        let q0 = a * (y * power(UP));
        let g = q0 * power(DOWN);
        let q1 = (-(b * power(UP))).mul_add(g, a * power(UP)).mul_add(y * power(DOWN), g);
        f64::from_bits((q1.to_bits() & MAGNITUDE) | (q0.to_bits() & !MAGNITUDE))
    }

    /// The generated double-precision quotient, on the CPU: `None` where it divides out of line.
    fn double(a: f64, b: f64) -> Option<f64> {
        in_line(a, b).then(|| quotient(a, b))
    }

    /// The quotient of a·2^380 rounded to double precision and scaled back: a second rounding
    /// wherever a/b is subnormal, which the generated quotient must not make.
    fn rounded_twice(a: f64, b: f64) -> f64 {
        let (y, a1) = (1.0 / b, a * power(UP));
        let q0 = a1 * y;
        (-b).mul_add(q0, a1).mul_add(y, q0) * power(DOWN)
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

    /// A divisor of sign and exponent `e` whose significand is random, all ones at the top, a
    /// few bits, or ending in a run of zeros (a small odd part: the quotients nearest to a
    /// midpoint between subnormals).
    fn divisor(next: &mut impl FnMut() -> u64, i: u64, e: i64) -> f64 {
        let mut fraction = next() & constant(FRACTION);
        match i % 4 {
            0 => {}
            1 => fraction |= 0x000f_ffff_ffff_f000,
            2 => fraction &= 0x000f_f000_0000_0000,
            _ => fraction &= !((1u64 << (next() % 53)) - 1),
        }
        f64::from_bits((next() & (1 << 63)) | fraction | (((e + 1023).clamp(1, 2046) as u64) << 52))
    }

    #[test]
    fn tiny_dividends_divide_correctly_rounded_subnormal_quotients_included() {
        let mut next = numbers();
        let (mut cases, mut twice) = (0, 0);
        for i in 0..2_000_000u64 {
            // Divisors across the range, near 1 (the quotients of the tail of a field), and integers.
            let e = match i % 3 {
                0 => (next() % 352) as i64 - 300,
                1 => (next() % 8) as i64 - 4,
                _ => (next() % 52) as i64,
            };
            let b = divisor(&mut next, i / 3, e);
            let a = match i % 5 {
                // Any dividend below 2^-700, subnormals included.
                0 => f64::from_bits((next() % 0x1430_0000_0000_0000) | (next() & (1 << 63))),
                // A subnormal.
                1 => f64::from_bits(next() & 0x800f_ffff_ffff_ffff),
                // Near a midpoint between two subnormals times b: the quotients that round twice.
                2 => ((2 * (next() % (1 << 52)) + 1) as f64 * b) * two_to(-1000) * two_to(-75),
                3 => ((2 * (next() % (1 << 12)) + 1) as f64 * b) * two_to(-1000) * two_to(-75),
                // Quotients around 2^-1022, where the subnormals' grid ends.
                _ => {
                    b * two_to(-1024 + (next() % 5) as i32 + 100)
                        * two_to(-100)
                        * (1.0 + (next() % 4096) as f64 / 4096.0)
                }
            };
            if !a.is_finite() || !in_line(a, b) {
                continue;
            }
            cases += 1;
            assert_eq!(double(a, b).unwrap().to_bits(), (a / b).to_bits(), "{a:e} / {b:e}");
            twice += usize::from(rounded_twice(a, b).to_bits() != (a / b).to_bits());
        }
        assert!(cases > 1_000_000, "{cases} cases");
        assert!(twice > 10_000, "only {twice} quotients a second rounding would get wrong");
    }

    #[test]
    fn exact_midpoints_between_subnormals_divide_out_of_line() {
        let mut next = numbers();
        let mut wrong_in_line = 0;
        for _ in 0..200_000 {
            // b = s·2^j, an even integer that is not a power of two (s odd, above 1, j ≥ 1), and
            // a = b·m·2^-1075 (m odd), exactly: a / b lies exactly halfway between two subnormals.
            let (s, j, m) = ((next() % (1 << 20)) | 3, 1 + (next() % 30) as i32, (next() % (1 << 30)) | 1);
            let b = s as f64 * two_to(j);
            let a = (s * m) as f64 * two_to(j - 1075 + 100) * two_to(-100);
            assert_eq!(a * two_to(600) * two_to(475 - j), (s * m) as f64, "a is built exactly");
            assert!(!in_line(a, b), "{a:e} / {b:e} in line");
            wrong_in_line += usize::from(quotient(a, b).to_bits() != (a / b).to_bits());
        }
        assert!(wrong_in_line > 10_000, "only {wrong_in_line} the in-line quotient would get wrong");
    }

    #[test]
    fn double_precision_quotient_is_correctly_rounded_in_its_range() {
        let mut next = numbers();
        let (mut inside, mut cases) = (0, 0);
        let end = (constant(DIVIDEND_END) >> 20) as i64 - 1023;
        for i in 0..1_500_000u64 {
            let with_exponent = |bits: u64, e: i64| (bits & 0x800f_ffff_ffff_ffff) | (((e + 1023) as u64) << 52);
            let (mut a, mut b) = (next(), next());
            let shift = (next() % 6) as i64 - 3;
            match i % 6 {
                // Around the ends of the dividends' range (2^320) and the divisors' (2^-300, 2^52).
                0 => a = with_exponent(a, end + shift),
                1 => (a, b) = (with_exponent(a, end - 1 + shift), with_exponent(b, -300 + shift)),
                2 => (a, b) = (with_exponent(a, (next() % 1300) as i64 - 1000), with_exponent(b, 51 + shift)),
                3 => (a, b) = (with_exponent(a, (next() % 1300) as i64 - 1000), with_exponent(b, -300 + shift)),
                4 => (a, b) = (a & (1 << 63), with_exponent(b, shift * 97)),
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

    #[test]
    fn the_range_on_high_words_is_the_documented_one() {
        let mut next = numbers();
        let (mut differ, mut evens) = (0, 0);
        for i in 0..1_000_000u64 {
            let b = match i % 3 {
                // Even integers (not powers of two) and others, at and past the divisors' ends.
                0 => ((next() % (1 << 40)) | 3) as f64 * two_to(1 + (next() % 20) as i32),
                1 => f64::from_bits(next() & 0x7fff_ffff_ffff_ffff),
                _ => f64::from_bits((next() & 0x800f_ffff_ffff_ffff) | ((700 + next() % 400) << 52)),
            };
            // Dividends around b·2^-1020 and 2^320, and anywhere.
            let a = match i % 4 {
                0 => b * two_to(-1020) * (1.0 + ((next() % 8192) as f64 - 4096.0) / 1e6),
                1 => two_to(320) * (1.0 + ((next() % 8192) as f64 - 4096.0) / 1e6),
                2 => f64::from_bits(next()),
                _ => f64::from_bits(next() & 0x800f_ffff_ffff_ffff),
            };
            if !a.is_finite() || !b.is_finite() {
                continue;
            }
            evens += usize::from(even(b));
            if in_line(a, b) != documented_range(a, b) {
                // Only conservative, and only within the high word of b·2^-1020 of an even b.
                assert!(!in_line(a, b) && even(b), "{a:e} / {b:e}");
                assert_eq!(a.abs().to_bits() >> 32, (b.abs() * two_to(-1020)).to_bits() >> 32, "{a:e} / {b:e}");
                differ += 1;
            }
        }
        assert!(evens > 300_000, "{evens} even divisors");
        assert!(differ < 1_000, "{differ} pairs differ");
    }
}
