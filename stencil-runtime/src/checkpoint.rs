//! Checkpoints: the iterate written to a file every m iterations, atomically, so that a long
//! run that is stopped (a crash, a job's time limit, a device error) resumes from the last
//! one instead of from the start.
//!
//! A checkpoint is a NumPy `.npz` archive (uncompressed) with these arrays: `u` (the whole
//! grid, boundary included; for a system of several unknowns the first one's, and the
//! others' in `u1`, `u2`, … in declaration order), `iteration` (one `u64`: the iterate `u`
//! holds), `reference` (two `f64`: ρ(u⁰) in L∞ and L2, for a relative tolerance; NaN when
//! not measured), `stencil` (the stencil's name as bytes), and the run's read-only inputs:
//! `params` (the scalar parameters in declaration order, as `f64`) and `field_digests` (32
//! bytes per read-only field in declaration order, a SHA-256 digest of its values; see
//! [`RunInputs`]). NumPy reads it with `numpy.load`. It is written to `<path>.partial`,
//! flushed to the disk, then renamed over `<path>`: a reader sees the old checkpoint or the
//! new one, never a torn file.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

use ndarray::{Array1, ArrayD};
use ndarray_npy::{NpzReader, NpzWriter};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::{Error, Grid, Real, Result, ScalarValue, Stencil, Tolerance};

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
    allow_changed_inputs: bool,
}

