//! Checkpoints: the iterate written to a file every m iterations, atomically, so that a long
//! run that is stopped (a crash, a job's time limit, a device error) resumes from the last
//! one instead of from the start.
//!
//! A checkpoint is a NumPy `.npz` archive (uncompressed) with four arrays: `u` (the whole
//! grid, boundary included), `iteration` (one `u64`: the iterate `u` holds), `reference`
//! (two `f64`: ρ(u⁰) in L∞ and L2, for a relative tolerance; NaN when not measured) and `stencil`
//! (the stencil's name as bytes). NumPy reads it with `numpy.load`. It is written to
//! `<path>.partial`, flushed to the disk, then renamed over `<path>`: a reader sees the old
//! checkpoint or the new one, never a torn file.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

use ndarray::{Array1, ArrayD};
use ndarray_npy::{NpzReader, NpzWriter};

use crate::{Error, Grid, Real, Result};

/// Where and how often a run writes its iterate, and whether it resumes from it.
///
/// ```
/// use stencil_runtime::Checkpoint;
/// let c = Checkpoint::every(500, "poisson.npz").resume();
/// assert_eq!(c.interval(), 500);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    path: PathBuf,
    every: usize,
    resume: bool,
}

impl Checkpoint {
    /// Writes the iterate to `path` after every `iterations` iterations (an iteration that
    /// is then also a residual check). Out-of-core passes and exact hierarchical cycles end
    /// at those iterations; an inexact hierarchical cycle writes after the cycle that
    /// reaches one.
    pub fn every(iterations: usize, path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), every: iterations, resume: false }
    }

    /// If the file exists when the run starts, the run continues from it: the grid given
    /// to [`Solver::run`](crate::Solver::run) is overwritten with the saved iterate, and
    /// the iteration count (and `max_iterations`) continues from the saved iteration. If
    /// it does not exist, the run starts from the grid given. The grid is overwritten after
    /// the solver's own checks (inputs, parameters, stopping rule, the file itself); an error
    /// a backend raises later (device memory, launch limits) leaves the saved iterate in it.
    pub fn resume(mut self) -> Self {
        self.resume = true;
        self
    }

    /// The checkpoint file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Iterations between two checkpoints.
    pub fn interval(&self) -> usize {
        self.every
    }

    /// Whether a run resumes from an existing file.
    pub fn resumes(&self) -> bool {
        self.resume
    }

    /// Reads a checkpoint file.
    ///
    /// **Errors**: [`Error::ReadCheckpoint`] if the file is missing or is not a checkpoint
    /// of an `N`-dimensional grid of `T`.
    pub fn read<T: Real, const N: usize>(path: impl AsRef<Path>) -> Result<Saved<T, N>> {
        let path = path.as_ref();
        let fail = |reason: String| Error::ReadCheckpoint { path: path.to_owned(), reason };
        let file = File::open(path).map_err(|e| fail(e.to_string()))?;
        let mut npz = NpzReader::new(BufReader::new(file)).map_err(|e| fail(e.to_string()))?;
        let u: ArrayD<T> = npz.by_name("u").map_err(|e| fail(format!("array `u`: {e}")))?;
        let iteration: Array1<u64> = npz.by_name("iteration").map_err(|e| fail(format!("array `iteration`: {e}")))?;
        let reference: Array1<f64> = npz.by_name("reference").map_err(|e| fail(format!("array `reference`: {e}")))?;
        let stencil: Array1<u8> = npz.by_name("stencil").map_err(|e| fail(format!("array `stencil`: {e}")))?;
        let (&[iteration], &[max, l2]) = (iteration.as_slice().unwrap_or(&[]), reference.as_slice().unwrap_or(&[]))
        else {
            return Err(fail("`iteration` must hold one value and `reference` two".into()));
        };
        Ok(Saved {
            grid: Grid::from_array(u.view()).map_err(|e| fail(e.to_string()))?,
            iteration: usize::try_from(iteration).map_err(|e| fail(e.to_string()))?,
            reference: (!max.is_nan() && !l2.is_nan()).then_some([max, l2]),
            stencil: String::from_utf8_lossy(stencil.as_slice().unwrap_or(&[])).into_owned(),
        })
    }

    /// Writes a checkpoint of `grid` at `iteration` atomically (see the module's
    /// documentation).
    ///
    /// **Errors**: [`Error::Io`] or [`Error::WriteCheckpoint`] if the file cannot be written;
    /// then the previous checkpoint, if any, is still in place.
    pub fn write<T: Real, const N: usize>(
        path: impl AsRef<Path>,
        grid: &Grid<T, N>,
        iteration: usize,
        reference: Option<[f64; 2]>,
        stencil: &str,
    ) -> Result<()> {
        let path = path.as_ref();
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let result = Self::write_partial(&partial, grid, iteration, reference, stencil).and_then(|()| {
            std::fs::rename(&partial, path).map_err(|source| Error::Io { path: path.to_owned(), source })
        });
        if result.is_err() {
            // Nothing half-written is left behind; the previous checkpoint is untouched.
            let _ = std::fs::remove_file(&partial);
        }
        result?;
        // The rename itself, made durable (best effort: not every file system allows
        // opening a directory).
        if let Some(dir) = path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p })
            && let Ok(dir) = File::open(dir)
        {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    /// Writes the archive to `partial` and flushes it to the disk.
    fn write_partial<T: Real, const N: usize>(
        partial: &Path,
        grid: &Grid<T, N>,
        iteration: usize,
        reference: Option<[f64; 2]>,
        stencil: &str,
    ) -> Result<()> {
        let io = |source| Error::Io { path: partial.to_owned(), source };
        let fail = |source| Error::WriteCheckpoint { path: partial.to_owned(), source };
        let file = File::create(partial).map_err(io)?;
        let mut npz = NpzWriter::new(BufWriter::new(file));
        npz.add_array("u", &grid.view()).map_err(fail)?;
        npz.add_array("iteration", &Array1::from_elem(1, iteration as u64)).map_err(fail)?;
        npz.add_array("reference", &Array1::from(reference.unwrap_or([f64::NAN; 2]).to_vec())).map_err(fail)?;
        npz.add_array("stencil", &Array1::from(stencil.as_bytes().to_vec())).map_err(fail)?;
        let file = npz.finish().map_err(fail)?.into_inner().map_err(|e| io(e.into_error()))?;
        // On the disk before the rename makes it the checkpoint.
        file.sync_all().map_err(io)
    }
}

