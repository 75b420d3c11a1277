//! Finding and opening a GPU. Nothing here panics when there is no driver or no device:
//! cudarc's dynamic loading would, so the libraries are looked for first.

use std::sync::Arc;

use std::ffi::c_void;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits, sys};

use crate::plan::launch::Limits;

use crate::{Error, Result};

/// Whether the CUDA driver library (libcuda) can be loaded.
pub fn driver_available() -> bool {
    // SAFETY: only tries to open the shared library; nothing from it is called.
    unsafe { sys::is_culib_present() }
}

/// Number of CUDA devices; 0 when there is no driver or it reports an error.
pub fn device_count() -> usize {
    if !driver_available() {
        return 0;
    }
    CudaContext::device_count().map_or(0, |n| n.max(0) as usize)
}

/// Why no GPU can be used, or `None` when device `ordinal` can be.
pub fn unusable_reason(ordinal: usize) -> Option<String> {
    if !driver_available() {
        return Some("the CUDA driver (libcuda.so) was not found".into());
    }
    if !super::nvrtc_available() {
        return Some("the NVRTC library (libnvrtc.so) was not found".into());
    }
    match device_count() {
        0 => Some("the CUDA driver reports no device".into()),
        n if ordinal >= n => Some(format!("device {ordinal} was asked for, but there are {n}")),
        _ => None,
    }
}

/// Device `ordinal`'s architecture for NVRTC (`sm_90`), read without a context.
fn device_arch(ordinal: usize) -> Option<String> {
    use sys::CUdevice_attribute::{
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR as MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR as MINOR,
    };
    let device = cudarc::driver::result::device::get(ordinal as i32).ok()?;
    // SAFETY: `device` is a valid device handle of the initialised driver.
    let (major, minor) = unsafe {
        (
            cudarc::driver::result::device::get_attribute(device, MAJOR).ok()?,
            cudarc::driver::result::device::get_attribute(device, MINOR).ok()?,
        )
    };
    Some(format!("sm_{major}{minor}"))
}

pub(crate) fn driver_error(what: &str) -> impl FnOnce(cudarc::driver::DriverError) -> Error + '_ {
    move |e| Error::Cuda { what: what.to_owned(), message: format!("{e:?}") }
}

/// [`driver_error`] for an allocation of `bytes` on device `device`: the driver's
/// out-of-memory code becomes [`Error::OutOfMemory`].
fn allocation_error(what: &str, bytes: usize, device: usize) -> impl FnOnce(cudarc::driver::DriverError) -> Error + '_ {
    move |e| match e.0 {
        sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
            Error::OutOfMemory { what: what.to_owned(), bytes, memory: crate::MemoryKind::Device { device } }
        }
        _ => Error::Cuda { what: format!("allocating {what}"), message: format!("{e:?}") },
    }
}

/// An open device: its context, a stream, and what the JIT needs to know about it.
pub struct Gpu {
    /// The device's ordinal.
    pub ordinal: usize,
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    /// The device's name, e.g. "NVIDIA H200".
    pub name: String,
    /// The device's architecture for NVRTC, e.g. "sm_90".
    pub arch: String,
    /// Compute capability, major version (8 on Ampere, 9 on Hopper).
    pub major: u32,
    /// The driver's CUDA version, e.g. 13000.
    pub driver_version: i32,
    /// Largest number of threads in one block.
    pub max_threads_per_block: u32,
    /// Largest grid size on the y and z axes.
    pub max_grid_yz: u32,
    /// Largest shared memory of one block in bytes, dynamic memory opted in above the
    /// default 48 KiB (227 KiB on Hopper).
    pub max_shared_per_block: usize,
    /// Streaming multiprocessors.
    pub multiprocessors: usize,
}

impl Gpu {
    /// (free, total) device memory in bytes, or the driver's error.
    pub fn free_memory(&self) -> std::result::Result<(usize, usize), String> {
        self.ctx.mem_get_info().map_err(|e| format!("{e:?}"))
    }

