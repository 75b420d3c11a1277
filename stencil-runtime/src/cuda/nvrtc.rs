//! NVRTC: a stencil's CUDA translation unit → PTX, specialised with `-D` options.

use std::fmt::Write;

use crate::{Error, Result};

/// How floating-point operations are compiled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// `--fmad=false`, IEEE division and square root: for `+ − × ÷ sqrt` the GPU gives the
    /// CPU twin's bits.
    Exact,
    /// NVRTC's defaults: multiply–add pairs may be fused (results differ from the CPU twin
    /// by rounding).
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
        if self.mode == Mode::Exact {
            args.extend(["--fmad=false".into(), "--prec-div=true".into(), "--prec-sqrt=true".into()]);
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

/// Compiles the translation unit of stencil `stencil`.
///
/// **Errors**: [`Error::NvrtcUnavailable`] if the library cannot be loaded,
/// [`Error::Nvrtc`] with NVRTC's log and the numbered source if compilation fails.
pub fn compile(stencil: &'static str, source: &str, options: &CompileOptions) -> Result<Ptx> {
    if !nvrtc_available() {
        return Err(Error::NvrtcUnavailable);
    }
    let args = options.to_args();
    if source.contains('\0') {
        return Err(Error::Nvrtc {
            stencil,
            options: args,
            log: "the source contains a NUL character".into(),
            source_numbered: numbered(source),
        });
    }
    let cudarc_options = cudarc::nvrtc::CompileOptions {
        options: args.clone(),
        name: Some(format!("{stencil}.cu")),
        ..Default::default()
    };
    match cudarc::nvrtc::compile_ptx_with_opts(source, cudarc_options) {
        Ok(ptx) => Ok(Ptx(ptx.to_src())),
        Err(e) => {
            let log = match e {
                cudarc::nvrtc::CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
                other => format!("{other:?}"),
            };
            Err(Error::Nvrtc { stencil, options: args, log, source_numbered: numbered(source) })
        }
    }
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
    }

    #[test]
    fn numbered_source_counts_from_one() {
        assert_eq!(numbered("a\nb"), "   1 | a\n   2 | b\n");
    }
}
