//! Fast mode's form of a lane's update. Where the point function is affine in the new values
//! a step reads (the lane's own last outputs and the line before's), the lane kernel computes
//! it as its value with those reads at zero — from old values only, so off the chain from one
//! step to the next — plus each new read times its slope, the point function's derivative in
//! that read, emitted here from the IR. Equal in real arithmetic, it rounds differently: fast
//! mode only.

use super::{expr, local};
use crate::ir::{self, BinOp, ExprKind, Method, Stencil, Ty, UnOp};
use crate::writer::Writer;

/// The derivative of an expression in one read: zero, or a C expression.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Slope {
    Zero,
    Of(String),
}

impl Slope {
    /// The derivative `f` makes of this one (zero stays zero).
    fn map(self, f: impl FnOnce(String) -> String) -> Slope {
        match self {
            Slope::Zero => Slope::Zero,
            Slope::Of(d) => Slope::Of(f(d)),
        }
    }
}

/// The derivative of the read itself.
const ONE: &str = "((real)1.0)";

/// `a · b`, where one of them is a derivative: a factor of one left out (exact either way).
fn product(a: &str, b: &str) -> String {
    match (a, b) {
        (ONE, x) | (x, ONE) => x.to_string(),
        _ => format!("({a} * {b})"),
    }
}

/// Which expressions depend on some reads, the `let`s' recorded as they are met.
struct Dependence {
    slots: Vec<usize>,
    /// By local index.
    locals: Vec<bool>,
}

impl Dependence {
    fn new(s: &Stencil, slots: Vec<usize>) -> Self {
        Self { slots, locals: vec![false; s.locals.len()] }
    }

    fn of(&mut self, e: &ir::Expr) -> bool {
        match &e.kind {
            ExprKind::Real(_) | ExprKind::Int(_) | ExprKind::Bool(_) | ExprKind::Scalar(_) => false,
            ExprKind::Read(k) => self.slots.contains(k),
            ExprKind::Local(i) => self.locals[*i],
            ExprKind::Unary(_, x) | ExprKind::IntToReal(x) => self.of(x),
            ExprKind::Binary(_, l, r) => self.of(l) | self.of(r),
            ExprKind::If(c, t, f) => self.of(c) | self.block(t) | self.block(f),
            ExprKind::Block(b) => self.block(b),
            ExprKind::Method(_, x, args) => args.iter().fold(self.of(x), |any, a| self.of(a) | any),
        }
    }

    fn block(&mut self, b: &ir::Block) -> bool {
        for (i, e) in &b.lets {
            self.locals[*i] = self.of(e);
        }
        self.of(&b.value)
    }
}

/// The derivatives of a stencil's expressions in read `slot`, one of the reads `new`: a
/// product is affine only where one factor depends on none of them (each read's slope alone
/// would take `x · y` for affine in x and in y).
struct Derivative<'a> {
    s: &'a Stencil,
    slot: usize,
    /// By local index: the derivatives of the `let`s seen so far (`None` where a `let` is not
    /// affine in the read; a named derivative where it is one).
    locals: Vec<Option<Slope>>,
    /// Dependence on the new reads, and on any read.
    new: Dependence,
    any: Dependence,
    /// Whether a derivative so far uses a value that depends on a read (so differs from
    /// point to point).
    varying: bool,
}

impl<'a> Derivative<'a> {
    fn new(s: &'a Stencil, slot: usize, new: &[usize]) -> Self {
        Self {
            s,
            slot,
            locals: vec![None; s.locals.len()],
            new: Dependence::new(s, new.to_vec()),
            any: Dependence::new(s, (0..s.reads.len()).collect()),
            varying: false,
        }
    }

    /// Records `let` local `i = e` for the dependences.
    fn bind(&mut self, i: usize, e: &ir::Expr) {
        self.new.locals[i] = self.new.of(e);
        self.any.locals[i] = self.any.of(e);
    }

    /// `e`, a value a derivative uses, in C; it may vary from point to point.
    fn used(&mut self, e: &ir::Expr) -> String {
        self.varying |= self.any.of(e);
        expr(self.s, e)
    }

