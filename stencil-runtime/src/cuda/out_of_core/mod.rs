//! The GPU half of [`Schedule::OutOfCore`](crate::Schedule::OutOfCore): the pyramid of
//! papers 000/001 (and skewed slabs) over the slabs of `plan::slabs`, with the grid in
//! page-locked host memory ([`GpuPasses`]). In one process the run-time model's constants
//! are measured at start-up (`probe.rs`), for the report and, for `Auto`, to choose the
//! height and the slab width.

mod probe;
mod pyramid;
mod skewed;

use std::time::Duration;

pub(crate) use pyramid::Pyramid;

use super::device::{Gpu, Pinned, driver_error};
use super::module::JitTime;
use super::options::CudaOptions;
use crate::engine::{Difference, Ghosts, PassPlan, Passes, Written};
use crate::plan::Layout;
use crate::plan::fill::Fill;
use crate::plan::model::{self, ModelReport};
use crate::plan::slabs::{Arrays, Config, SlabRequest, Slabs, slabs_for};
use crate::{Error, Grid, Inner, Real, Result, Stencil};

/// What the model knows of a run: the grid's shape, the measured constants and the limit.
struct Model {
    shape: model::Shape,
    costs: model::Costs,
    limit: usize,
    skewed: bool,
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
        let slabs_of = |height, slab, skewed| {
            let request = SlabRequest { slab, height, device_memory: Some(limit), skewed };
            slabs_for(&layout, config.own.clone(), request, arrays, T::BYTES)
        };
        let mut skewed = config.inner == Inner::Skewed;
        // A configuration given in full is checked before anything runs.
        let given = if setup.model_chooses { None } else { Some(slabs_of(config.height, config.slab, skewed)?) };
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
        if setup.alone {
            let grid = grids[0].shape();
            let per_buffer = limit / arrays.per_slot();
            let host = grids[0].as_mut_slice();
            let (costs, jit) = probe::probe::<S, T, N>(gpu, options, host, &shape, grid, per_buffer, params)?;
            probe_jit = Some(jit);
            model = Some(Model { shape, costs, limit, skewed });
        }
        let slabs = match (given, &mut model) {
            (Some(slabs), _) => slabs,
            (None, Some(model)) => {
                let (height, width) = model.choose::<T>()?;
                skewed = model.skewed;
                slabs_of(height, Some(width), skewed)?
            }
            (None, None) => slabs_of(config.height, config.slab, skewed)?,
        };
        let inner = if skewed { Inner::Skewed } else { config.inner };
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

    /// The model's constants, its prediction for passes of `lens` iterations, and its best
    /// configuration under the same memory limit (one process only).
    pub fn model_report(&self, lens: &[usize]) -> Option<ModelReport> {
        let model = self.model.as_ref()?;
        let predicted = model::predict(&model.shape, self.slabs(), lens, &model.costs);
        let done: usize = lens.iter().sum();
        let best = model::best(&model.shape, model.limit, &model.costs, self.slabs().skewed)?;
        let (height, width, per_iteration) = best;
        let time = Duration::try_from_secs_f64(per_iteration * done as f64).unwrap_or(Duration::MAX);
        Some(ModelReport { costs: model.costs, predicted, best: (height, width, time) })
    }
}

impl Model {
    /// `Auto`: the height and slab width of the better of the pyramid and the skewed slabs,
    /// by the model (which of the two it is, in `skewed`).
    fn choose<T: Real>(&mut self) -> Result<(usize, usize)> {
        let best = |skewed| model::best(&self.shape, self.limit, &self.costs, skewed);
        self.skewed = match (best(false), best(true)) {
            (Some((.., p)), Some((.., k))) => k <= p,
            (None, Some(_)) => true,
            _ => false,
        };
        let (height, width, _) = best(self.skewed).ok_or_else(|| {
            let smallest = Slabs::new(self.shape.planes, self.shape.radius, self.shape.plane_len, 1, 1);
            Error::DeviceMemory {
                needed: smallest.buffer_bytes(self.shape.arrays, T::BYTES),
                limit: self.limit,
                reason: smallest.describe_buffers(self.shape.arrays),
            }
        })?;
        Ok((height, width))
    }
}

impl<S: Stencil<N>, T: Real, const N: usize> Passes<T> for GpuPasses<'_, '_, S, T, N> {
    fn pass(
        &mut self,
        grids: &mut [&mut [T]],
        pass: PassPlan,
        ghosts: Option<Ghosts<'_, T>>,
        written: Option<Written<'_>>,
    ) -> std::result::Result<Option<Difference>, (usize, Error)> {
        self.pyramid.pass(grids, &self.inputs, pass, written, ghosts)
    }

    fn synchronize(&mut self) -> Result<()> {
        self.pyramid.synchronize()
    }
}
