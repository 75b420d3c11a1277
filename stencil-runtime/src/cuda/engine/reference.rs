//! The change since the last check (`Residual::SinceLastCheck`) on the device: every
//! unknown's iterate at the last check kept in a buffer of its own, and a reduction of the
//! next iterate's difference from it over the measured planes' interior points, into the
//! same per-block entries as the measuring kernels'.

use std::ops::Range;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::buffers::untracked;
use super::{GpuEngine, MEASURED_LAUNCHES};
use crate::cuda::cache;
use crate::cuda::device::driver_error;
use crate::cuda::nvrtc::{CompileOptions, Mode};
use crate::{Real, Result, Stencil};

/// The reduction: per block, max |next − reference| and Σ (next − reference)² (in double) over
/// the interior points of `planes` planes of `n1 × n2` points (outer layers `r1`, `r2`), and
/// the smallest flat index whose next value is NaN or ±∞ (atomicMin).
const CHANGE: &str = r#"
extern "C" __global__ void stencil_change(
    const REAL* __restrict__ next, const REAL* __restrict__ reference, const long long planes, const long long n1,
    const long long n2, const long long r1, const long long r2, double* __restrict__ block_max,
    double* __restrict__ block_sum, unsigned long long* __restrict__ first_bad) {
    const long long m1 = n1 - 2 * r1, m2 = n2 - 2 * r2, total = planes * m1 * m2;
    double my_max = 0.0, my_sum = 0.0;
    for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < total; k += (long long)gridDim.x * blockDim.x) {
        const long long i2 = k % m2, rest = k / m2, i1 = rest % m1, p = rest / m1;
        const long long at = (p * n1 + i1 + r1) * n2 + i2 + r2;
        const REAL value = next[at];
        if (!isfinite(value)) {
            atomicMin(first_bad, (unsigned long long)at);
            continue;
        }
        const double d = (double)(value - reference[at]);
        my_sum += d * d;
        my_max = fabs(d) > my_max ? fabs(d) : my_max;
    }
    __shared__ double warp_max[32], warp_sum[32];
    for (int offset = 16; offset > 0; offset /= 2) {
        const double other_max = __shfl_down_sync(0xffffffffu, my_max, offset);
        my_sum += __shfl_down_sync(0xffffffffu, my_sum, offset);
        my_max = other_max > my_max ? other_max : my_max;
    }
    if (threadIdx.x % 32 == 0) {
        warp_max[threadIdx.x / 32] = my_max;
        warp_sum[threadIdx.x / 32] = my_sum;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double block_maximum = 0.0, block_total = 0.0;
        for (int w = 0; w < (int)blockDim.x / 32; ++w) {
            block_maximum = warp_max[w] > block_maximum ? warp_max[w] : block_maximum;
            block_total += warp_sum[w];
        }
        block_max[blockIdx.x] = block_maximum;
        block_sum[blockIdx.x] = block_total;
    }
}
"#;

/// Threads per block of the reduction (a multiple of the warp).
const THREADS: u32 = 256;
/// Blocks of one reduction at most (a grid-stride loop covers the rest): enough to keep the
/// device's memory busy, few enough for the block entries.
const MAX_BLOCKS: usize = 1024;

/// Every unknown's iterate at the last check, and the kernel that measures the change.
pub(super) struct Reference<T> {
    kernel: CudaFunction,
    grids: Vec<CudaSlice<T>>,
}

impl<S: Stencil<N>, T: Real, const N: usize> GpuEngine<'_, S, T, N> {
    /// Copies the current iterate of every unknown into the reference buffers (allocated
    /// the first time, with the reduction's kernel), and makes room for the reduction's
    /// entries in the block arrays.
    pub(super) fn keep(&mut self) -> Result<()> {
        let gpu = &self.gpu;
        let options = CompileOptions::new::<T>(Mode::Exact, gpu.arch.clone());
        let compiled = cache::get("stencil_change", CHANGE, &options, gpu.driver_version)?;
        let module = gpu
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin.0))
            .map_err(driver_error("loading the change kernel"))?;
        let kernel = module.load_function("stencil_change").map_err(driver_error("finding the change kernel"))?;
        // The first exchange's ghost planes may still be arriving on the copy stream.
        self.copy.synchronize().map_err(driver_error("waiting for the device"))?;
        let stream = &self.compute;
        let currents = std::iter::once(&self.current).chain(self.more.iter().map(|m| &m.current));
        let entries = MEASURED_LAUNCHES * (1 + self.more.len()) * MAX_BLOCKS;
        let (grids, arrays) = untracked(gpu, || {
            let grids = currents
                .map(|current| stream.clone_dtod(current).map_err(driver_error("keeping the reference iterate")))
                .collect::<Result<Vec<_>>>()?;
            let arrays = match self.block_max.len() < entries {
                true => Some((
                    gpu.alloc_zeros::<f64>(stream, entries, "the residual's per-block results")?,
                    gpu.alloc_zeros::<f64>(stream, entries, "the residual's per-block results")?,
                )),
                false => None,
            };
            Ok((grids, arrays))
        })?;
        if let Some((block_max, block_sum)) = arrays {
            (self.block_max, self.block_sum) = (block_max, block_sum);
        }
        self.reference = Some(Reference { kernel, grids });
        Ok(())
    }

    /// Queues the measurement of the next iterate's change from the reference over the
    /// interior points of `planes` (every unknown, one measured launch), then the copy of
    /// those planes of the next iterate into the reference.
    pub(super) fn changed_since_reference(&mut self, planes: Range<usize>) -> Result<()> {
        let elements = self.elements(&planes);
        let (n1, n2, r1, r2) = match N {
            1 => (1, 1, 0, 0),
            2 => (1, self.shape[1], 0, S::META.radius[1]),
            _ => (self.shape[1], self.shape[2], S::META.radius[1], S::META.radius[2]),
        };
        let points = planes.len() * (n1 - 2 * r1) * (n2 - 2 * r2);
        let blocks = points.div_ceil(THREADS as usize).clamp(1, MAX_BLOCKS);
        let unknowns = 1 + self.more.len();
        let all = self.entries(unknowns * blocks)?;
        let slot = self.measured.len();
        let Some(reference) = self.reference.as_mut() else { return Ok(()) };
        let nexts = std::iter::once(&self.next).chain(self.more.iter().map(|m| &m.next));
        let cfg = LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let sizes = [planes.len(), n1, n2, r1, r2].map(|v| v as i64);
        for (k, (next, grid)) in nexts.zip(&mut reference.grids).enumerate() {
            let entries = all.start + k * blocks..all.start + (k + 1) * blocks;
            let next = next.slice(elements.clone());
            let mut kept = grid.slice_mut(elements.clone());
            let mut block_max = self.block_max.slice_mut(entries.clone());
            let mut block_sum = self.block_sum.slice_mut(entries);
            let mut first_bad = self.first_bad.slice_mut(slot..slot + 1);
            let mut launch = self.compute.launch_builder(&reference.kernel);
            launch.arg(&next).arg(&mut kept);
            for size in &sizes {
                launch.arg(size);
            }
            launch.arg(&mut block_max).arg(&mut block_sum).arg(&mut first_bad);
            // SAFETY: `next` and `kept` hold the planes' elements, whose interior points
            // are all the kernel reads; each block writes its own entry of the arrays.
            unsafe { launch.launch(cfg) }.map_err(driver_error("launching the change kernel"))?;
            self.compute.memcpy_dtod(&next, &mut kept).map_err(driver_error("keeping the reference iterate"))?;
        }
        self.measured.push((elements.start, all));
        Ok(())
    }
}
