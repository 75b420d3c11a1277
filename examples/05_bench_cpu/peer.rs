//! The C/OpenMP peer of `jacobi7` (`peer.c`): compiled with the system's C compiler (`$CC`,
//! else `cc`) and run with the benchmark's threads, so that every 3-D table shows it beside
//! the twin, measured in the same run.

use std::path::{Path, PathBuf};
use std::process::Command;

const SOURCE: &str = include_str!("peer.c");

/// The peer compiled for one element type.
pub struct Peer {
    binary: PathBuf,
    /// How it was compiled, for the table's note.
    pub command: String,
}

impl Peer {
    /// Compiles the peer for `c_type` (`float` or `double`) into `dir`.
    pub fn compile(dir: &Path, c_type: &str) -> Result<Self, String> {
        let source = dir.join("peer.c");
        std::fs::write(&source, SOURCE).map_err(|e| format!("writing {}: {e}", source.display()))?;
        let binary = dir.join(format!("peer_{c_type}"));
        let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let mut args: Vec<String> = vec!["-O3".into()];
        if cfg!(target_arch = "x86_64") {
            args.push("-march=x86-64-v3".into());
        }
        args.extend(["-fopenmp".into(), format!("-DREAL={c_type}")]);
        let command = format!("{compiler} {} -o peer_{c_type} peer.c", args.join(" "));
        let output = Command::new(&compiler)
            .args(&args)
            .arg("-o")
            .arg(&binary)
            .arg(&source)
            .output()
            .map_err(|e| format!("running `{compiler}`: {e}"))?;
        if !output.status.success() {
            return Err(format!("`{command}` failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
        }
        Ok(Self { binary, command })
    }

    /// Gpoint/s of the best of the peer's three runs of `iterations` iterations on an n³
    /// grid, on `threads` OpenMP threads.
    pub fn time(&self, n: usize, iterations: usize, threads: usize) -> Result<f64, String> {
        let output = Command::new(&self.binary)
            .args([n.to_string(), iterations.to_string()])
            .env("OMP_NUM_THREADS", threads.to_string())
            .output()
            .map_err(|e| format!("running the peer: {e}"))?;
        let text = String::from_utf8_lossy(&output.stdout);
        match text.split_whitespace().next().map(str::parse::<f64>) {
            Some(Ok(rate)) if output.status.success() => Ok(rate),
            _ => {
                Err(format!("the peer printed {:?} ({})", text.trim(), String::from_utf8_lossy(&output.stderr).trim()))
            }
        }
    }
}
