//! Fallible allocation: every buffer whose size comes from the user (grids, solver buffers,
//! out-of-core workspaces, staging, device buffers) is allocated here or checked here, so
//! that a size too large for the machine is an [`Error::OutOfMemory`] (or, when the byte
//! count does not even fit the address space, an [`Error::InvalidShape`]) and the process
//! lives on.

use std::fmt;

use crate::{Error, Result};

/// Which memory an allocation was made in, for [`Error::OutOfMemory`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryKind {
    /// Ordinary (pageable) host memory.
    Host,
    /// Page-locked host memory, for copies to and from a GPU.
    PageLocked,
    /// The memory of a CUDA device.
    Device {
        /// The device ordinal.
        device: usize,
    },
}

impl fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryKind::Host => write!(f, "host memory"),
            MemoryKind::PageLocked => write!(f, "page-locked host memory"),
            MemoryKind::Device { device } => write!(f, "the memory of CUDA device {device}"),
        }
    }
}

/// A byte count for people: `1.5 GiB (1610612736 B)`.
pub(crate) fn human_bytes(bytes: usize) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    format!("{value:.1} {unit} ({bytes} B)")
}

/// Bytes of `len` elements of `T`, or `None` when that is more than a process can address
/// (Rust's limit on one allocation: `isize::MAX` bytes).
pub(crate) fn bytes_of<T>(len: usize) -> Option<usize> {
    len.checked_mul(std::mem::size_of::<T>()).filter(|&b| b <= isize::MAX as usize)
}

/// The error for `len` elements of `T` that do not fit the address space at all.
fn unaddressable<T>(what: &dyn Fn() -> String, len: usize) -> Error {
    let bytes = len as u128 * std::mem::size_of::<T>() as u128;
    Error::InvalidShape {
        shape: vec![len],
        reason: format!(
            "{} needs {len} elements of {} B, {bytes} B in all: more than a process can address",
            what(),
            std::mem::size_of::<T>()
        ),
    }
}

/// An empty vector with room for exactly `len` elements of `T`, or
/// [`Error::OutOfMemory`] naming `what()`.
pub(crate) fn with_capacity<T>(len: usize, what: impl Fn() -> String) -> Result<Vec<T>> {
    let Some(bytes) = bytes_of::<T>(len) else { return Err(unaddressable::<T>(&what, len)) };
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::OutOfMemory { what: what(), bytes, memory: MemoryKind::Host })?;
    Ok(v)
}

/// `len` zeros, or [`Error::OutOfMemory`] naming `what()`. Allocated zeroed (the
/// operating system hands out zero pages lazily), so a large grid costs nothing until written.
pub(crate) fn zeroed<T: crate::Real>(len: usize, what: impl Fn() -> String) -> Result<Vec<T>> {
    let Some(bytes) = bytes_of::<T>(len) else { return Err(unaddressable::<T>(&what, len)) };
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<T>(len).map_err(|_| unaddressable::<T>(&what, len))?;
    // SAFETY: `layout` has a non-zero size (len ≥ 1 and `T` is `f32` or `f64`).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(Error::OutOfMemory { what: what(), bytes, memory: MemoryKind::Host });
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `[T; len]`
    // (what `Vec` uses for a capacity of `len`), and all-zero bytes are the value 0.0 of
    // `f32` and `f64` (`Real` is sealed to them), so all `len` elements are initialised.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// `len` copies of `value`, or [`Error::OutOfMemory`] naming `what()`.
pub(crate) fn filled<T: Clone>(len: usize, value: T, what: impl Fn() -> String) -> Result<Vec<T>> {
    let mut v = with_capacity(len, what)?;
    v.resize(len, value);
    Ok(v)
}

/// A copy of `data`, or [`Error::OutOfMemory`] naming `what()`.
pub(crate) fn copy_of<T: Copy>(data: &[T], what: impl Fn() -> String) -> Result<Vec<T>> {
    let mut v = with_capacity(data.len(), what)?;
    v.extend_from_slice(data);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_beyond_the_address_space_and_the_memory_are_errors() {
        let e = filled::<f64>(usize::MAX / 4, 0.0, || "a test buffer".into()).unwrap_err();
        assert!(matches!(e, Error::InvalidShape { .. }), "{e}");
        assert!(e.to_string().contains("a test buffer"), "{e}");
        // 2⁶¹ B is addressable but no machine has it.
        let e = with_capacity::<u8>(1 << 61, || "a huge buffer".into()).unwrap_err();
        assert!(matches!(&e, Error::OutOfMemory { bytes, memory: MemoryKind::Host, .. } if *bytes == 1 << 61), "{e}");
        assert!(e.to_string().contains("a huge buffer") && e.to_string().contains("2.0 EiB"), "{e}");
        assert_eq!(copy_of(&[1, 2, 3], String::new).unwrap(), [1, 2, 3]);
        assert_eq!(zeroed::<f32>(5, String::new).unwrap(), [0.0; 5]);
        assert!(zeroed::<f64>(0, String::new).unwrap().is_empty());
        assert!(matches!(zeroed::<f64>(1 << 58, String::new), Err(Error::OutOfMemory { .. })));
        assert!(matches!(zeroed::<f64>(usize::MAX / 4, String::new), Err(Error::InvalidShape { .. })));
    }

    #[test]
    fn byte_counts_read_well() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB (1610612736 B)");
    }
}
