//! How the iterations of a stencil are run.

use std::fmt;

use crate::{Error, Result, StencilMeta};

/// Default wavefront tile edge for 2-D sweeps (points per axis).
pub const DEFAULT_TILE_2D: usize = 64;
/// Default wavefront tile edge for 3-D sweeps (points per axis).
pub const DEFAULT_TILE_3D: usize = 16;

/// The order in which points and iterations run. Every schedule computes what its
/// definition says on every backend; see `docs/guide.md` for the exact semantics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Schedule {
    /// Chosen per run, never changing what is computed: a [`Wavefront`](Self::Wavefront) with
    /// the default tile for sweep stencils; for Jacobi stencils [`Plain`](Self::Plain) on the
    /// CPU, and on the GPU the fastest of `Plain` and a few exact
    /// [`Hierarchical`](Self::Hierarchical) configurations (halo = sub · radius), timed on the
    /// grid over a few iterations and cached — or, when the grid and its workspace do not fit
    /// the GPU's free memory, [`OutOfCore`](Self::OutOfCore) with the height, slab width and
    /// inner iterations (plain or streaming pyramids, or skewed slabs of plain iterations or
    /// streaming cycles) of the run-time model's best.
    /// [`Report::schedule_choice`](crate::Report) says what was chosen and why.
    #[default]
    Auto,
    /// One iteration per pass over memory: a Jacobi pass (ping-pong buffers) for plain
    /// stencils, the sequential sweep in declared order for `sweep(…)` stencils.
    Plain,
    /// One Jacobi pass per iteration, as `Plain`, computed on the GPU by the shared-memory
    /// tiled kernel (each block loads its tile and halo once). On the CPU it is the plain
    /// pass. Jacobi stencils only.
    Tiled,
    /// Jacobi stencils: hierarchical subiterations (paper 003). The interior is cut into
    /// disjoint core tiles of `tile` points per axis; each tile loads its core and `halo`
    /// points on every side (its working region, clipped at the grid's edge) and runs `sub`
    /// Jacobi subiterations inside it (on the GPU in shared memory, or in registers for narrow
    /// 1-D and 2-D regions: `docs/schedules.md`); the points of the region
    /// within the stencil's radius of its edge keep their loaded values. Then the core is
    /// written back: one *cycle*, counted as `sub` iterations.
    ///
    /// With `halo ≥ sub · radius` no stale value reaches a core, and a cycle equals `sub`
    /// plain iterations bit for bit (exact temporal blocking). With a smaller halo it is
    /// paper 003's inexact iteration, a block Jacobi method with inner iterations; its GPU
    /// kernel and CPU twin still agree bit for bit in exact mode.
    Hierarchical {
        /// Core tile edge in points (≥ 1).
        tile: usize,
        /// Points of working region beyond the core on every side (≥ the stencil's radius).
        halo: usize,
        /// Subiterations per cycle (≥ 1).
        sub: usize,
    },
    /// Jacobi stencils: exact temporal blocking by streaming (2.5-D blocking). The two fast
    /// axes are cut into core tiles of `tile` points per axis, the slowest axis into chunks;
    /// each block takes one tile and chunk with a working region `sub · radius` points wider
    /// on every side, and marches its planes, carrying the `sub` subiterations one behind
    /// the other through a ring of planes (on the GPU in shared memory and registers), so
    /// that each plane is read from memory once and written once per cycle. A cycle equals
    /// `sub` plain iterations bit for bit: the same result as
    /// `Hierarchical { tile, halo: sub · radius, sub }`, which the CPU runs for it
    /// (`docs/schedules.md`).
    Streaming {
        /// Core tile edge on the two fast axes in points (≥ 1).
        tile: usize,
        /// Subiterations per cycle (≥ 1).
        sub: usize,
    },
    /// Jacobi stencils on grids larger than the GPU's memory: the out-of-core *pyramid*
    /// schedule (papers 000/001). The grid stays in host memory; it is cut along the slowest
    /// axis into slabs of `slab` planes, and each slab is sent to the device with
    /// `height · radius` ghost planes on each side (the unknown and every read-only field),
    /// advanced `height` iterations there by the `inner` schedule over a region that shrinks
    /// by the radius every iteration, and its own planes are written back in place. Copies
    /// and kernels overlap on separate streams. One *pass* over all slabs is `height`
    /// iterations, and it equals `height` plain iterations bit for bit: the result is
    /// `Plain`'s. On the CPU the same slabs run in the same order (the schedule's twin).
    OutOfCore {
        /// Planes of the slowest axis that one slab updates; `None`: the most that fit
        /// `device_memory`.
        slab: Option<usize>,
        /// Iterations per pass, the pyramid height n (≥ 1). With a periodic axis 0 in one
        /// process every pass is one iteration (the first slab reads the last slab's
        /// planes at every iteration); the report shows the height run.
        height: usize,
        /// How a slab's iterations run on the device.
        inner: Inner,
        /// Bytes of device memory the schedule may allocate; `None`: 90 % of what the
        /// device has free (on the CPU: no limit, one slab unless `slab` says otherwise).
        device_memory: Option<usize>,
    },
    /// `sweep(…)` stencils only: tiles of `tile` points per axis run in wavefront order,
    /// tiles of one wavefront in parallel. Equal to the sequential sweep bit for bit.
    Wavefront {
        /// Tile edge in points (≥ 1).
        tile: usize,
    },
}

