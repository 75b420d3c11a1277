//! NVRTC: a stencil's CUDA translation unit → PTX and device code (CUBIN) for the device's
//! architecture, specialised with `-D` options.

use std::ffi::CString;
use std::fmt::Write;
use std::sync::{Mutex, Once, PoisonError};
use std::thread::JoinHandle;

use cudarc::nvrtc::result;

use crate::{Error, Result};

/// How floating-point operations are compiled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// `--fmad=false`, IEEE division and square root: for `+ − × ÷ sqrt` the GPU gives the
    /// CPU twin's bits.
    Exact,
    /// Multiply–add pairs may be fused, `f32` division is approximate (`--prec-div=false`,
    /// within 2 ulp) and division by a constant multiplies by its reciprocal: results differ
    /// from the CPU twin by rounding.
    #[default]
    Fast,
}

impl Mode {
    /// `"exact"` or `"fast"`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Exact => "exact",
            Mode::Fast => "fast",
        }
    }
}

/// What to compile a translation unit for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    /// `"float"` or `"double"` (`Real::NAME` maps to it).
    pub real: &'static str,
    /// Floating-point mode.
    pub mode: Mode,
    /// Virtual or real architecture, e.g. `"sm_90"`.
    pub arch: String,
    /// Further `-D` definitions (launch shape: `BLOCK_X`, `BLOCK_Y`, `BLOCK_Z`, `MARCH`).
    pub defines: Vec<(String, String)>,
}

impl CompileOptions {
    /// Options for element type `T` on `arch`.
    pub fn new<T: crate::Real>(mode: Mode, arch: impl Into<String>) -> Self {
        let real = if T::BYTES == 4 { "float" } else { "double" };
        Self { real, mode, arch: arch.into(), defines: Vec::new() }
    }

    /// Adds `-D{name}={value}`.
    pub fn define(mut self, name: &str, value: impl ToString) -> Self {
        self.defines.push((name.into(), value.to_string()));
        self
    }

    /// The options as NVRTC receives them, followed by those of the environment variable
    /// [`EXTRA_OPTIONS_VAR`] (split at spaces; for experiments such as `--prec-div=false`).
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![format!("--gpu-architecture={}", self.arch), format!("-DREAL={}", self.real)];
        args.extend(self.defines.iter().map(|(n, v)| format!("-D{n}={v}")));
        args.push("--std=c++17".into());
        match self.mode {
            Mode::Exact => {
                args.extend(["--fmad=false".into(), "--prec-div=true".into(), "--prec-sqrt=true".into()]);
            }
            Mode::Fast => args.extend(["--prec-div=false".into(), "-DSTENCIL_FAST=1".into()]),
        }
        if let Ok(extra) = std::env::var(EXTRA_OPTIONS_VAR) {
            args.extend(extra.split_whitespace().map(String::from));
        }
        args
    }
}

/// Environment variable with further NVRTC options, appended to every compilation (and
/// part of the cache key). For experiments: exact mode is only exact without them.
pub const EXTRA_OPTIONS_VAR: &str = "STENCIL_NVRTC_OPTIONS";

/// Compiled PTX text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ptx(pub String);

/// Device code for the architecture compiled for (a CUBIN image), which the driver loads
/// without compiling it again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cubin(pub Vec<u8>);

/// What NVRTC makes of a translation unit: the PTX, to read, and the CUBIN, to load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// The PTX.
    pub ptx: Ptx,
    /// The device code.
    pub cubin: Cubin,
}

/// Whether the NVRTC library can be loaded (it is looked for on the loader path).
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to open the shared library; nothing from it is called.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// `source` with line numbers, for error messages.
pub fn numbered(source: &str) -> String {
    let mut out = String::new();
    for (i, line) in source.lines().enumerate() {
        let _ = writeln!(out, "{:>4} | {line}", i + 1);
    }
    out
}

/// NVRTC's start in this process, when [`prepare`] began it on a thread of its own.
static PREPARING: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);

/// Begins NVRTC's one-time start in this process on a thread of its own: reading its
/// libraries in, and a first compilation for `arch`, which on a fresh machine take most of
/// the first compilation's time. It then overlaps the device's start (the context, the
/// uploads); the first [`compile`] waits for it to end. Later calls do nothing.
pub(crate) fn prepare(arch: &str) {
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        let options = CompileOptions { real: "float", mode: Mode::Fast, arch: arch.to_owned(), defines: Vec::new() };
        let thread = std::thread::Builder::new().name("nvrtc-start".into()).spawn(move || {
            read_libraries_ahead();
            // A failure here is met again, and reported, by the compilation that needs it.
            let _ = compile_now("stencil_start", "extern \"C\" __global__ void stencil_start() {}", &options);
        });
        *PREPARING.lock().unwrap_or_else(PoisonError::into_inner) = thread.ok();
    });
}