/// What a checkpoint file holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Saved<T: Real, const N: usize> {
    /// The iterate, boundary included.
    pub grid: Grid<T, N>,
    /// The iteration after which it was written.
    pub iteration: usize,
    /// ρ(u⁰) of the run in L∞ and L2, for a relative tolerance.
    pub reference: Option<[f64; 2]>,
    /// The stencil's name.
    pub stencil: String,
}

/// Where a run starts: iteration 0, or a checkpoint's iteration and reference.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Start {
    pub iteration: usize,
    pub reference: Option<[f64; 2]>,
}

/// The checkpoints of one run: the next is due at the first check at or after `next`.
#[derive(Debug)]
pub(crate) struct Writer {
    pub path: PathBuf,
    pub every: usize,
    next: usize,
    /// The iteration of the last checkpoint written, or resumed from.
    pub last: Option<usize>,
}

impl Writer {
    /// Checkpoints of a run that starts at `start` (from the checkpoint itself if `resumed`).
    pub fn new(checkpoint: &Checkpoint, start: usize, resumed: bool) -> Self {
        Self {
            path: checkpoint.path.clone(),
            every: checkpoint.every,
            next: (start / checkpoint.every + 1) * checkpoint.every,
            last: resumed.then_some(start),
        }
    }

    pub fn due(&self, iteration: usize) -> bool {
        iteration >= self.next
    }

    /// Writes `u` (iterate `iteration`) and schedules the next checkpoint.
    pub fn save<T: Real, const N: usize>(
        &mut self,
        u: &Grid<T, N>,
        iteration: usize,
        reference: Option<[f64; 2]>,
        stencil: &str,
    ) -> Result<()> {
        Checkpoint::write(&self.path, u, iteration, reference, stencil)?;
        self.next = (iteration / self.every + 1) * self.every;
        self.last = Some(iteration);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_round_trips_and_replaces_the_previous_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.npz");
        let g = Grid::<f32, 3>::random_uniform([3, 4, 5], -1.0, 1.0, 1).unwrap();
        Checkpoint::write(&path, &g, 7, None, "jacobi").unwrap();
        let h = Grid::<f32, 3>::random_uniform([3, 4, 5], -1.0, 1.0, 2).unwrap();
        Checkpoint::write(&path, &h, 14, Some([0.5, 2.5]), "jacobi").unwrap();
        let saved = Checkpoint::read::<f32, 3>(&path).unwrap();
        assert_eq!(saved, Saved { grid: h, iteration: 14, reference: Some([0.5, 2.5]), stencil: "jacobi".into() });
        assert!(!dir.path().join("c.npz.partial").exists());
        assert!(matches!(Checkpoint::read::<f64, 3>(&path), Err(Error::ReadCheckpoint { .. })));
        assert!(matches!(Checkpoint::read::<f32, 2>(&path), Err(Error::ReadCheckpoint { .. })));
        assert!(matches!(Checkpoint::read::<f32, 3>(dir.path().join("none.npz")), Err(Error::ReadCheckpoint { .. })));
        std::fs::write(dir.path().join("bad.npz"), b"not a zip").unwrap();
        assert!(matches!(Checkpoint::read::<f32, 3>(dir.path().join("bad.npz")), Err(Error::ReadCheckpoint { .. })));
    }

    #[test]
    fn checkpoints_fall_due_at_multiples_of_the_interval() {
        let c = Checkpoint::every(10, "x");
        let mut w = Writer::new(&c, 0, false);
        assert!(!w.due(9) && w.due(10));
        w.next = 20;
        assert!(!w.due(19) && w.due(23));
        assert!(Writer::new(&c, 25, true).due(30) && !Writer::new(&c, 25, true).due(29));
    }
}