/// How the iterations of one slab of [`Schedule::OutOfCore`] run on the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inner {
    /// One plain pass per iteration over the slab's shrinking region.
    #[default]
    Plain,
    /// Exact temporal blocking inside the slab: [`Schedule::Hierarchical`] with
    /// `halo ≥ sub · radius` (an inexact configuration is refused: it would change the
    /// result with the slab width).
    Hierarchical {
        /// Core tile edge in points (≥ 1).
        tile: usize,
        /// Points of working region beyond the core on every side (≥ sub · radius).
        halo: usize,
        /// Subiterations per cycle (≥ 1).
        sub: usize,
    },
    /// Plain iterations over slabs **skewed** by r planes per iteration instead of a
    /// pyramid: iteration t of slab `[a, b)` updates `[a − t·r, b − t·r)`, reading below it
    /// the values the previous slab left on the device. Every plane is computed once per
    /// iteration (no redundant ghost work) and crosses the bus once per pass each way;
    /// the result is the same.
    Skewed,
    /// Exact temporal blocking inside the slab by the streaming kernel:
    /// [`Schedule::Streaming`], each cycle of `sub` iterations reading and writing the
    /// slab's region once. The same iterates as `Hierarchical { tile, halo: sub · radius,
    /// sub }`, which the CPU runs for it.
    Streaming {
        /// Core tile edge on the two fast axes in points (≥ 1).
        tile: usize,
        /// Subiterations per cycle (≥ 1).
        sub: usize,
    },
    /// Streaming cycles inside **skewed** slabs (as [`Skewed`](Self::Skewed), every plane
    /// computed once per iteration): a cycle of `sub` iterations reads the region of its
    /// first iterate once and writes its last once; below the slab it reads the planes the
    /// previous slab set aside at that iterate (`docs/schedules.md`). The CPU runs the skewed
    /// slabs' plain iterations for it (the same iterates). On the GPU: `sub` ≥ 2 (one
    /// iteration is `Skewed`'s plain level), one unknown, Dirichlet sides, and every slab but the last holding at least `2 · sub · radius` planes below its
    /// top at every iteration of a pass, or reaching the interior's first plane (where the
    /// planes below are the boundary's: in one process, passes may be taller than the lowest
    /// slabs); other configurations are an [`Error::InvalidSchedule`] before the run.
    SkewedStreaming {
        /// Core tile edge on the two fast axes in points (≥ 1).
        tile: usize,
        /// Subiterations per cycle (≥ 1).
        sub: usize,
    },
}

impl Inner {
    /// Whether the slabs are skewed rather than pyramids.
    pub(crate) fn is_skewed(&self) -> bool {
        matches!(self, Inner::Skewed | Inner::SkewedStreaming { .. })
    }

