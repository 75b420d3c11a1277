//! The GPU half of [`Schedule::OutOfCore`](crate::Schedule::OutOfCore): the pyramid of
//! papers 000/001 (and skewed slabs) over the slabs of `plan::slabs`, with the grid in
//! page-locked host memory ([`GpuPasses`]). In one process the run-time model's constants
//! are measured at start-up (`probe.rs`), for the report and, for `Auto`, to choose the
//! height and the slab width.

mod ahead;
mod check;
mod order;
mod probe;
mod pyramid;
mod skewed;
mod upload;

use std::time::Duration;

pub(crate) use pyramid::Pyramid;

use super::device::{Gpu, Pinned, driver_error};
use super::module::JitTime;
use super::options::CudaOptions;
use crate::engine::{Difference, Ghosts, PassPlan, Passes, Written};
use crate::plan::Layout;
use crate::plan::fill::Fill;
use crate::plan::model::{self, ModelReport};
use crate::plan::slabs::{Arrays, Config, Skew, SlabRequest, Slabs, slabs_for};
use crate::plan::stream::StreamBuild;
use crate::{Error, Grid, Inner, Real, Result, Stencil};

/// What the model knows of a run: the grid's shape, the measured constants and the limit.
struct Model {
    shape: model::Shape,
    costs: model::Costs,
    limit: usize,
    /// The streaming cycles timed by the probe, and their seconds per point and iteration.
    streaming: Option<(Inner, f64)>,
    /// Whether the same cycles may run inside skewed slabs (one unknown, Dirichlet sides,
    /// cycles of two or more iterations: [`check_skewed_streaming`]).
    skewed_streaming: bool,
    /// The inner iterations chosen.
    inner: Inner,
}

/// How a run's passes are set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Setup<const N: usize> {
    /// One process: the model's constants are measured.
    pub alone: bool,
    /// `Auto` chose the schedule: the height and the slab width are the model's best.
    pub model_chooses: bool,
    /// Test hook: fail before running slab `n` of a pass.
    pub fail_after: Option<usize>,
    /// The boundary fill of the grid.
    pub fill: Fill<N>,
}

/// Out-of-core passes on one GPU over slabs of the planes `own` of the user's grid.
pub(crate) struct GpuPasses<'g, 'i, S: Stencil<N>, T: Real, const N: usize> {
    pyramid: Pyramid<'g, S, T, N>,
    inputs: Vec<Option<&'i [T]>>,
    _pinned: Pinned,
    model: Option<Model>,
    /// Time spent getting the kernels, for the report.
    pub jit: JitTime,
}