    /// The device's limits on a launch.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            max_threads: self.max_threads_per_block as usize,
            max_grid_yz: self.max_grid_yz as usize,
            max_shared: self.max_shared_per_block,
            multiprocessors: self.multiprocessors,
            major: self.major as usize,
        }
    }

    /// `len` zeros of `T` on the device, ordered on `stream`; `what` names them in errors.
    pub(crate) fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        stream: &Arc<CudaStream>,
        len: usize,
        what: &str,
    ) -> Result<CudaSlice<T>> {
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        stream.alloc_zeros::<T>(len).map_err(allocation_error(what, bytes, self.ordinal))
    }

    /// A device copy of `data`, ordered on `stream`; `what` names it in errors.
    pub(crate) fn upload<T: DeviceRepr>(
        &self,
        stream: &Arc<CudaStream>,
        data: &[T],
        what: &str,
    ) -> Result<CudaSlice<T>> {
        stream.clone_htod(data).map_err(allocation_error(what, std::mem::size_of_val(data), self.ordinal))
    }

    /// Opens device `ordinal`.
    ///
    /// **Errors**: [`Error::NoGpu`] when there is no usable driver, NVRTC or device,
    /// [`Error::Cuda`] when the driver fails.
    pub fn open(ordinal: usize) -> Result<Self> {
        if let Some(reason) = unusable_reason(ordinal) {
            return Err(Error::NoGpu { reason });
        }
        // The compiler starts while the context is created (the driver is initialised by now).
        if let Some(arch) = device_arch(ordinal) {
            super::nvrtc::prepare(&arch);
        }
        let ctx = CudaContext::new(ordinal).map_err(driver_error("creating a context"))?;
        let stream = ctx.default_stream();
        let name = ctx.name().map_err(driver_error("reading the device name"))?;
        let (major, minor) = ctx.compute_capability().map_err(driver_error("reading the compute capability"))?;
        let attribute = |a| ctx.attribute(a).map_err(driver_error("reading a device attribute"));
        let max_threads_per_block =
            attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32;
        let max_grid_yz = attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?
            .min(attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?)
            as u32;
        let max_shared_per_block =
            attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as usize;
        let multiprocessors =
            attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1) as usize;
        let mut driver_version = 0;
        // SAFETY: the driver library is loaded (checked above) and the pointer is valid.
        unsafe { sys::cuDriverGetVersion(&mut driver_version) }
            .result()
            .map_err(driver_error("reading the driver version"))?;
        Ok(Self {
            ordinal,
            ctx,
            stream,
            name,
            arch: format!("sm_{major}{minor}"),
            major: major as u32,
            driver_version,
            max_threads_per_block,
            max_grid_yz,
            max_shared_per_block,
            multiprocessors,
        })
    }
}

/// Host memory registered with the driver (page-locked) for the run, unregistered on drop.
pub(crate) struct Pinned {
    addresses: Vec<usize>,
}

impl Pinned {
    /// Registers every non-empty slice; a slice the driver refuses stays pageable (its
    /// copies are then staged by the driver and slower), and the reason is returned.
    pub(crate) fn register<T>(gpu: &Gpu, slices: &[&[T]]) -> Result<(Self, Option<String>)> {
        gpu.ctx.bind_to_thread().map_err(driver_error("binding the context"))?;
        let mut pinned = Self { addresses: Vec::new() };
        let mut refused = None;
        for slice in slices.iter().filter(|s| !s.is_empty()) {
            let address = slice.as_ptr() as *mut c_void;
            // SAFETY: the range is a live allocation of the caller's, which outlives this
            // guard (it is dropped at the end of the run, before the grids can be); the
            // driver only pins its pages, it does not write to them.
            let result = unsafe { sys::cuMemHostRegister_v2(address, std::mem::size_of_val(*slice), 0) };
            match result {
                sys::CUresult::CUDA_SUCCESS => pinned.addresses.push(address as usize),
                sys::CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => {}
                other => refused = Some(format!("{other:?}")),
            }
        }
        Ok((pinned, refused))
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        for &address in &self.addresses {
            // SAFETY: registered above with the context still current on this thread.
            unsafe { sys::cuMemHostUnregister(address as *mut c_void) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drivers_out_of_memory_code_is_an_out_of_memory_error() {
        let oom = cudarc::driver::DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY);
        let e = allocation_error("a grid", 1 << 40, 3)(oom);
        assert!(
            matches!(&e, Error::OutOfMemory { bytes, memory: crate::MemoryKind::Device { device: 3 }, .. } if *bytes == 1 << 40),
            "{e}"
        );
        assert!(e.to_string().contains("a grid needs 1.0 TiB"), "{e}");
    }
}
