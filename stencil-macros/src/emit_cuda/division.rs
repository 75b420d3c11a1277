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
    w.line(
        "// it against IEEE division) as long as nothing underflows or overflows: here b within 2^±300 and a within",
    );
    w.line(
        "// 2^±700, or a zero a, whose quotient has q0's sign. Three dependent operations after the multiply (a loop",
    );
    w.line("// hoists y for a divisor that does not change); the other operands divide out of line.");
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
    w.line("const double q0 = __dmul_rn(a, y);");
    w.line(format!(
        "const unsigned long long magnitude = {MAGNITUDE}, ma = bits(a) & magnitude, mb = bits(b) & magnitude;"
    ));
    w.line("double q = __longlong_as_double((bits(__fma_rn(__fma_rn(-b, q0, a), y, q0)) & magnitude) | (bits(q0) & ~magnitude));");
    w.line(format!("const bool within = mb - {DIVISOR_LOWEST} <= {DIVISOR_SPAN} && (ma - {DIVIDEND_LOWEST} <= {DIVIDEND_SPAN} || ma == 0);"));
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

/// The sign bit's complement, and the magnitudes (bits without the sign) Markstein's double
/// quotient covers: divisors in [2^-300, 2^300), nonzero dividends in [2^-700, 2^700); the
/// smallest of each, and how far above it.
const MAGNITUDE: &str = "0x7fffffffffffffffull";
const DIVISOR_LOWEST: &str = "0x2d30000000000000ull";
const DIVISOR_SPAN: &str = "0x257fffffffffffffull";
const DIVIDEND_LOWEST: &str = "0x1430000000000000ull";
const DIVIDEND_SPAN: &str = "0x577fffffffffffffull";

#[cfg(test)]
mod tests {
    use super::{DIVIDEND_LOWEST, DIVIDEND_SPAN, DIVISOR_LOWEST, DIVISOR_SPAN};

    fn constant(c: &str) -> u64 {
        u64::from_str_radix(c.trim_start_matches("0x").trim_end_matches(['u', 'l']), 16).unwrap()
    }

    /// The generated double-precision quotient, on the CPU: `None` where it divides out of line.
    fn double(a: f64, b: f64) -> Option<f64> {
        let y = 1.0 / b;
        let q0 = a * y;
        let q = (-b).mul_add(q0, a).mul_add(y, q0);
        let magnitude = !(1u64 << 63);
        let (ma, mb) = (a.to_bits() & magnitude, b.to_bits() & magnitude);
        let within = |m: u64, lo: &str, span: &str| m.wrapping_sub(constant(lo)) <= constant(span);
        (within(mb, DIVISOR_LOWEST, DIVISOR_SPAN) && (within(ma, DIVIDEND_LOWEST, DIVIDEND_SPAN) || ma == 0))
            .then(|| f64::from_bits((q.to_bits() & magnitude) | (q0.to_bits() & !magnitude)))
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
                0 => a = with_exponent(a, -700 + shift),
                1 => a = with_exponent(a, 699 + shift),
                2 => (a, b) = (with_exponent(a, -700 + shift), with_exponent(b, 299 + shift)),
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