    /// `d · factor` (in that order where `derivative_first`), or `None` where the factor
    /// depends on a new read.
    fn times(&mut self, d: String, factor: &ir::Expr, derivative_first: bool) -> Option<Slope> {
        if self.new.of(factor) {
            return None;
        }
        let factor = self.used(factor);
        Some(Slope::Of(if derivative_first { product(&d, &factor) } else { product(&factor, &d) }))
    }

    /// `e`'s derivative, or `None` where `e` is not affine in the read.
    fn of(&mut self, e: &ir::Expr) -> Option<Slope> {
        match &e.kind {
            ExprKind::Real(_) | ExprKind::Int(_) | ExprKind::Bool(_) | ExprKind::Scalar(_) => Some(Slope::Zero),
            ExprKind::Read(k) if *k == self.slot => Some(Slope::Of(ONE.into())),
            ExprKind::Read(_) => Some(Slope::Zero),
            ExprKind::Local(i) => self.locals[*i].clone(),
            ExprKind::Unary(UnOp::Neg, x) if e.ty == Ty::Real => Some(self.of(x)?.map(|d| format!("(-{d})"))),
            ExprKind::Binary(op, l, r) if e.ty == Ty::Real => {
                let (dl, dr) = (self.of(l)?, self.of(r)?);
                match (op, dl, dr) {
                    (_, Slope::Zero, Slope::Zero) => Some(Slope::Zero),
                    (BinOp::Add | BinOp::Sub, d, Slope::Zero) => Some(d),
                    (BinOp::Add, Slope::Zero, d) => Some(d),
                    (BinOp::Sub, Slope::Zero, Slope::Of(d)) => Some(Slope::Of(format!("(-{d})"))),
                    (BinOp::Add | BinOp::Sub, Slope::Of(a), Slope::Of(b)) => {
                        Some(Slope::Of(format!("({a} {} {b})", op.symbol())))
                    }
                    (BinOp::Mul, Slope::Of(a), Slope::Zero) => self.times(a, r, true),
                    (BinOp::Mul, Slope::Zero, Slope::Of(b)) => self.times(b, l, false),
                    (BinOp::Div, Slope::Of(a), Slope::Zero) => Some(Slope::Of(match r.kind {
                        ExprKind::Real(c) => format!("STENCIL_DIV_CONST({a}, {c:?})"),
                        _ => format!("stencil_div({a}, {})", self.used(r)),
                    })),
                    _ => None,
                }
            }
            ExprKind::If(c, t, f) => {
                let (dc, dt, df) = (self.of(c)?, self.block(t)?, self.block(f)?);
                match (dc, dt, df) {
                    (Slope::Zero, Slope::Zero, Slope::Zero) => Some(Slope::Zero),
                    (Slope::Zero, dt, df) if t.lets.is_empty() && f.lets.is_empty() => {
                        let zero_or = |d: Slope| match d {
                            Slope::Zero => "((real)0.0)".to_string(),
                            Slope::Of(d) => d,
                        };
                        Some(Slope::Of(format!("({} ? {} : {})", self.used(c), zero_or(dt), zero_or(df))))
                    }
                    _ => None,
                }
            }
            ExprKind::Block(b) => match self.block(b)? {
                d if b.lets.is_empty() => Some(d),
                Slope::Zero => Some(Slope::Zero),
                Slope::Of(_) => None,
            },
            ExprKind::Method(Method::MulAdd, x, args) => {
                let (dx, da, db) = (self.of(x)?, self.of(&args[0])?, self.of(&args[1])?);
                let product = match (dx, da) {
                    (Slope::Zero, Slope::Zero) => Slope::Zero,
                    (Slope::Of(d), Slope::Zero) => self.times(d, &args[0], true)?,
                    (Slope::Zero, Slope::Of(d)) => self.times(d, x, false)?,
                    _ => return None,
                };
                Some(match (product, db) {
                    (p, Slope::Zero) => p,
                    (Slope::Zero, d) => d,
                    (Slope::Of(p), Slope::Of(d)) => Slope::Of(format!("({p} + {d})")),
                })
            }
            // Everything else is affine only where it does not depend on the read at all.
            ExprKind::Unary(_, x) | ExprKind::IntToReal(x) => self.constant([&**x]),
            ExprKind::Binary(_, l, r) => self.constant([&**l, &**r]),
            ExprKind::Method(_, x, args) => self.constant(std::iter::once(&**x).chain(args)),
        }
    }

