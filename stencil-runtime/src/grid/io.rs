//! `.npy` input and output of grids.

use std::path::Path;

use super::Grid;
use crate::{Error, Real, Result};

impl<T: Real, const N: usize> Grid<T, N> {
    /// Reads a grid from a `.npy` file (NumPy's format; C or Fortran order).
    ///
    /// **Errors**: [`Error::ReadNpy`] if the file is missing, malformed or of another element
    /// type, [`Error::RankMismatch`] if it does not have `N` axes.
    pub fn read_npy(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let array: ndarray::ArrayD<T> =
            ndarray_npy::read_npy(path).map_err(|source| Error::ReadNpy { path: path.to_owned(), source })?;
        Self::from_array(array.view())
    }

    /// Writes the whole grid, boundary included, as a `.npy` file that NumPy reads with
    /// `numpy.load`.
    ///
    /// **Errors**: [`Error::WriteNpy`] if the file cannot be written.
    pub fn write_npy(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        ndarray_npy::write_npy(path, &self.view()).map_err(|source| Error::WriteNpy { path: path.to_owned(), source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_round_trip_keeps_every_bit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.npy");
        let g = Grid::<f32, 3>::random_uniform([3, 5, 7], -1.0, 1.0, 3).unwrap();
        g.write_npy(&path).unwrap();
        assert_eq!(Grid::<f32, 3>::read_npy(&path).unwrap(), g);
        assert!(matches!(Grid::<f32, 2>::read_npy(&path), Err(Error::RankMismatch { .. })));
        assert!(matches!(Grid::<f64, 3>::read_npy(&path), Err(Error::ReadNpy { .. })));
        assert!(matches!(Grid::<f32, 3>::read_npy(dir.path().join("missing.npy")), Err(Error::ReadNpy { .. })));
    }
}
