//! Stencils that ship with the library, written with `stencil!` exactly as a user would.

use crate::stencil;

stencil! {
    /// Jacobi update for −Δu = f on a uniform 2-D grid (5-point Laplacian); `h2` is h².
    pub fn jacobi5(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
    }

    /// Jacobi update for −Δu = f on a uniform 3-D grid (7-point Laplacian); `h2` is h².
    pub fn jacobi7(mut u: Field3, f: Field3, h2: Real) -> Real {
        (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1]
            + h2 * f[0, 0, 0]) / 6.0
    }

    /// Gray–Scott reaction–diffusion, one explicit Euler step of
    /// ∂u/∂t = Du Δu − uv² + F(1 − u), ∂v/∂t = Dv Δv + uv² − (F + k)v with the 5-point
    /// Laplacian (grid spacing 1): two unknowns, each updated from the previous step of both.
    pub fn gray_scott(mut u: Field2, mut v: Field2, du: Real, dv: Real, feed: Real, kill: Real, dt: Real)
        -> (Real, Real) {
        let lu = u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4.0 * u[0, 0];
        let lv = v[-1, 0] + v[1, 0] + v[0, -1] + v[0, 1] - 4.0 * v[0, 0];
        let uvv = u[0, 0] * v[0, 0] * v[0, 0];
        (u[0, 0] + dt * (du * lu - uvv + feed * (1.0 - u[0, 0])),
         v[0, 0] + dt * (dv * lv + uvv - (feed + kill) * v[0, 0]))
    }

    /// First half-step of the alternate-triangular scheme (`docs/guide.md`): a sweep with
    /// x ascending and y descending, so the west and north neighbours are already new.
    pub sweep(+, -) fn at_half1(mut phi: Field2, q: Field2, tau: Real, a_w: Real, a_e: Real, a_s: Real,
                                a_n: Real, sigma: Real) -> Real {
        let d_minus = a_w + a_n + sigma / 2.0;
        let d_plus = a_e + a_s + sigma / 2.0;
        (phi[0, 0] * (1.0 - tau * d_plus / 2.0)
            + tau / 2.0 * (a_w * phi[-1, 0] + a_n * phi[0, 1] + a_e * phi[1, 0] + a_s * phi[0, -1] + q[0, 0]))
            / (1.0 + tau * d_minus / 2.0)
    }

    /// Second half-step of the alternate-triangular scheme: x descending and y ascending,
    /// so the east and south neighbours are already new.
    pub sweep(-, +) fn at_half2(mut phi: Field2, q: Field2, tau: Real, a_w: Real, a_e: Real, a_s: Real,
                                a_n: Real, sigma: Real) -> Real {
        let d_minus = a_w + a_n + sigma / 2.0;
        let d_plus = a_e + a_s + sigma / 2.0;
        (phi[0, 0] * (1.0 - tau * d_minus / 2.0)
            + tau / 2.0 * (a_e * phi[1, 0] + a_s * phi[0, -1] + a_w * phi[-1, 0] + a_n * phi[0, 1] + q[0, 0]))
            / (1.0 + tau * d_plus / 2.0)
    }
}

/// Coefficients of the alternate-triangular scheme for
/// ∂φ/∂t + u∂φ/∂x + v∂φ/∂y + σφ = μΔφ + q with constant u ≥ 0, v ≤ 0 (upwind convection;
/// axis 0 is x, axis 1 is y). Both half-steps take the same parameters.
///
/// ```
/// use stencil::builtin::alternate_triangular;
/// // The problem of Bohaienko's paper: u = 1, v = −0.5, μ = 0.5, σ = 0.
/// let p = alternate_triangular::<f64>(0.002, 1.0, -0.5, 0.5, 0.0, 0.1, 0.1)?;
/// assert_eq!(p.a_w, 0.5 / (0.1 * 0.1) + 1.0 / 0.1);
/// assert_eq!(p.a_n, 0.5 / (0.1 * 0.1) + 0.5 / 0.1);
/// assert!(alternate_triangular::<f64>(0.002, -1.0, -0.5, 0.5, 0.0, 0.1, 0.1).is_err());
/// # Ok::<(), stencil::Error>(())
/// ```
///
/// **Errors**: [`Error::InvalidParameter`](crate::Error::InvalidParameter) if `u < 0` or
/// `v > 0` (the upwind couplings are written for that direction of flow: mirror the axes
/// for another), or if a step or spacing is not positive.
#[allow(clippy::too_many_arguments)]
pub fn alternate_triangular<T: crate::Real>(
    tau: f64,
    u: f64,
    v: f64,
    mu: f64,
    sigma: f64,
    hx: f64,
    hy: f64,
) -> crate::Result<AtHalf1Params<T>> {
    let invalid =
        |name: &str, reason: String| crate::Error::InvalidParameter { stencil: "at_half1", name: name.into(), reason };
    if u.is_nan() || u < 0.0 {
        return Err(invalid("u", format!("the upwind couplings assume u ≥ 0, found {u}")));
    }
    if v.is_nan() || v > 0.0 {
        return Err(invalid("v", format!("the upwind couplings assume v ≤ 0, found {v}")));
    }
    for (name, x) in [("tau", tau), ("hx", hx), ("hy", hy)] {
        if x.is_nan() || x <= 0.0 || x.is_infinite() {
            return Err(invalid(name, format!("must be positive and finite, found {x}")));
        }
    }
    let t = T::from_f64;
    Ok(AtHalf1Params {
        tau: t(tau),
        a_w: t(mu / (hx * hx) + u / hx),
        a_e: t(mu / (hx * hx)),
        a_s: t(mu / (hy * hy)),
        a_n: t(mu / (hy * hy) + v.abs() / hy),
        sigma: t(sigma),
    })
}

impl<T: Copy> From<AtHalf1Params<T>> for AtHalf2Params<T> {
    fn from(p: AtHalf1Params<T>) -> Self {
        Self { tau: p.tau, a_w: p.a_w, a_e: p.a_e, a_s: p.a_s, a_n: p.a_n, sigma: p.sigma }
    }
}
