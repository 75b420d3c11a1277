//! Stopping rules: an iteration limit and a tolerance on the residual ρ(u) = ‖S(u) − u‖.

use std::fmt;

use crate::{Error, Result, Schedule, StencilMeta};

/// A vector norm over the interior points.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Norm {
    /// max |·| (L∞).
    #[default]
    Max,
    /// √Σ(·)² (the discrete L2 norm, not scaled by the number of points).
    L2,
}

impl fmt::Display for Norm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Norm::Max => "L∞",
            Norm::L2 => "L2",
        })
    }
}

/// When the residual is small enough to stop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// Stop once ρ < `eps`. The papers' rule ‖uᵏ⁺¹ − uᵏ‖∞ < 10⁻⁵ is
    /// `Tolerance::Absolute { norm: Norm::Max, eps: 1e-5 }`.
    Absolute {
        /// The norm of the residual.
        norm: Norm,
        /// The threshold.
        eps: f64,
    },
    /// Stop once ρ < `factor`·ρ(u⁰), the residual of the initial guess.
    Relative {
        /// The norm of the residual.
        norm: Norm,
        /// The reduction, in (0, 1) to be useful, e.g. 1e-4.
        factor: f64,
    },
}

impl Tolerance {
    /// The norm the rule is measured in.
    pub fn norm(&self) -> Norm {
        match *self {
            Tolerance::Absolute { norm, .. } | Tolerance::Relative { norm, .. } => norm,
        }
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Tolerance::Absolute { norm, eps } => write!(f, "ρ {norm} < {eps:e}"),
            Tolerance::Relative { norm, factor } => write!(f, "ρ {norm} < {factor:e}·ρ₀"),
        }
    }
}

/// What a check measures: the residual ρ that a [`Tolerance`] is compared with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Residual {
    /// ρ = ‖S(u) − u‖, what one more iteration changes: the papers' ‖uᵏ⁺¹ − uᵏ‖ (the default).
    #[default]
    Step,
    /// ρ = ‖uᵏ − uʲ‖, what the iterations since the previous check j changed (j = 0, or the
    /// iteration resumed from, at the first check): with checks every c iterations, the
    /// change over a check period. Every check counts, also those of an observer, of
    /// checkpoints and of the iteration limit: each shortens the span it ends (keep their
    /// periods multiples of the check period to measure whole periods only). This is paper 000's Algorithm 1, which compares the grid
    /// before and after each pyramid pass. Over an even period the Jacobi iteration's
    /// oscillating modes (eigenvalues near −1, which flip sign at every iteration and barely
    /// decay) cancel, so the rule stops far sooner than [`Step`](Self::Step) on fine grids.
    /// Measured by Jacobi runs (`Plain`, `Tiled`, exact hierarchical and streaming cycles,
    /// out-of-core slabs), alone or across ranks; an absolute tolerance only.
    SinceLastCheck,
}

impl fmt::Display for Residual {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Residual::Step => "‖S(u) − u‖",
            Residual::SinceLastCheck => "‖uᵏ − u(last check)‖",
        })
    }
}

/// The checked stopping rules of one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct StopRule {
    pub max_iterations: Option<usize>,
    pub tolerance: Option<Tolerance>,
    pub check_every: usize,
    /// Checkpoints are written at multiples of this, so those iterations are checked too.
    pub checkpoint_every: Option<usize>,
    /// The observer is shown the iterates at multiples of this, checked too.
    pub observe_every: Option<usize>,
    /// Whether any iteration is checked (runs of a fixed number of steps check none).
    pub checks: bool,
    /// What a check measures.
    pub residual: Residual,
}

/// Check period when none is given: the papers' 100 iterations, or every iteration of a
/// shorter run.
pub const DEFAULT_CHECK_EVERY: usize = 100;

/// The longest a run with a tolerance and no iteration limit may go between two looks at its
/// residual: 2²⁰ iterations. Such a run stops only at a check, so a longer period (one meant
/// as an iteration limit, say) would keep it going long after it converged, in practice for
/// ever; with [`max_iterations`](crate::Solver::max_iterations) any period is allowed (the
/// last iteration is always checked).
pub const MAX_UNLIMITED_CHECK_EVERY: usize = 1 << 20;