impl Checkpoint {
    /// Writes the iterate to `path` after every `iterations` iterations (an iteration that
    /// is then also a residual check). Out-of-core passes and exact hierarchical cycles end
    /// at those iterations; an inexact hierarchical cycle writes after the cycle that
    /// reaches one.
    pub fn every(iterations: usize, path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), every: iterations, resume: false, allow_changed_inputs: false }
    }

    /// If the file exists when the run starts, the run continues from it: the grid given
    /// to [`Solver::run`](crate::Solver::run) is overwritten with the saved iterate, and
    /// the iteration count (and `max_iterations`) continues from the saved iteration. If
    /// it does not exist, the run starts from the grid given. The grid is overwritten after
    /// the solver's own checks (inputs, parameters, stopping rule, the file itself); an error
    /// a backend raises later (device memory, launch limits) leaves the saved iterate in it
    /// and says so ([`Error::Interrupted`]).
    ///
    /// The file must be this run's: the same stencil, shape and precision, an iteration no
    /// later than `max_iterations`, and the same scalar parameters and read-only fields
    /// (compared bit for bit, the fields by digest), unless
    /// [`allow_changed_inputs`](Self::allow_changed_inputs) says otherwise.
    pub fn resume(mut self) -> Self {
        self.resume = true;
        self
    }

    /// Resumes even when the scalar parameters or read-only fields differ from those the
    /// checkpoint was written with (or when it records none): for continuing a run with,
    /// say, a new right-hand side from a converged state.
    pub fn allow_changed_inputs(mut self) -> Self {
        self.allow_changed_inputs = true;
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
        let names = npz.names().map_err(|e| fail(e.to_string()))?;
        let mut more = Vec::new();
        for name in (1..).map(|k| format!("u{k}")) {
            if !names.iter().any(|n| n.trim_end_matches(".npy") == name) {
                break;
            }
            let grid: ArrayD<T> = npz.by_name(&name).map_err(|e| fail(format!("array `{name}`: {e}")))?;
            let grid = Grid::from_array(grid.view()).map_err(|e| fail(format!("array `{name}`: {e}")))?;
            if grid.shape()[..] != *u.shape() {
                return Err(fail(format!("array `{name}` has shape {:?}, `u` {:?}", grid.shape(), u.shape())));
            }
            more.push(grid);
        }
        let iteration: Array1<u64> = npz.by_name("iteration").map_err(|e| fail(format!("array `iteration`: {e}")))?;
        let reference: Array1<f64> = npz.by_name("reference").map_err(|e| fail(format!("array `reference`: {e}")))?;
        let stencil: Array1<u8> = npz.by_name("stencil").map_err(|e| fail(format!("array `stencil`: {e}")))?;
        let (&[iteration], &[max, l2]) = (iteration.as_slice().unwrap_or(&[]), reference.as_slice().unwrap_or(&[]))
        else {
            return Err(fail("`iteration` must hold one value and `reference` two".into()));
        };
        // Absent from files written by `Checkpoint::write`, which knows no run's inputs.
        let params: Option<Array1<f64>> = npz.by_name("params").ok();
        let digests: Option<Array1<u8>> = npz.by_name("field_digests").ok();
        let inputs = match (params, digests) {
            (Some(params), Some(digests)) => {
                let digests = digests.as_slice().unwrap_or(&[]);
                if !digests.len().is_multiple_of(32) {
                    return Err(fail("`field_digests` must hold 32 bytes per field".into()));
                }
                Some(RunInputs {
                    params: params.to_vec(),
                    fields: digests.chunks_exact(32).map(|d| d.try_into().unwrap_or([0; 32])).collect(),
                })
            }
            _ => None,
        };
        Ok(Saved {
            grid: Grid::from_array(u.view()).map_err(|e| fail(e.to_string()))?,
            iteration: usize::try_from(iteration).map_err(|e| fail(e.to_string()))?,
            reference: (!max.is_nan() && !l2.is_nan()).then_some([max, l2]),
            stencil: String::from_utf8_lossy(stencil.as_slice().unwrap_or(&[])).into_owned(),
            inputs,
            more,
        })
    }

    /// Proves that checkpoints can be written at the path, before a run changes anything:
    /// creates and removes the partial file the writes go through.
    ///
    /// **Errors**: [`Error::CheckpointUnwritable`] for an empty path, a directory, or a
    /// partial file that cannot be created (a missing directory, a read-only file system, a
    /// path under a file).
    pub(crate) fn prove_writable(&self) -> Result<()> {
        let fail = |reason: String| Error::CheckpointUnwritable { path: self.path.clone(), reason };
        if self.path.as_os_str().is_empty() {
            return Err(fail("the path is empty".into()));
        }
        if self.path.is_dir() {
            return Err(fail("it is a directory; name a file in it".into()));
        }
        let partial = partial_path(&self.path);
        File::create(&partial).map_err(|e| fail(format!("`{}` cannot be created: {e}", partial.display())))?;
        std::fs::remove_file(&partial).map_err(|e| fail(format!("`{}` cannot be removed: {e}", partial.display())))
    }

    /// Writes a checkpoint of `grid` at `iteration` atomically (see the module's
    /// documentation).
    ///
    /// **Errors**: [`Error::Io`] or [`Error::WriteCheckpoint`] if the file cannot be written;
    /// then the previous checkpoint, if any, is still in place.
    /// The file records no run's inputs ([`Saved::inputs`] is `None`), so resuming from it
    /// needs [`allow_changed_inputs`](Self::allow_changed_inputs).
    pub fn write<T: Real, const N: usize>(
        path: impl AsRef<Path>,
        grid: &Grid<T, N>,
        iteration: usize,
        reference: Option<[f64; 2]>,
        stencil: &str,
    ) -> Result<()> {
        Self::write_with(path.as_ref(), &[grid], iteration, reference, stencil, None)
    }

    /// [`write`](Self::write) of every unknown's grid, with the run's inputs.
    fn write_with<T: Real, const N: usize>(
        path: &Path,
        unknowns: &[&Grid<T, N>],
        iteration: usize,
        reference: Option<[f64; 2]>,
        stencil: &str,
        inputs: Option<&RunInputs>,
    ) -> Result<()> {
        let partial = partial_path(path);
        let result = Self::write_partial(&partial, unknowns, iteration, reference, stencil, inputs).and_then(|()| {
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
        unknowns: &[&Grid<T, N>],
        iteration: usize,
        reference: Option<[f64; 2]>,
        stencil: &str,
        inputs: Option<&RunInputs>,
    ) -> Result<()> {
        let io = |source| Error::Io { path: partial.to_owned(), source };
        let fail = |source| Error::WriteCheckpoint { path: partial.to_owned(), source };
        let file = File::create(partial).map_err(io)?;
        let mut npz = NpzWriter::new(BufWriter::new(file));
        for (k, grid) in unknowns.iter().enumerate() {
            let name = if k == 0 { "u".to_owned() } else { format!("u{k}") };
            npz.add_array(name, &grid.view()).map_err(fail)?;
        }
        npz.add_array("iteration", &Array1::from_elem(1, iteration as u64)).map_err(fail)?;
        npz.add_array("reference", &Array1::from(reference.unwrap_or([f64::NAN; 2]).to_vec())).map_err(fail)?;
        npz.add_array("stencil", &Array1::from(stencil.as_bytes().to_vec())).map_err(fail)?;
        if let Some(inputs) = inputs {
            npz.add_array("params", &Array1::from(inputs.params.clone())).map_err(fail)?;
            npz.add_array("field_digests", &Array1::from(inputs.fields.concat())).map_err(fail)?;
        }
        let file = npz.finish().map_err(fail)?.into_inner().map_err(|e| io(e.into_error()))?;
        // On the disk before the rename makes it the checkpoint.
        file.sync_all().map_err(io)
    }
}

/// What a checkpoint file holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Saved<T: Real, const N: usize> {
    /// The iterate, boundary included (of the first unknown of a system).
    pub grid: Grid<T, N>,
    /// A system's further unknowns' iterates, in declaration order (empty for one unknown).
    pub more: Vec<Grid<T, N>>,
    /// The iteration after which it was written.
    pub iteration: usize,
    /// ρ(u⁰) of the run in L∞ and L2, for a relative tolerance.
    pub reference: Option<[f64; 2]>,
    /// The stencil's name.
    pub stencil: String,
    /// The read-only inputs of the run that wrote it; `None` for a file written by
    /// [`Checkpoint::write`].
    pub inputs: Option<RunInputs>,
}