impl<'g, 'i, S: Stencil<N>, T: Real, const N: usize> GpuPasses<'g, 'i, S, T, N> {
    /// Sets up the passes over slabs of the own planes `config.own` of `grids` (every
    /// unknown's, declaration order; page-locked for the run): of `config.slab` planes, or
    /// the widest whose buffers fit `config.device_memory` (`None`: 90 % of what `gpu` has
    /// free), with `config.height` iterations at most, `config.inner` ones in each slab.
    pub fn new(
        gpu: &'g Gpu,
        options: &CudaOptions,
        grids: &mut [&mut Grid<T, N>],
        inputs: Vec<Option<&'i [T]>>,
        params: &S::Params<T>,
        config: Config,
        setup: Setup<N>,
    ) -> Result<Self> {
        let meta = S::META;
        let layout = Layout::new(meta, grids[0].shape())?;
        let arrays = Arrays::of::<S, N>(inputs.iter().flatten().count());
        let limit = match config.device_memory {
            Some(limit) => limit,
            None => gpu.ctx.mem_get_info().map_err(driver_error("reading the free device memory"))?.0 / 10 * 9,
        };
        let slabs_of = |height, slab, inner: Inner| {
            let request = SlabRequest { slab, height, device_memory: Some(limit), skew: Skew::of(inner) };
            let slabs = slabs_for(&layout, config.own.clone(), request, arrays, T::BYTES)?;
            check_skewed_streaming::<S, N>(&slabs, inner, &setup.fill)?;
            Ok::<_, Error>(slabs)
        };
        // A configuration given in full is checked before anything runs.
        let given = if setup.model_chooses { None } else { Some(slabs_of(config.height, config.slab, config.inner)?) };
        let mut host: Vec<&[T]> = inputs.iter().flatten().copied().collect();
        host.extend(grids.iter().map(|g| g.as_slice()));
        let (pinned, refused) = Pinned::register(gpu, &host)?;
        if let Some(reason) = refused {
            log::warn!("the grid could not be page-locked ({reason}); copies will be slower");
        }
        let shape = model::Shape {
            planes: layout.shape[0],
            radius: meta.radius[0],
            plane_len: layout.shape[1..].iter().product(),
            plane_interior: (1..N).map(|a| layout.shape[a] - 2 * meta.radius[a]).product(),
            arrays,
            elem: T::BYTES,
        };
        let mut probe_jit = None;
        let mut model = None;
        let mut inner = config.inner;
        if setup.alone {
            let grid = grids[0].shape();
            let per_buffer = limit / arrays.per_slot();
            let host = grids[0].as_mut_slice();
            // `Auto` weighs streaming cycles inside the slabs against plain iterations.
            let streaming = streaming_candidate::<S, N>((&setup, &config), gpu, options, grid, T::BYTES);
            let planes = probe::Planes { host, shape: &shape, grid, per_buffer };
            let (costs, cycle_update, jit) = probe::probe::<S, T, N>(gpu, options, planes, params, streaming.as_ref())?;
            probe_jit = Some(jit);
            let streaming = streaming
                .zip(cycle_update)
                .map(|(c, update)| (Inner::Streaming { tile: c.sizes.tile, sub: c.sizes.sub }, update));
            let skewed_streaming = skewed_streaming_runs::<S, N>(&setup.fill);
            model = Some(Model { shape, costs, limit, streaming, skewed_streaming, inner });
        }
        let slabs = match (given, &mut model) {
            (Some(slabs), _) => slabs,
            (None, Some(model)) => {
                let (height, width) = model.choose::<T>()?;
                inner = model.inner;
                slabs_of(height, Some(width), inner)?
            }
            (None, None) => slabs_of(config.height, config.slab, inner)?,
        };
        let (mut pyramid, jit) = Pyramid::<S, T, N>::new(gpu, options, slabs, inner, setup.fill, &inputs, params)?;
        pyramid.fail_after = setup.fail_after;
        // The probe's module (compiled for its few planes) is part of the start-up too.
        let jit = probe_jit.map_or(jit, |probe| jit.and(probe));
        Ok(Self { pyramid, inputs, _pinned: pinned, model, jit })
    }

    /// The slabs the passes run over.
    pub fn slabs(&self) -> &Slabs {
        self.pyramid.slabs()
    }

    /// How a slab's iterations run: as asked, or as the model chose for `Auto`.
    pub fn inner(&self) -> Inner {
        self.pyramid.inner
    }

    /// The model's constants, its prediction for passes of `lens` iterations, and its best
    /// configuration under the same memory limit (one process only).
    pub fn model_report(&self, lens: &[usize]) -> Option<ModelReport> {
        let model = self.model.as_ref()?;
        let costs = model.costs_of(self.inner());
        let predicted = model::predict(&model.shape, self.slabs(), lens, &costs);
        let done: usize = lens.iter().sum();
        let best = model::best(&model.shape, model.limit, &costs, Skew::of(self.inner()))?;
        let (height, width, per_iteration) = best;
        let time = Duration::try_from_secs_f64(per_iteration * done as f64).unwrap_or(Duration::MAX);
        Some(ModelReport { costs, streaming: model.streaming, predicted, best: (height, width, time) })
    }
}

impl Model {
    /// The constants of slabs whose iterations run as `inner`: a streaming cycle's cost
    /// per point and iteration instead of the plain kernel's, in pyramids or skewed slabs.
    fn costs_of(&self, inner: Inner) -> model::Costs {
        match (self.streaming, inner) {
            (Some((Inner::Streaming { tile, sub }, update)), Inner::Streaming { tile: t, sub: s })
            | (Some((Inner::Streaming { tile, sub }, update)), Inner::SkewedStreaming { tile: t, sub: s })
                if (tile, sub) == (t, s) =>
            {
                model::Costs { update, ..self.costs }
            }
            _ => self.costs,
        }
    }