/// Reads NVRTC's libraries (the one loaded, and its builtins beside it) from start to end,
/// so that the compiler's first use finds their pages in memory: on a freshly started
/// machine one sequential read is much faster than the scattered page faults of a first
/// compilation. Where the libraries cannot be found (no `/proc/self/maps`), nothing is read.
fn read_libraries_ahead() {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return };
    let Some(loaded) = maps.lines().filter_map(|line| line.split_whitespace().nth(5)).find(|path| {
        std::path::Path::new(path).file_name().is_some_and(|name| name.to_string_lossy().starts_with("libnvrtc"))
    }) else {
        return;
    };
    let Some(dir) = std::path::Path::new(loaded).parent() else { return };
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut buffer = vec![0u8; 1 << 20];
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let library = name.starts_with("libnvrtc") && name.contains(".so") && !name.contains(".alt.");
        if !library || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if let Ok(mut file) = std::fs::File::open(entry.path()) {
            while matches!(std::io::Read::read(&mut file, &mut buffer), Ok(n) if n > 0) {}
        }
    }
}

/// Compiles the translation unit of stencil `stencil` for `options.arch` (a real
/// architecture such as `sm_90`, so that NVRTC also gives the device code).
///
/// **Errors**: [`Error::NvrtcUnavailable`] if the library cannot be loaded,
/// [`Error::Nvrtc`] with NVRTC's log and the numbered source if compilation fails.
pub fn compile(stencil: &'static str, source: &str, options: &CompileOptions) -> Result<Output> {
    let preparing = PREPARING.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some(thread) = preparing {
        let _ = thread.join();
    }
    compile_now(stencil, source, options)
}

/// [`compile`], without waiting for [`prepare`].
fn compile_now(stencil: &'static str, source: &str, options: &CompileOptions) -> Result<Output> {
    if !nvrtc_available() {
        return Err(Error::NvrtcUnavailable);
    }
    let args = options.to_args();
    let failed = |log: String| Error::Nvrtc { stencil, options: args.clone(), log, source_numbered: numbered(source) };
    let (Ok(c_source), Ok(name)) = (CString::new(source), CString::new(format!("{stencil}.cu"))) else {
        return Err(failed("the source or the stencil's name contains a NUL character".into()));
    };
    let program = Program(result::create_program(&c_source, Some(&name)).map_err(|e| failed(format!("{e:?}")))?);
    // SAFETY: the program was created above and is destroyed only when `program` drops;
    // the source and name it refers to outlive it.
    unsafe {
        if let Err(e) = result::compile_program(program.0, &args) {
            let log = result::get_program_log(program.0).map(|log| c_text(&log)).unwrap_or_default();
            return Err(failed(if log.trim().is_empty() { format!("{e:?}") } else { log }));
        }
        let ptx = result::get_ptx(program.0).map_err(|e| failed(format!("reading the PTX: {e:?}")))?;
        let cubin = program.cubin().map_err(|e| failed(format!("reading the device code: {e:?}")))?;
        Ok(Output { ptx: Ptx(c_text(&ptx)), cubin: Cubin(cubin) })
    }
}

/// An NVRTC program, destroyed when dropped.
struct Program(cudarc::nvrtc::sys::nvrtcProgram);

impl Program {
    /// The compiled program's CUBIN.
    ///
    /// # Safety
    ///
    /// The program must have compiled for a real architecture.
    unsafe fn cubin(&self) -> std::result::Result<Vec<u8>, result::NvrtcError> {
        use cudarc::nvrtc::sys;
        let mut size = 0usize;
        // SAFETY: the program is alive; NVRTC writes the size, then `size` bytes.
        unsafe {
            sys::nvrtcGetCUBINSize(self.0, &mut size).result()?;
            let mut image = vec![0u8; size];
            sys::nvrtcGetCUBIN(self.0, image.as_mut_ptr().cast()).result()?;
            Ok(image)
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by `create_program` and destroyed only here.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

/// NVRTC's NUL-terminated text as a string.
fn c_text(text: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = text.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_mode_turns_contraction_off() {
        let args = CompileOptions::new::<f64>(Mode::Exact, "sm_90").define("BLOCK_X", 64).to_args();
        assert!(args.contains(&"--fmad=false".to_string()));
        assert!(args.contains(&"-DREAL=double".to_string()));
        assert!(args.contains(&"-DBLOCK_X=64".to_string()));
        let fast = CompileOptions::new::<f32>(Mode::Fast, "sm_90").to_args();
        assert!(!fast.iter().any(|a| a.starts_with("--fmad")));
        assert!(fast.contains(&"-DSTENCIL_FAST=1".to_string()));
        assert!(!args.contains(&"-DSTENCIL_FAST=1".to_string()));
    }

    #[test]
    fn numbered_source_counts_from_one() {
        assert_eq!(numbered("a\nb"), "   1 | a\n   2 | b\n");
    }
}