    /// Checks that the cycles inside the slabs are exact and fit `meta`.
    ///
    /// **Errors**: [`Error::InvalidSchedule`] as for the in-core schedule of the same cycles,
    /// or for an inexact hierarchical one (its result would depend on the slab width).
    fn check(&self, meta: &StencilMeta) -> Result<()> {
        let cycles = match *self {
            Inner::Hierarchical { tile, halo, sub } => Schedule::Hierarchical { tile, halo, sub },
            Inner::Streaming { tile, sub } | Inner::SkewedStreaming { tile, sub } => Schedule::Streaming { tile, sub },
            Inner::Plain | Inner::Skewed => return Ok(()),
        };
        cycles.resolve(meta)?;
        if let Inner::Hierarchical { halo, sub, .. } = *self
            && !cycles.is_exact_blocking(meta)
        {
            return Err(Error::InvalidSchedule {
                schedule: cycles.to_string(),
                stencil: meta.name,
                reason: format!(
                    "it must be exact (halo {halo} ≥ sub {sub} · radius), so that a pass equals plain iterations \
                     whatever the slab width"
                ),
            });
        }
        Ok(())
    }

    /// Skewed slabs: the length of the streaming cycles run in them (each cycle's lower skirt
    /// is that many radii deep); 0 for plain iterations.
    pub(crate) fn skewed_cycle(&self) -> usize {
        match *self {
            Inner::SkewedStreaming { sub, .. } => sub,
            _ => 0,
        }
    }

    /// The cycles' sizes of exact temporal blocking (`None` for plain iterations): a
    /// streaming cycle's halo is `sub` times the stencil's largest radius.
    pub(crate) fn cycle_sizes(&self, meta: &StencilMeta) -> Option<CycleSizes> {
        match *self {
            Inner::Hierarchical { tile, halo, sub } => Some(CycleSizes { tile, halo, sub }),
            Inner::Streaming { tile, sub } | Inner::SkewedStreaming { tile, sub } => {
                Schedule::Streaming { tile, sub }.cycle_sizes(meta)
            }
            Inner::Plain | Inner::Skewed => None,
        }
    }
}

/// The sizes of a hierarchical cycle ([`Schedule::Hierarchical`]): core tiles of `tile`
/// points per axis, `halo` points on every side of each, `sub` subiterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CycleSizes {
    pub tile: usize,
    pub halo: usize,
    pub sub: usize,
}

impl fmt::Display for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Inner::Plain => write!(f, "plain"),
            Inner::Skewed => write!(f, "skewed plain"),
            Inner::Hierarchical { tile, halo, sub } => Schedule::Hierarchical { tile, halo, sub }.fmt(f),
            Inner::Streaming { tile, sub } => Schedule::Streaming { tile, sub }.fmt(f),
            Inner::SkewedStreaming { tile, sub } => write!(f, "skewed {}", Schedule::Streaming { tile, sub }),
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Auto => write!(f, "auto"),
            Schedule::Plain => write!(f, "plain"),
            Schedule::Tiled => write!(f, "tiled"),
            Schedule::Wavefront { tile } => write!(f, "wavefront(tile {tile})"),
            Schedule::Hierarchical { tile, halo, sub } => {
                write!(f, "hierarchical(tile {tile}, halo {halo}, sub {sub})")
            }
            Schedule::Streaming { tile, sub } => write!(f, "streaming(tile {tile}, sub {sub})"),
            Schedule::OutOfCore { slab, height, inner, device_memory } => {
                write!(f, "out-of-core(slab ")?;
                match slab {
                    Some(planes) => write!(f, "{planes}")?,
                    None => write!(f, "auto")?,
                }
                write!(f, ", height {height}, inner {inner}")?;
                if let Some(bytes) = device_memory {
                    write!(f, ", device memory {bytes} B")?;
                }
                write!(f, ")")
            }
        }
    }
}