    /// The inner iterations `Auto` weighs: plain pyramids, skewed slabs, and the probed
    /// streaming cycles in pyramids and, where they may run there, in skewed slabs.
    fn options(&self) -> Vec<Inner> {
        let mut options = vec![Inner::Plain, Inner::Skewed];
        if let Some((Inner::Streaming { tile, sub }, _)) = self.streaming {
            options.push(Inner::Streaming { tile, sub });
            if self.skewed_streaming && sub >= 2 {
                options.push(Inner::SkewedStreaming { tile, sub });
            }
        }
        options
    }

    /// `Auto`: the height and slab width of the best of [`options`](Self::options) by the
    /// model (which of them it is, in `inner`).
    fn choose<T: Real>(&mut self) -> Result<(usize, usize)> {
        let best = self
            .options()
            .into_iter()
            .filter_map(|inner| {
                let skew = Skew::of(inner);
                let (height, width, seconds) = model::best(&self.shape, self.limit, &self.costs_of(inner), skew)?;
                Some((height, width, seconds, inner))
            })
            .min_by(|a, b| a.2.total_cmp(&b.2));
        let Some((height, width, _, inner)) = best else {
            let smallest = Slabs::new(self.shape.planes, self.shape.radius, self.shape.plane_len, 1, 1);
            return Err(Error::DeviceMemory {
                needed: smallest.buffer_bytes(self.shape.arrays, T::BYTES),
                limit: self.limit,
                reason: smallest.describe_buffers(self.shape.arrays),
            });
        };
        self.inner = inner;
        Ok((height, width))
    }
}

/// Whether the device runs streaming cycles inside skewed slabs for this stencil and fill:
/// one unknown with Dirichlet sides (the cases its skirts are built for).
fn skewed_streaming_runs<S: Stencil<N>, const N: usize>(fill: &Fill<N>) -> bool {
    S::META.unknowns.len() == 1 && !fill.any()
}

/// For streaming cycles inside skewed slabs: an error unless cycles are longer than one
/// iteration, the stencil has one unknown, every side is Dirichlet (the cases the device's
/// skirts are built for), and every slab that sets
/// planes aside for the next holds them in its levels ([`Slabs::hold_cycle_skirts`]).
fn check_skewed_streaming<S: Stencil<N>, const N: usize>(slabs: &Slabs, inner: Inner, fill: &Fill<N>) -> Result<()> {
    let Inner::SkewedStreaming { sub, .. } = inner else { return Ok(()) };
    let refuse = |reason: String| Error::InvalidSchedule {
        schedule: format!("out-of-core(inner {inner})"),
        stencil: S::META.name,
        reason,
    };
    if sub == 1 {
        return Err(refuse(
            "cycles of one iteration inside skewed slabs are its plain levels: use `Inner::Skewed`".into(),
        ));
    }
    if !skewed_streaming_runs::<S, N>(fill) {
        return Err(refuse(
            "streaming cycles inside skewed slabs run on the GPU for one unknown with Dirichlet sides; use \
             `Inner::Streaming` (pyramids of streaming cycles) or `Inner::Skewed`"
                .into(),
        ));
    }
    if slabs.hold_cycle_skirts(slabs.height, sub) {
        return Ok(());
    }
    Err(refuse(format!(
        "skewed streaming cycles need every slab but the last to hold 2 · sub · radius = {} planes below its top \
             at every iteration of a pass, or (in one process) to reach the interior's first plane (slabs of {} \
             planes, height {}): use wider slabs or a lower height",
        2 * sub * slabs.radius,
        slabs.own.first().map_or(0, |r| r.len()),
        slabs.height
    )))
}