impl StopRule {
    pub fn new(
        max_iterations: Option<usize>,
        tolerance: Option<Tolerance>,
        check_every: Option<usize>,
    ) -> Result<Self> {
        let invalid = |reason: String| Err(Error::InvalidStoppingRule { reason });
        let never = |reason: String| Err(Error::NeverStops { reason });
        if check_every == Some(0) {
            return invalid("the residual cannot be checked every 0 iterations; use 1 or more".into());
        }
        let check_every = check_every.unwrap_or(DEFAULT_CHECK_EVERY);
        match tolerance {
            Some(Tolerance::Absolute { eps: v, .. }) | Some(Tolerance::Relative { factor: v, .. })
                if !v.is_finite() =>
            {
                return invalid(format!("the tolerance must be a finite number, not {v}"));
            }
            Some(Tolerance::Absolute { eps, .. }) if eps <= 0.0 && max_iterations.is_none() => {
                return never(format!(
                    "the residual is never below {eps:e} and no iteration limit is set; use a positive tolerance or `max_iterations`"
                ));
            }
            Some(Tolerance::Relative { factor, .. }) if factor <= 0.0 && max_iterations.is_none() => {
                return never(format!(
                    "the residual is never below {factor:e}·ρ₀ and no iteration limit is set; use a positive factor or `max_iterations`"
                ));
            }
            None if max_iterations.is_none() => {
                return never("neither a tolerance nor an iteration limit is set".into());
            }
            _ => {}
        }
        let rule = Self {
            max_iterations,
            tolerance,
            check_every,
            checkpoint_every: None,
            observe_every: None,
            checks: true,
            residual: Residual::Step,
        };
        rule.check_gap(check_every, "the residual is checked every")?;
        Ok(rule)
    }

    /// That a run without an iteration limit looks at its residual at least every
    /// [`MAX_UNLIMITED_CHECK_EVERY`] iterations: `gap` is the most iterations between two
    /// checks (the check period, or an inexact hierarchical cycle, which is never cut short),
    /// `what` says which, as in "{what} {gap} iterations".
    pub fn check_gap(&self, gap: usize, what: &str) -> Result<()> {
        if self.max_iterations.is_some() || gap <= MAX_UNLIMITED_CHECK_EVERY {
            return Ok(());
        }
        Err(Error::NeverStops {
            reason: format!(
                "{what} {gap} iterations and no iteration limit is set, so the run would go on for {gap} iterations \
                 after converging; without a limit the residual must be looked at at least every {MAX_UNLIMITED_CHECK_EVERY} \
                 iterations: lower the period, or set `max_iterations`"
            ),
        })
    }