impl Schedule {
    /// For [`Hierarchical`](Self::Hierarchical): whether a cycle equals `sub` plain
    /// iterations (`halo ≥ sub · radius` on every axis); `true` for
    /// [`Streaming`](Self::Streaming), `false` for other schedules.
    pub fn is_exact_blocking(&self, meta: &StencilMeta) -> bool {
        match *self {
            Schedule::Hierarchical { halo, sub, .. } => meta.radius.iter().all(|&r| halo >= sub.saturating_mul(r)),
            Schedule::Streaming { .. } => true,
            _ => false,
        }
    }

    /// The tiles of a cycle, for [`Hierarchical`](Self::Hierarchical) and
    /// [`Streaming`](Self::Streaming) (whose halo is `sub` times the largest radius).
    pub(crate) fn cycle_sizes(&self, meta: &StencilMeta) -> Option<CycleSizes> {
        match *self {
            Schedule::Hierarchical { tile, halo, sub } => Some(CycleSizes { tile, halo, sub }),
            Schedule::Streaming { tile, sub } => {
                let radius = meta.radius.iter().copied().max().unwrap_or(0);
                Some(CycleSizes { tile, halo: sub.saturating_mul(radius), sub })
            }
            _ => None,
        }
    }

    /// For exact temporal blocking on a grid of `shape` with periodic axes where `periodic`
    /// says: an error when the cycle's halo is wider than the grid's longest axis. The
    /// working regions are clipped to that width (as for any tile or halo beyond the grid),
    /// which on a periodic axis lets the frozen ring reach a core, so the cycle would no
    /// longer equal `sub` plain iterations.
    pub(crate) fn check_wrapped_halo(
        &self,
        meta: &StencilMeta,
        shape: &[usize],
        periodic: impl Fn(usize) -> bool,
    ) -> Result<()> {
        // An out-of-core schedule's inner cycles are exact (`resolve` refuses others).
        let sizes = match *self {
            Schedule::OutOfCore { inner, .. } => inner.cycle_sizes(meta),
            _ => self.cycle_sizes(meta).filter(|_| self.is_exact_blocking(meta)),
        };
        let Some(CycleSizes { halo, .. }) = sizes else {
            return Ok(());
        };
        let largest = shape.iter().copied().max().unwrap_or(0);
        let wraps = (0..shape.len()).any(|a| meta.radius[a] > 0 && periodic(a));
        if halo <= largest || !wraps {
            return Ok(());
        }
        let radius = meta.radius.iter().copied().max().unwrap_or(1).max(1);
        Err(Error::InvalidSchedule {
            schedule: self.to_string(),
            stencil: meta.name,
            reason: format!(
                "the cycle's halo ({halo} points, sub · radius) is wider than the grid's longest axis ({largest} points): \
                 working regions are clipped to that width, and across a periodic edge the cycle would then differ \
                 from `sub` plain iterations; use sub ≤ {}",
                largest / radius
            ),
        })
    }

    /// The schedule a CPU runs for this one: a streaming schedule's exact hierarchical
    /// cycles (the same iterates); the others as they are.
    #[allow(dead_code)]
    pub(crate) fn on_cpu(self, meta: &StencilMeta) -> Schedule {
        match (self, self.cycle_sizes(meta)) {
            (Schedule::Streaming { .. }, Some(CycleSizes { tile, halo, sub })) => {
                Schedule::Hierarchical { tile, halo, sub }
            }
            _ => self,
        }
    }