/// The streaming cycles `Auto` weighs for the slabs' iterations (it chooses the schedule,
/// asked for plain iterations, in a grid of 2 or 3 axes whose tiles have a core): `Auto`'s
/// streaming candidate in core, built for the probe's planes, if its cycles fit the device
/// (elements of `elem` bytes).
fn streaming_candidate<S: Stencil<N>, const N: usize>(
    (setup, config): (&Setup<N>, &Config),
    gpu: &Gpu,
    options: &CudaOptions,
    grid: [usize; N],
    elem: usize,
) -> Option<probe::Cycles> {
    if !setup.model_chooses || config.inner != Inner::Plain {
        return None;
    }
    let sizes = crate::plan::autotune::streaming_candidate(S::META)?.cycle_sizes(S::META)?;
    let edges = setup.fill.cycle_edges(&(0..grid[0])).flags(S::KERNELS.axes);
    // The probe's few planes: its regions meet the grid's edges on axes 1 and 2 only.
    let edges: [i32; 3] = std::array::from_fn(|k| if S::KERNELS.axes[0] == k { 0 } else { edges[k] });
    // Built for the whole grid: the regions' extents on axes 1 and 2 are those of any planes.
    let dims = S::KERNELS.view(&grid, 1);
    let build = StreamBuild::new(S::KERNELS, dims, sizes, options.stream_block_threads(), edges, elem);
    if let Err(e) = build.cycle(S::KERNELS, dims, sizes, elem, gpu.limits(), edges) {
        log::info!("streaming cycles inside the slabs are not weighed: {e}");
        return None;
    }
    Some(probe::Cycles { build, sizes, edges })
}

impl<S: Stencil<N>, T: Real, const N: usize> Passes<T> for GpuPasses<'_, '_, S, T, N> {
    fn pass(
        &mut self,
        grids: &mut [&mut [T]],
        pass: PassPlan,
        ghosts: Option<Ghosts<'_, T>>,
        written: Option<Written<'_, T>>,
    ) -> std::result::Result<Option<Difference>, (usize, Error)> {
        self.pyramid.pass(grids, &self.inputs, pass, written, ghosts)
    }

    fn synchronize(&mut self) -> Result<()> {
        self.pyramid.synchronize()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(update: f64, streaming: f64) -> Model {
        let shape = model::Shape {
            planes: 802,
            radius: 1,
            plane_len: 802 * 802,
            plane_interior: 800 * 800,
            arrays: Arrays { unknowns: 1, fields: 1 },
            elem: 4,
        };
        // PCIe-like copies, a device copy at a few TB/s.
        let costs = model::Costs { up: 1.0 / 25e9, down: 1.0 / 25e9, update, device_copy: 1.0 / 2e12 };
        let inner = Inner::Streaming { tile: 24, sub: 4 };
        // Room for slabs of the whole grid: no pyramid recomputes much.
        let streaming = Some((inner, streaming));
        Model { shape, costs, limit: 12 << 30, streaming, skewed_streaming: false, inner: Inner::Plain }
    }

    #[test]
    fn auto_takes_streaming_cycles_where_the_model_finds_them_faster() {
        let mut faster = model(5e-12, 3e-12);
        faster.choose::<f32>().unwrap();
        assert_eq!(faster.inner, Inner::Streaming { tile: 24, sub: 4 });
        assert_eq!(faster.costs_of(faster.inner).update, 3e-12);
        let mut slower = model(5e-12, 9e-12);
        slower.choose::<f32>().unwrap();
        assert!(matches!(slower.inner, Inner::Plain | Inner::Skewed), "{}", slower.inner);
        assert_eq!(slower.costs_of(slower.inner).update, 5e-12);
    }

    #[test]
    fn auto_takes_skewed_streaming_cycles_where_they_may_run_and_their_skirts_fit() {
        // A limit of about 90 % of u and f: pyramids recompute, skewed slabs do not.
        let tight = |skewed_streaming| Model { limit: 4 << 30, skewed_streaming, ..model(5e-12, 3e-12) };
        let mut allowed = tight(true);
        let (height, width) = allowed.choose::<f32>().unwrap();
        assert_eq!(allowed.inner, Inner::SkewedStreaming { tile: 24, sub: 4 });
        assert_eq!(allowed.costs_of(allowed.inner).update, 3e-12);
        let slabs = Slabs::new(802, 1, 802 * 802, height, width).skewing(Skew::of(allowed.inner));
        assert!(slabs.hold_cycle_skirts(height, 4), "height {height}, slab {width}");
        // Systems and periodic or Neumann sides: not weighed.
        let mut refused = tight(false);
        refused.choose::<f32>().unwrap();
        assert_ne!(refused.inner, Inner::SkewedStreaming { tile: 24, sub: 4 });
    }
}