    /// The first iteration after `iteration` that ends with a check, found without walking
    /// the iterations between (a cycle or pass may be long).
    fn next_check_after(&self, iteration: usize) -> Option<usize> {
        if !self.checks {
            return None;
        }
        let next_multiple = |m: usize| (iteration / m).checked_add(1).and_then(|q| q.checked_mul(m));
        let relative_start = matches!(self.tolerance, Some(Tolerance::Relative { .. })) && iteration == 0;
        [
            next_multiple(self.check_every),
            self.max_iterations.filter(|&max| max > iteration),
            self.checkpoint_every.and_then(next_multiple),
            self.observe_every.and_then(next_multiple),
            relative_start.then_some(1),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Exactly `iterations` iterations, none of them checked.
    pub fn fixed(iterations: usize) -> Self {
        Self {
            max_iterations: Some(iterations),
            tolerance: None,
            check_every: usize::MAX,
            checkpoint_every: None,
            observe_every: None,
            checks: false,
            residual: Residual::Step,
        }
    }

    /// This rule measuring `residual` at its checks, for a run of the stencil of `meta`
    /// under `schedule`. **Errors**: [`Error::InvalidStoppingRule`] for
    /// [`Residual::SinceLastCheck`] with a relative tolerance (the change since the last
    /// check has no value at the initial guess to be relative to), for a sweep stencil
    /// (whose check is one plain application after the sweeps) and for inexact hierarchical
    /// cycles (which measure ρ of the iterate they start from, inside the cycle).
    pub fn measuring(self, residual: Residual, meta: &StencilMeta, schedule: Schedule) -> Result<Self> {
        if residual == Residual::Step {
            return Ok(self);
        }
        let refuse = |what: &str| {
            Err(Error::InvalidStoppingRule {
                reason: format!(
                    "{what} measure the residual only as ‖S(u) − u‖, not as the change since the last check \
                     (`Residual::SinceLastCheck`): run `Plain`, `Tiled`, exact hierarchical cycles or out-of-core \
                     slabs, or measure `Residual::Step`"
                ),
            })
        };
        if matches!(self.tolerance, Some(Tolerance::Relative { .. })) {
            return Err(Error::InvalidStoppingRule {
                reason: "a relative tolerance compares ρ with ρ(u⁰), the residual of the initial guess, and the \
                         change since the last check has no value there: use an absolute tolerance"
                    .into(),
            });
        }
        if meta.is_sweep() {
            return refuse("sweeps");
        }
        if matches!(schedule, Schedule::Hierarchical { .. }) && !schedule.is_exact_blocking(meta) {
            return refuse("inexact hierarchical cycles");
        }
        Ok(Self { residual, ..self })
    }

    /// Whether iteration `k` (1-based) ends with a residual check.
    pub fn checks_at(&self, k: usize) -> bool {
        self.checks && self.checked(k)
    }

    fn checked(&self, k: usize) -> bool {
        k.is_multiple_of(self.check_every)
            || Some(k) == self.max_iterations
            || self.checkpoint_every.is_some_and(|m| k.is_multiple_of(m))
            || self.observe_every.is_some_and(|m| k.is_multiple_of(m))
            || (k == 1 && matches!(self.tolerance, Some(Tolerance::Relative { .. })))
    }
}

/// One cycle of a hierarchical schedule, planned against the stopping rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CyclePlan {
    /// Subiterations in this cycle (≤ `sub`).
    pub len: usize,
    /// The subiteration (0-based) that measures S(u) − u on the cores, for a checked cycle.
    pub measure_step: Option<usize>,
    /// The iteration the measured residual is recorded at.
    pub record_at: usize,
}

impl StopRule {
    /// The cycle that starts after `iteration` iterations, of at most `sub` subiterations;
    /// `None` at the iteration limit.
    ///
    /// For exact blocking (`exact`), the cycle ends at the first checked iteration it
    /// reaches and measures in its last subiteration, whose core points are one plain
    /// application to the previous iterate: checks then fall on the iterations `Plain`
    /// checks and record the same residual. Otherwise (paper 003's inexact iteration) the
    /// cycle is shortened only at the limit, is checked when it contains a checked
    /// iteration, and measures in its first subiteration: ρ of the iterate it starts from,
    /// recorded at the iteration after it.
    pub fn next_cycle(&self, iteration: usize, sub: usize, exact: bool) -> Option<CyclePlan> {
        let left = match self.max_iterations {
            Some(max) if iteration >= max => return None,
            Some(max) => max - iteration,
            None => usize::MAX - iteration,
        };
        let mut len = sub.min(left);
        let first_check = self.next_check_after(iteration).filter(|&k| k <= iteration + len);
        if exact && let Some(k) = first_check {
            len = k - iteration;
        }
        Some(match (first_check, exact) {
            (None, _) => CyclePlan { len, measure_step: None, record_at: iteration + len },
            (Some(_), true) => CyclePlan { len, measure_step: Some(len - 1), record_at: iteration + len },
            (Some(_), false) => CyclePlan { len, measure_step: Some(0), record_at: iteration + 1 },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_that_cannot_stop_are_rejected() {
        let abs = |eps| Some(Tolerance::Absolute { norm: Norm::Max, eps });
        assert!(matches!(StopRule::new(None, None, None), Err(Error::NeverStops { .. })));
        assert!(matches!(StopRule::new(None, abs(0.0), None), Err(Error::NeverStops { .. })));
        assert!(matches!(StopRule::new(None, abs(f64::NAN), None), Err(Error::InvalidStoppingRule { .. })));
        assert!(matches!(StopRule::new(Some(5), abs(1e-3), Some(0)), Err(Error::InvalidStoppingRule { .. })));
        let rel = Some(Tolerance::Relative { norm: Norm::L2, factor: -1.0 });
        assert!(matches!(StopRule::new(None, rel, None), Err(Error::NeverStops { .. })));
        assert!(StopRule::new(Some(10), abs(0.0), None).is_ok());
        assert!(StopRule::new(None, abs(1e-5), None).is_ok());
    }

    #[test]
    fn exact_cycles_end_on_the_checks_and_inexact_ones_keep_their_length() {
        let r = StopRule::new(Some(23), None, Some(10)).unwrap();
        let plan = |exact| {
            let mut at = 0;
            let mut cycles = Vec::new();
            while let Some(c) = r.next_cycle(at, 4, exact) {
                cycles.push((c.len, c.measure_step, c.record_at));
                at += c.len;
            }
            cycles
        };
        assert_eq!(
            plan(true),
            [
                (4, None, 4),
                (4, None, 8),
                (2, Some(1), 10),
                (4, None, 14),
                (4, None, 18),
                (2, Some(1), 20),
                (3, Some(2), 23)
            ]
        );
        assert_eq!(
            plan(false),
            [(4, None, 4), (4, None, 8), (4, Some(0), 9), (4, None, 16), (4, Some(0), 17), (3, Some(0), 21)]
        );
    }

    #[test]
    fn checks_fall_on_the_period_and_the_last_iteration() {
        let r = StopRule::new(Some(250), None, Some(100)).unwrap();
        let at: Vec<usize> = (1..=250).filter(|&k| r.checks_at(k)).collect();
        assert_eq!(at, [100, 200, 250]);
    }
}
