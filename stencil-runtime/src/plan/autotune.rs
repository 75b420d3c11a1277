//! What `Schedule::Auto` stands for on a given stencil, grid, precision and device, and why.
//!
//! Auto never changes what is computed: for a Jacobi stencil it chooses between `Plain` and
//! *exact* hierarchical configurations (halo = sub · radius, which equal `Plain`
//! iteration for iteration), never paper 003's inexact iteration, which converges to the
//! same solution along a different path and is asked for explicitly. On the GPU the
//! candidates are timed on the grid itself (a short run of each, on a copy) and the fastest
//! is kept; the choice is cached for the process, per stencil, shape, precision, mode and
//! device.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, OnceLock};

use crate::{DEFAULT_TILE_2D, DEFAULT_TILE_3D, Report, Result, Schedule, StencilMeta};

/// Iterations each GPU candidate runs for its timing (a multiple of every candidate's `sub`).
pub(crate) const TRIAL_ITERATIONS: usize = 64;

/// A hierarchical candidate must beat `Plain` by this factor to be chosen: below it the
/// difference is within run-to-run noise, and `Plain` checks at any iteration.
const MARGIN: f64 = 1.05;

/// The schedule `Auto` stands for, and the reason, printed in the report.
#[derive(Clone, Debug)]
pub(crate) struct Choice {
    pub schedule: Schedule,
    pub reason: String,
}

/// Whether a run of at most `max_iterations` is long enough to be worth timing candidates
/// for (the timing runs together take several times [`TRIAL_ITERATIONS`]).
pub(crate) fn worth_measuring(max_iterations: Option<usize>) -> bool {
    max_iterations.is_none_or(|max| max >= 4 * TRIAL_ITERATIONS)
}

/// `Auto` for a run too short to time candidates for.
pub(crate) fn short_run(max_iterations: usize) -> Choice {
    Choice {
        schedule: Schedule::Plain,
        reason: format!(
            "plain: a run of {max_iterations} iterations is too short to time the candidates (that needs {} or more)",
            4 * TRIAL_ITERATIONS
        ),
    }
}

/// `Auto` for a system of several unknowns.
pub(crate) fn for_system() -> Choice {
    Choice {
        schedule: Schedule::Plain,
        reason: "plain: the candidates are not timed for a system of several unknowns (ask for `Tiled` or \
                 `Hierarchical` to run them)"
            .into(),
    }
}

/// `Auto` without a measurement: sweeps and the CPU backend.
pub(crate) fn without_measuring(meta: &StencilMeta) -> Choice {
    if meta.is_sweep() {
        let tile = if meta.dim >= 3 { DEFAULT_TILE_3D } else { DEFAULT_TILE_2D };
        return Choice {
            schedule: Schedule::Wavefront { tile },
            reason: format!(
                "a sweep stencil: wavefront with the default tile of {tile} (equal to the sequential sweep)"
            ),
        };
    }
    Choice {
        schedule: Schedule::Plain,
        reason: "a Jacobi stencil on the CPU: the plain pass (exact temporal blocking is searched on the GPU only)"
            .into(),
    }
}

/// Pyramid height of the out-of-core schedule that `Auto` names when a grid does not fit the
/// device; the GPU run replaces it (and the slab width) with the run-time model's best,
/// found by brute force after its probes ([`crate::model`]).
pub(crate) const OUT_OF_CORE_HEIGHT: usize = 32;

/// `Auto` for a grid whose in-core run needs `needed` bytes of device memory, more than the
/// `usable` bytes: the out-of-core pyramid with plain inner iterations (equal to `Plain`).
pub(crate) fn out_of_core(needed: usize, usable: usize) -> Choice {
    let gib = |bytes: usize| bytes as f64 / (1u64 << 30) as f64;
    Choice {
        schedule: Schedule::OutOfCore {
            slab: None,
            height: OUT_OF_CORE_HEIGHT,
            inner: crate::Inner::Plain,
            device_memory: None,
        },
        reason: format!(
            "out-of-core: the grid and its workspace need {:.2} GiB of device memory, {:.2} GiB is usable (90 % of \
             what is free); pyramids of plain iterations or of streaming cycles, or skewed slabs, their height and \
             width, are the run-time model's best for that memory",
            gib(needed),
            gib(usable)
        ),
    }
}