    /// Replaces `Auto` by the schedule it stands for without measuring (`Plain` for Jacobi
    /// stencils; the solver measures on the GPU) and checks that the schedule fits.
    ///
    /// **Errors**: [`Error::InvalidSchedule`] for a wavefront on a Jacobi stencil or a tile
    /// of 0.
    pub fn resolve(self, meta: &StencilMeta) -> Result<Schedule> {
        let invalid = |reason: &str| Error::InvalidSchedule {
            schedule: self.to_string(),
            stencil: meta.name,
            reason: reason.into(),
        };
        match self {
            Schedule::Auto if meta.is_sweep() => {
                Ok(Schedule::Wavefront { tile: if meta.dim >= 3 { DEFAULT_TILE_3D } else { DEFAULT_TILE_2D } })
            }
            Schedule::Auto => Ok(Schedule::Plain),
            Schedule::Plain => Ok(Schedule::Plain),
            Schedule::Tiled if meta.is_sweep() => {
                Err(invalid("the tiled kernel runs Jacobi passes; a sweep stencil runs `Plain` or `Wavefront`"))
            }
            Schedule::Tiled => Ok(Schedule::Tiled),
            Schedule::Wavefront { .. } if !meta.is_sweep() => Err(invalid(
                "a wavefront orders the points of a `sweep(…)` stencil; a Jacobi stencil has no order to keep, use `Schedule::Plain`",
            )),
            Schedule::Hierarchical { .. } if meta.is_sweep() => Err(invalid(
                "hierarchical subiterations are Jacobi iterations; a sweep stencil runs `Plain` or `Wavefront`",
            )),
            Schedule::Hierarchical { tile: 0, .. } => Err(invalid("the tile must hold at least one point per axis")),
            Schedule::Hierarchical { sub: 0, .. } => Err(invalid("a cycle needs at least one subiteration")),
            Schedule::Hierarchical { halo, .. } if halo < meta.radius.iter().copied().max().unwrap_or(0) => {
                Err(invalid(&format!(
                    "the halo ({halo}) must be at least the stencil's radius ({}), so that a core's neighbours are loaded",
                    meta.radius.iter().copied().max().unwrap_or(0)
                )))
            }
            Schedule::Hierarchical { .. } => Ok(self),
            Schedule::Streaming { .. } if meta.is_sweep() => {
                Err(invalid("streaming cycles are Jacobi iterations; a sweep stencil runs `Plain` or `Wavefront`"))
            }
            Schedule::Streaming { tile: 0, .. } => Err(invalid("the tile must hold at least one point per axis")),
            Schedule::Streaming { sub: 0, .. } => Err(invalid("a cycle needs at least one subiteration")),
            Schedule::Streaming { sub, .. }
                if sub
                    .checked_mul(meta.radius.iter().copied().max().unwrap_or(0))
                    .is_none_or(|h| h > i32::MAX as usize) =>
            {
                Err(invalid("the cycle's halo, sub · radius, is too large"))
            }
            Schedule::Streaming { .. } => Ok(self),
            Schedule::OutOfCore { .. } if meta.is_sweep() => Err(invalid(
                "the out-of-core pyramid runs Jacobi iterations; a sweep stencil runs `Plain` or `Wavefront`",
            )),
            Schedule::OutOfCore { height: 0, .. } => Err(invalid("a pass needs a height of at least one iteration")),
            Schedule::OutOfCore { slab: Some(0), .. } => Err(invalid("a slab must hold at least one plane")),
            Schedule::OutOfCore { device_memory: Some(0), .. } => {
                Err(invalid("a device-memory limit of 0 bytes leaves no room for a slab"))
            }
            Schedule::OutOfCore { inner, .. } => inner.check(meta).map(|()| self).map_err(|e| match e {
                Error::InvalidSchedule { reason, .. } => invalid(&format!("inner schedule: {reason}")),
                other => other,
            }),
            Schedule::Wavefront { tile: 0 } => Err(invalid("the tile must hold at least one point per axis")),
            Schedule::Wavefront { tile } => Ok(Schedule::Wavefront { tile }),
        }
    }
}

/// Where the iterations run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// The rayon CPU twin, on rayon's global thread pool.
    #[default]
    Cpu,
    /// CUDA device `device` (0 is the first), with kernels JIT-compiled by NVRTC.
    Cuda {
        /// The device ordinal.
        device: usize,
    },
    /// CUDA device 0 when a driver, NVRTC and a device are usable and the stencil runs
    /// there; otherwise the CPU, with a one-line notice on standard error saying why. On the
    /// GPU, a [`Plain`](Schedule::Plain) run whose grid does not fit the device runs
    /// [`OutOfCore`](Schedule::OutOfCore) instead (the same iterates), and the report says so.
    Auto,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backend::Cpu => write!(f, "cpu ({} threads)", rayon::current_num_threads()),
            Backend::Cuda { device } => write!(f, "cuda device {device}"),
            Backend::Auto => write!(f, "auto"),
        }
    }
}