    /// Zero where none of `exprs` depends on the read, else `None`.
    fn constant<'e>(&mut self, exprs: impl IntoIterator<Item = &'e ir::Expr>) -> Option<Slope> {
        for e in exprs {
            if self.of(e)? != Slope::Zero {
                return None;
            }
        }
        Some(Slope::Zero)
    }

    /// A block's derivative; its `let`s must not depend on the read (they are not in scope
    /// where the derivative is used).
    fn block(&mut self, b: &ir::Block) -> Option<Slope> {
        for (i, e) in &b.lets {
            self.bind(*i, e);
            self.locals[*i] = match self.of(e)? {
                Slope::Zero => Some(Slope::Zero),
                Slope::Of(_) => return None,
            };
        }
        self.of(&b.value)
    }
}

/// The C function name of the slope of `s`'s point function in read `slot`.
pub(super) fn slope_name(s: &Stencil, slot: usize) -> String {
    format!("{}_slope{slot}", s.name)
}

/// The slope functions of a point function affine in some of its reads: for each read, its
/// slot, the function's body and whether it varies from point to point (depends on a read;
/// else it is the same everywhere, for any reads).
pub(super) struct Slopes {
    bodies: Vec<(usize, Vec<String>, bool)>,
}

impl Slopes {
    /// The slopes of `s`'s point function in each of `slots`, or `None` where it is not affine
    /// in all of them together (or `s` is a system).
    pub fn new(s: &Stencil, slots: &[usize]) -> Option<Self> {
        let [value] = s.body.values.as_slice() else { return None };
        let mut bodies = Vec::new();
        for &slot in slots {
            let mut d = Derivative::new(s, slot, slots);
            let mut lines = Vec::new();
            for (i, e) in &s.body.lets {
                d.bind(*i, e);
                let ty = super::scalar_c_type(s.locals[*i].ty);
                lines.push(format!("const {ty} {} = {};", local(s, *i), expr(s, e)));
                d.locals[*i] = match d.of(e) {
                    Some(Slope::Of(slope)) => {
                        let name = format!("d_{}", local(s, *i));
                        lines.push(format!("const real {name} = {slope};"));
                        Some(Slope::Of(name))
                    }
                    other => other,
                };
            }
            lines.push(match d.of(value)? {
                Slope::Zero => "return (real)0.0;".into(),
                Slope::Of(slope) => format!("return {slope};"),
            });
            bodies.push((slot, lines, d.varying));
        }
        Some(Self { bodies })
    }

    /// For each slot, in the order given, whether its slope varies from point to point.
    pub fn varying(&self) -> Vec<bool> {
        self.bodies.iter().map(|(_, _, varying)| *varying).collect()
    }