/// The exact temporal blocking worth timing for a stencil: hierarchical cycles (in 1-D and
/// 2-D, working regions one warp (32 points) wide, which run in registers; in 3-D, small
/// cubes in shared memory) and, in 2-D and 3-D, a streaming configuration.
pub(crate) fn candidates(meta: &StencilMeta) -> Vec<Schedule> {
    let radius = meta.radius.iter().copied().max().unwrap_or(0);
    let mut list = vec![Schedule::Plain];
    if radius == 0 || meta.is_sweep() {
        return list;
    }
    let configurations: &[(usize, usize)] =
        if meta.dim <= 2 { &[(2, 32), (4, 32), (8, 32)] } else { &[(2, 16), (2, 8), (4, 16)] };
    for &(sub, extent) in configurations {
        let halo = sub * radius;
        let tile = if meta.dim <= 2 { extent.saturating_sub(2 * halo) } else { extent };
        if tile >= 8 && TRIAL_ITERATIONS.is_multiple_of(sub) {
            list.push(Schedule::Hierarchical { tile, halo, sub });
        }
    }
    let streaming = streaming_candidate(meta);
    list.extend(streaming.filter(|s| s.cycle_sizes(meta).is_some_and(|c| TRIAL_ITERATIONS.is_multiple_of(c.sub))));
    list
}

/// The streaming configuration worth timing for a Jacobi stencil of 2 or 3 axes: in 2-D
/// tiles of 256 columns and 8 subiterations, in 3-D tiles of 24 × 24 and 4.
pub(crate) fn streaming_candidate(meta: &StencilMeta) -> Option<Schedule> {
    if meta.is_sweep() || meta.radius.iter().all(|&r| r == 0) {
        return None;
    }
    match meta.dim {
        2 => Some(Schedule::Streaming { tile: 256, sub: 8 }),
        3 => Some(Schedule::Streaming { tile: 24, sub: 4 }),
        _ => None,
    }
}

type Key = (u64, Vec<usize>, &'static str, &'static str, usize);