/// A run's read-only inputs as its checkpoints record them, so that a resume can tell
/// whether it continues the same problem.
#[derive(Clone, Debug, PartialEq)]
pub struct RunInputs {
    /// The scalar parameters in declaration order (`i32` ones converted exactly).
    pub params: Vec<f64>,
    /// Per read-only field in declaration order, a SHA-256 digest of its values: of the
    /// digests of its consecutive chunks of 2²⁰ values in native byte order (so that it
    /// is computed in parallel).
    pub fields: Vec<[u8; 32]>,
}

impl RunInputs {
    /// The inputs of a run of `S` with `params` and the read-only `fields` (`None` at the
    /// unknown).
    pub(crate) fn of<S: Stencil<N>, T: Real, const N: usize>(params: &S::Params<T>, fields: &[Option<&[T]>]) -> Self {
        let params = S::param_values(params)
            .iter()
            .map(|v| match *v {
                ScalarValue::Real(x) => x.to_f64(),
                ScalarValue::I32(n) => f64::from(n),
            })
            .collect();
        Self { params, fields: fields.iter().flatten().map(|f| digest(f)).collect() }
    }

    /// Why `self` (this run's) is not `saved` (the checkpoint's), for stencil `S`; `None`
    /// when they are the same.
    fn difference<S: Stencil<N>, const N: usize>(&self, saved: &RunInputs) -> Option<String> {
        let meta = S::META;
        if self.params.len() != saved.params.len() || self.fields.len() != saved.fields.len() {
            return Some("it records another number of parameters or fields".into());
        }
        let params = meta.params.iter().zip(self.params.iter().zip(&saved.params));
        if let Some((p, (now, then))) = params.clone().find(|(_, (a, b))| a.to_bits() != b.to_bits()) {
            return Some(format!("parameter `{}` is {now} in this run and {then} in the checkpoint", p.name));
        }
        let names = meta.fields.iter().enumerate().filter(|(_, f)| !f.unknown).map(|(_, f)| f.name);
        let mut fields = names.zip(self.fields.iter().zip(&saved.fields));
        fields.find(|(_, (a, b))| a != b).map(|(name, _)| {
            format!("read-only field `{name}` holds other values than the one the checkpoint was written with")
        })
    }
}

/// The digest of [`RunInputs::fields`].
fn digest<T: Real>(values: &[T]) -> [u8; 32] {
    // SAFETY: `T` is `f32` or `f64` (`Real` is sealed): plain bytes, no padding, every byte
    // initialised; the view lives as long as the borrow of `values`.
    let bytes = unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values)) };
    let chunks: Vec<[u8; 32]> = bytes.par_chunks((1 << 20) * T::BYTES).map(|c| Sha256::digest(c).into()).collect();
    Sha256::digest(chunks.concat()).into()
}

/// `<path>.partial`, where a checkpoint is written before it is renamed over `path`.
fn partial_path(path: &Path) -> PathBuf {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    PathBuf::from(partial)
}

/// The checkpoints of a run with `inputs` and the rule `stop` (which then also checks at
/// every checkpoint), after proving the path writable; resuming from the file into `u` and
/// a system's further unknowns `more` when asked to and it exists (see [`resume`]). Nothing
/// is written to them on error.
pub(crate) fn begin<S: Stencil<N>, T: Real, const N: usize>(
    c: &Checkpoint,
    u: &mut Grid<T, N>,
    more: &mut [&mut Grid<T, N>],
    stop: &mut crate::stop::StopRule,
    inputs: RunInputs,
) -> Result<(Start, Writer)> {
    if c.interval() == 0 {
        return Err(Error::InvalidCheckpoint);
    }
    c.prove_writable()?;
    stop.checkpoint_every = Some(c.interval());
    let start = match c.resumes() && c.path().exists() {
        true => resume::<S, T, N>(c, u, more, stop.tolerance, stop.max_iterations, &inputs)?,
        false => Start::default(),
    };
    Ok((start, Writer::new(c, start.iteration, start.iteration > 0, inputs)))
}