    /// Emits `<name>_slope<slot>(reads…, parameters…)` for each slot: the point function's
    /// derivative in that read.
    pub fn emit(&self, w: &mut Writer, s: &Stencil) {
        for (slot, lines, _) in &self.bodies {
            w.line(format!("// The point function's derivative in read {slot} (it is affine in that read)."));
            w.open(format!(
                "__device__ __forceinline__ real {}({})",
                slope_name(s, *slot),
                super::point_params(s).join(", ")
            ));
            for line in lines {
                w.line(line);
            }
            w.close("");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slopes of `stencil` in `slots`, as the emitted text.
    fn slopes(tokens: proc_macro2::TokenStream, slots: &[usize]) -> Option<String> {
        let item = syn::parse2(tokens).expect("parses");
        let s = crate::validate::lower(&item).expect("lowers");
        let mut w = Writer::new();
        Slopes::new(&s, slots).map(|slopes| {
            slopes.emit(&mut w, &s);
            w.finish()
        })
    }

    #[test]
    fn an_affine_point_function_has_its_coefficients_as_slopes() {
        // Slots in order of first appearance: u[0, -1] 0, u[-1, 0] 1, k[0, 0] 2, u[1, 0] 3.
        let text = slopes(
            quote::quote! {
                sweep(+, +) fn gs(mut u: Field2, k: Field2, w: Real) -> Real {
                    let a = w * u[0, -1];
                    (u[-1, 0] * k[0, 0] - a + u[1, 0] * u[1, 0]) / (2.0 + k[0, 0])
                }
            },
            &[0, 1],
        )
        .expect("affine in both");
        assert!(
            text.contains("real gs_slope0(const real r0, const real r1, const real r2, const real r3, const real p_w)")
        );
        assert!(text.contains("const real d_l0_a = p_w;"), "{text}");
        assert!(text.contains("return stencil_div((-d_l0_a), (((real)2.0) + r2));"), "{text}");
        assert!(text.contains("return stencil_div(r2, (((real)2.0) + r2));"), "{text}");
    }

    #[test]
    fn slopes_of_parameters_alone_are_the_same_at_every_point() {
        let item = syn::parse2(quote::quote! {
            sweep(+, +) fn at(mut u: Field2, q: Field2, a: Real, k: Real) -> Real {
                (q[0, 0] + a * u[-1, 0] + u[0, -1] * (1.0 - a) + u[1, 0] * q[0, 0]) / (k + 2.0)
            }
        })
        .expect("parses");
        let s = crate::validate::lower(&item).expect("lowers");
        // Slots: q[0, 0] 0, u[-1, 0] 1, u[0, -1] 2, u[1, 0] 3; a slope in q's read varies.
        assert_eq!(Slopes::new(&s, &[1, 2]).map(|d| d.varying()), Some(vec![false, false]));
        assert_eq!(Slopes::new(&s, &[1, 3]).map(|d| d.varying()), Some(vec![false, true]));
    }

    #[test]
    fn literal_divisors_conditions_and_mul_add_keep_their_form() {
        // Slots: f[0, 0] 0, u[-1, 0] 1.
        let text = slopes(
            quote::quote! {
                sweep(+, +) fn c(mut u: Field2, f: Field2) -> Real {
                    (if f[0, 0] > 0.0 { u[-1, 0] } else { 0.5 * u[-1, 0] }).mul_add(2.0, f[0, 0]) / 4.0
                }
            },
            &[1],
        )
        .expect("affine");
        let slope = "STENCIL_DIV_CONST((((r0 > ((real)0.0)) ? ((real)1.0) : ((real)0.5)) * ((real)2.0)), 4.0)";
        assert!(text.contains(slope), "{text}");
        // The condition on a new read is not affine in it.
        assert_eq!(
            slopes(
                quote::quote! {
                    sweep(+, +) fn c(mut u: Field2, f: Field2) -> Real {
                        (if f[0, 0] > 0.0 { u[-1, 0] } else { 0.5 * u[-1, 0] }).mul_add(2.0, f[0, 0]) / 4.0
                    }
                },
                &[0, 1],
            ),
            None
        );
    }

    #[test]
    fn products_divisions_and_functions_of_a_new_read_are_not_affine() {
        for tokens in [
            quote::quote! { sweep(+, +) fn p(mut u: Field2) -> Real { u[-1, 0] * u[0, -1] + u[1, 0] } },
            quote::quote! { sweep(+, +) fn q(mut u: Field2) -> Real { u[1, 0] / (1.0 + u[-1, 0]) + u[0, -1] } },
            quote::quote! { sweep(+, +) fn r(mut u: Field2) -> Real { u[-1, 0].abs() + u[0, -1] } },
            quote::quote! { sweep(+, +) fn b(mut u: Field2) -> Real { if u[-1, 0] > 0.0 { u[0, -1] } else { 1.0 } } },
        ] {
            assert_eq!(slopes(tokens.clone(), &[0, 1]), None, "{tokens}");
        }
    }
}