fn cache() -> &'static Mutex<HashMap<Key, Choice>> {
    static CACHE: OnceLock<Mutex<HashMap<Key, Choice>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The cache key: the stencil (by its generated source, so two stencils of the same name
/// differ) and the boundary conditions, hashed together, the grid's shape, the precision,
/// the mode and the device.
pub(crate) fn key(
    source: &str,
    boundaries: impl Hash,
    shape: &[usize],
    precision: &'static str,
    mode: &'static str,
    device: usize,
) -> Key {
    let mut hasher = DefaultHasher::new();
    source.hash(&mut hasher);
    boundaries.hash(&mut hasher);
    (hasher.finish(), shape.to_vec(), precision, mode, device)
}

/// The GPU choice: cached, or found by timing every candidate with `trial` (which runs
/// [`TRIAL_ITERATIONS`] iterations of a schedule on a copy of the grid). A candidate that
/// cannot run (a working region beyond the device's shared memory, say) is left out and
/// named in the reason; if `Plain` itself fails, the choice is `Plain`, not cached.
pub(crate) fn measured(
    meta: &StencilMeta,
    key: Key,
    device_name: &str,
    mut trial: impl FnMut(Schedule) -> Result<Report>,
) -> Result<Choice> {
    if let Some(choice) = cache().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(choice.clone());
    }
    let mut timings: Vec<(Schedule, f64)> = Vec::new();
    let mut skipped = Vec::new();
    for schedule in candidates(meta) {
        match trial(schedule) {
            Ok(report) => timings.push((schedule, report.gpoints_per_s())),
            Err(e) if schedule != Schedule::Plain => skipped.push(format!("{schedule}: {e}")),
            // Not cached: the run itself meets the same condition and reports it on the grid
            // (a non-finite value, say, with the grid holding the checked iterate).
            Err(e) => {
                return Ok(Choice { schedule: Schedule::Plain, reason: format!("plain: its timing run failed ({e})") });
            }
        }
    }
    let plain = timings.first().map_or(0.0, |&(_, rate)| rate);
    let (best, best_rate) =
        timings.iter().copied().fold((Schedule::Plain, plain), |acc, (s, r)| if r > acc.1 { (s, r) } else { acc });
    let chosen = if best_rate > MARGIN * plain { best } else { Schedule::Plain };
    let measured: Vec<String> = timings.iter().map(|(s, r)| format!("{s} {r:.1}")).collect();
    let why = if chosen == Schedule::Plain {
        format!("no exact blocking was {:.0} % faster than plain", (MARGIN - 1.0) * 100.0)
    } else {
        format!(
            "exact temporal blocking (halo = sub · radius, equal to plain iteration for iteration), {:.2}× plain",
            best_rate / plain
        )
    };
    let mut reason = format!(
        "{why}; measured on {device_name} over {TRIAL_ITERATIONS} iterations, Gpoint/s: {}",
        measured.join(", ")
    );
    if !skipped.is_empty() {
        reason.push_str(&format!("; not runnable: {}", skipped.join("; ")));
    }
    let choice = Choice { schedule: chosen, reason };
    cache().lock().unwrap_or_else(|e| e.into_inner()).insert(key, choice.clone());
    Ok(choice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FieldMeta, StencilMeta};

    fn meta(dim: usize, radius: &'static [usize]) -> StencilMeta {
        static FIELDS: [FieldMeta; 0] = [];
        StencilMeta {
            name: "t",
            dim,
            fields: &FIELDS,
            unknown: 0,
            unknowns: &[0],
            params: &[],
            reads: &[],
            radius,
            sweep: None,
            flops: 0,
            arrays_per_point: 2,
        }
    }

    #[test]
    fn candidates_are_exact_and_fit_one_warp_in_two_dimensions() {
        let m = meta(2, &[1, 1]);
        let list = candidates(&m);
        assert_eq!(list[0], Schedule::Plain);
        assert_eq!(list.len(), 5);
        for s in &list[1..] {
            assert!(s.is_exact_blocking(&m), "{s}");
            match *s {
                Schedule::Hierarchical { tile, halo, .. } => assert_eq!(tile + 2 * halo, 32),
                Schedule::Streaming { .. } => {}
                _ => panic!("{s} is not temporal blocking"),
            }
        }
        // Radius 2: sub 8 would leave no core; 1-D does not stream.
        assert_eq!(candidates(&meta(1, &[2])).len(), 3);
        assert!(candidates(&meta(3, &[1, 1, 1])).iter().skip(1).all(|s| s.is_exact_blocking(&meta(3, &[1, 1, 1]))));
    }

    #[test]
    fn the_cpu_and_sweeps_do_not_measure() {
        assert_eq!(without_measuring(&meta(2, &[1, 1])).schedule, Schedule::Plain);
    }

    #[test]
    fn a_grid_that_does_not_fit_runs_out_of_core_and_says_why() {
        let choice = out_of_core(12 << 30, 9 << 30);
        let schedule = choice.schedule.resolve(Box::leak(Box::new(meta(3, &[1, 1, 1])))).unwrap();
        assert!(matches!(
            schedule,
            Schedule::OutOfCore { slab: None, height: OUT_OF_CORE_HEIGHT, inner: crate::Inner::Plain, .. }
        ));
        assert!(choice.reason.contains("12.00 GiB") && choice.reason.contains("9.00 GiB"), "{}", choice.reason);
    }
}