/// Loads checkpoint `c` into `u` and `more` after checking that it is this run's: the same
/// stencil, number of unknowns, shape and precision, an iteration within `max_iterations`,
/// ρ(u⁰) for a relative tolerance, and the same `inputs` unless the checkpoint allows
/// changed ones. `u` and `more` are untouched on error.
fn resume<S: Stencil<N>, T: Real, const N: usize>(
    c: &Checkpoint,
    u: &mut Grid<T, N>,
    more: &mut [&mut Grid<T, N>],
    tolerance: Option<Tolerance>,
    max_iterations: Option<usize>,
    inputs: &RunInputs,
) -> Result<Start> {
    let saved = Checkpoint::read::<T, N>(c.path())?;
    let fail = |reason: String| Err(Error::ReadCheckpoint { path: c.path().to_owned(), reason });
    if saved.stencil != S::META.name {
        return fail(format!("it was written by stencil `{}`, not `{}`", saved.stencil, S::META.name));
    }
    if saved.more.len() != more.len() {
        return fail(format!(
            "it holds {} unknown{}, and `{}` updates {}",
            saved.more.len() + 1,
            if saved.more.is_empty() { "" } else { "s" },
            S::META.name,
            more.len() + 1
        ));
    }
    if saved.grid.shape() != u.shape() {
        return fail(format!("its grid has shape {:?}, the run's {:?}", saved.grid.shape(), u.shape()));
    }
    if let Some(max) = max_iterations.filter(|&max| saved.iteration > max) {
        return fail(format!(
            "it holds iterate {}, beyond this run's iteration limit of {max}: raise `max_iterations`, or start \
             from another file",
            saved.iteration
        ));
    }
    if matches!(tolerance, Some(Tolerance::Relative { .. })) && saved.reference.is_none() {
        return fail("it holds no ρ(u⁰), which a relative tolerance needs; resume with an absolute tolerance".into());
    }
    if !c.allow_changed_inputs {
        let why = match &saved.inputs {
            None => Some("it records no parameters or read-only fields (it was not written by a run)".into()),
            Some(then) => inputs.difference::<S, N>(then),
        };
        if let Some(why) = why {
            return fail(format!(
                "{why}; to continue from it with this run's inputs anyway, use `Checkpoint::allow_changed_inputs`"
            ));
        }
    }
    u.as_mut_slice().copy_from_slice(saved.grid.as_slice());
    for (grid, saved) in more.iter_mut().zip(&saved.more) {
        grid.as_mut_slice().copy_from_slice(saved.as_slice());
    }
    Ok(Start { iteration: saved.iteration, reference: saved.reference })
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
    /// The run's read-only inputs, recorded in every checkpoint.
    inputs: RunInputs,
}

impl Writer {
    /// Checkpoints of a run with `inputs` that starts at `start` (from the checkpoint itself
    /// if `resumed`).
    pub fn new(checkpoint: &Checkpoint, start: usize, resumed: bool, inputs: RunInputs) -> Self {
        Self {
            path: checkpoint.path.clone(),
            every: checkpoint.every,
            next: next_multiple(start, checkpoint.every),
            last: resumed.then_some(start),
            inputs,
        }
    }

    pub fn due(&self, iteration: usize) -> bool {
        iteration >= self.next
    }

    /// Writes every unknown's grid (iterate `iteration`) and schedules the next checkpoint.
    pub fn save<T: Real, const N: usize>(
        &mut self,
        unknowns: &[&Grid<T, N>],
        iteration: usize,
        reference: Option<[f64; 2]>,
        stencil: &str,
    ) -> Result<()> {
        Checkpoint::write_with(&self.path, unknowns, iteration, reference, stencil, Some(&self.inputs))?;
        self.next = next_multiple(iteration, self.every);
        self.last = Some(iteration);
        Ok(())
    }
}

/// The first multiple of `every` after `iteration`, or `usize::MAX` (never) beyond the
/// counter's range.
fn next_multiple(iteration: usize, every: usize) -> usize {
    (iteration / every).checked_add(1).and_then(|q| q.checked_mul(every)).unwrap_or(usize::MAX)
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
        assert_eq!(
            saved,
            Saved {
                grid: h,
                iteration: 14,
                reference: Some([0.5, 2.5]),
                stencil: "jacobi".into(),
                inputs: None,
                more: vec![]
            }
        );
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
        let none = || RunInputs { params: Vec::new(), fields: Vec::new() };
        let mut w = Writer::new(&c, 0, false, none());
        assert!(!w.due(9) && w.due(10));
        w.next = 20;
        assert!(!w.due(19) && w.due(23));
        assert!(Writer::new(&c, 25, true, none()).due(30) && !Writer::new(&c, 25, true, none()).due(29));
        assert!(!Writer::new(&Checkpoint::every(usize::MAX, "x"), 3, false, none()).due(usize::MAX - 1));
    }
}
