//! Compiled modules, cached in memory and on disk, keyed by a hash of the source, the
//! options, the architecture and the driver version.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use super::nvrtc::{CompileOptions, Cubin, compile};
use crate::Result;
use crate::report::Origin;

/// Environment variable naming the folder of the disk cache (default: the user's cache
/// folder, `$XDG_CACHE_HOME/stencil` or `~/.cache/stencil`). `off` disables the disk cache.
pub const CACHE_DIR_VAR: &str = "STENCIL_CACHE_DIR";

/// Environment variable naming a folder where every translation unit that is compiled is
/// also written, as `<stencil>.cu`, so that users can read what runs.
pub const DUMP_DIR_VAR: &str = "STENCIL_DUMP_CUDA";

/// A module's device code and where it came from.
pub struct Compiled {
    /// The device code.
    pub cubin: Cubin,
    /// Where it came from.
    pub origin: Origin,
}

fn memory() -> &'static Mutex<HashMap<String, Cubin>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Cubin>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Forgets the modules compiled in this process, so that the next run reads the disk cache
/// (or compiles): for measuring start-up times.
pub fn clear_memory_cache() {
    memory().lock().expect("cache lock").clear();
}

/// The disk cache folder, if enabled.
pub fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os(CACHE_DIR_VAR) {
        Some(v) if v == "off" => None,
        Some(v) => Some(PathBuf::from(v)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|base| base.join("stencil")),
    }
}

/// The cache key: SHA-256 of everything that changes the device code.
pub fn key(source: &str, options: &CompileOptions, driver_version: i32) -> String {
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    for arg in options.to_args() {
        h.update([0u8]);
        h.update(arg.as_bytes());
    }
    h.update(driver_version.to_le_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The device code of `source` under `options`, from memory, from disk, or compiled (and
/// then stored in both). A disk cache that cannot be read or written is skipped, never an error.
pub fn get(stencil: &'static str, source: &str, options: &CompileOptions, driver_version: i32) -> Result<Compiled> {
    let key = key(source, options, driver_version);
    if let Some(dir) = std::env::var_os(DUMP_DIR_VAR) {
        let dir = PathBuf::from(dir);
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join(format!("{stencil}.cu")), source);
    }
    if let Some(cubin) = memory().lock().expect("cache lock").get(&key) {
        return Ok(Compiled { cubin: cubin.clone(), origin: Origin::Memory });
    }
    let file = cache_dir().map(|d| d.join(format!("{stencil}-{key}.cubin")));
    if let Some(image) = file.as_ref().and_then(|f| std::fs::read(f).ok()) {
        let cubin = Cubin(image);
        memory().lock().expect("cache lock").insert(key, cubin.clone());
        return Ok(Compiled { cubin, origin: Origin::Disk });
    }
    let cubin = compile(stencil, source, options)?.cubin;
    if let Some(file) = &file {
        if let Some(dir) = file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // Written under a temporary name and renamed, so a concurrent reader never sees half.
        let tmp = file.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, &cubin.0).is_ok() {
            let _ = std::fs::rename(&tmp, file);
        }
    }
    memory().lock().expect("cache lock").insert(key, cubin.clone());
    Ok(Compiled { cubin, origin: Origin::Compiled })
}
