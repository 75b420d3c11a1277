//! `Grid<T, N>`: an N-dimensional array whose outer layer holds Dirichlet boundary values.

mod io;
mod png;

pub use png::{ColorMap, Slice};

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use crate::{Error, Real, Result};

/// An `N`-dimensional grid in C order (the last axis contiguous).
///
/// A grid holds every point, boundary included: when a stencil of radius r runs on it, the
/// outer layer of width r on each axis is the Dirichlet boundary and never changes. The
/// constructors fill the whole grid; [`set_boundary`](Self::set_boundary) then sets the
/// boundary layer.
///
/// ```
/// use stencil_runtime::Grid;
/// let mut g = Grid::<f64, 2>::zeros([4, 5]).unwrap();
/// g.set_boundary([1, 1], |[i, _j]| i as f64);
/// assert_eq!(g[[3, 2]], 3.0);
/// assert_eq!(g[[1, 2]], 0.0);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Grid<T, const N: usize> {
    data: Vec<T>,
    shape: [usize; N],
}

/// Number of points of `shape`, or an error if an axis is empty or the grid's bytes (of
/// `elem` bytes per point) are more than a process can address.
pub(crate) fn checked_len<const N: usize>(shape: [usize; N], elem: usize) -> Result<usize> {
    let invalid = |reason: String| Error::InvalidShape { shape: shape.to_vec(), reason };
    if N == 0 {
        return Err(invalid("a grid needs at least one axis".into()));
    }
    if shape.contains(&0) {
        return Err(invalid("every axis needs at least one point".into()));
    }
    let points = shape.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n));
    match points.and_then(|p| p.checked_mul(elem)).filter(|&b| b <= isize::MAX as usize) {
        Some(_) => Ok(points.unwrap_or_default()),
        None => {
            let points: u128 =
                shape.iter().map(|&n| n as u128).try_fold(1u128, |a, n| a.checked_mul(n)).unwrap_or(u128::MAX);
            Err(invalid(format!(
                "{points} points of {elem} B are more bytes than a process can address ({} B at most)",
                isize::MAX
            )))
        }
    }
}

/// What a grid's allocation is called in [`Error::OutOfMemory`].
fn describe<T: Real, const N: usize>(shape: [usize; N]) -> impl Fn() -> String {
    move || format!("a grid of shape {shape:?} ({})", T::NAME)
}

/// Row-major strides of `shape`, in elements.
pub(crate) fn strides_of<const N: usize>(shape: [usize; N]) -> [usize; N] {
    let mut strides = [1usize; N];
    for axis in (0..N.saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * shape[axis + 1];
    }
    strides
}

/// The multi-index of flat position `flat` in a grid of `shape`.
pub(crate) fn unflatten<const N: usize>(shape: [usize; N], mut flat: usize) -> [usize; N] {
    let mut index = [0usize; N];
    for axis in (0..N).rev() {
        index[axis] = flat % shape[axis];
        flat /= shape[axis];
    }
    index
}

impl<T: Real, const N: usize> Grid<T, N> {
    /// A grid of zeros.
    ///
    /// **Errors**: [`Error::InvalidShape`] for an empty axis or more bytes than a process
    /// can address, [`Error::OutOfMemory`] when the host cannot provide them.
    pub fn zeros(shape: [usize; N]) -> Result<Self> {
        let len = checked_len(shape, T::BYTES)?;
        Ok(Self { data: crate::memory::zeroed(len, describe::<T, N>(shape))?, shape })
    }

    /// A grid with every point set to `value`.
    ///
    /// ```
    /// use stencil_runtime::{Error, Grid};
    /// // 8·10¹⁵ B: no machine has that much memory, and the process lives on.
    /// let e = Grid::<f64, 3>::filled([100_000; 3], 1.0).unwrap_err();
    /// assert!(matches!(e, Error::OutOfMemory { bytes: 8_000_000_000_000_000, .. }));
    /// ```
    ///
    /// **Errors**: as [`zeros`](Self::zeros).
    pub fn filled(shape: [usize; N], value: T) -> Result<Self> {
        if value.to_f64().to_bits() == 0 {
            return Self::zeros(shape);
        }
        let len = checked_len(shape, T::BYTES)?;
        Ok(Self { data: crate::memory::filled(len, value, describe::<T, N>(shape))?, shape })
    }

    /// A grid whose value at every index is `f(index)`, evaluated in parallel.
    ///
    /// ```
    /// use stencil_runtime::Grid;
    /// let g = Grid::<f32, 3>::from_fn([2, 3, 4], |[i, j, k]| (100 * i + 10 * j + k) as f32).unwrap();
    /// assert_eq!(g[[1, 2, 3]], 123.0);
    /// ```
    ///
    /// **Errors**: as [`zeros`](Self::zeros).
    pub fn from_fn(shape: [usize; N], f: impl Fn([usize; N]) -> T + Sync) -> Result<Self> {
        let len = checked_len(shape, T::BYTES)?;
        let mut data = crate::memory::with_capacity(len, describe::<T, N>(shape))?;
        // Collects into the room reserved above: no second allocation.
        (0..len).into_par_iter().map(|flat| f(unflatten(shape, flat))).collect_into_vec(&mut data);
        Ok(Self { data, shape })
    }

    /// A grid of independent values drawn uniformly from `[low, high)`, reproducible from
    /// `seed` (xoshiro256++).
    ///
    /// ```
    /// use stencil_runtime::Grid;
    /// let a = Grid::<f32, 2>::random_uniform([8, 8], -1.0, 1.0, 7).unwrap();
    /// assert_eq!(a, Grid::random_uniform([8, 8], -1.0, 1.0, 7).unwrap());
    /// assert!(a.as_slice().iter().all(|v| (-1.0..1.0).contains(v)));
    /// ```
    ///
    /// **Errors**: as [`zeros`](Self::zeros), and [`Error::InvalidShape`] for a range that
    /// is empty or not finite.
    pub fn random_uniform(shape: [usize; N], low: T, high: T, seed: u64) -> Result<Self> {
        let len = checked_len(shape, T::BYTES)?;
        let (lo, hi) = (low.to_f64(), high.to_f64());
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(Error::InvalidShape {
                shape: shape.to_vec(),
                reason: format!("random range [{lo}, {hi}) is empty or not finite"),
            });
        }
        let mut data = crate::memory::with_capacity(len, describe::<T, N>(shape))?;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        // Drawn in f64 and rounded, so f32 and f64 grids of one seed hold the same values
        // to the precision of each type; the clamp keeps rounding from reaching `high`.
        data.extend((0..len).map(|_| {
            let v = T::from_f64(rng.random_range(lo..hi));
            if v < high { v } else { low }
        }));
        Ok(Self { data, shape })
    }

    /// Wraps an ndarray array of any layout (copied into C order).
    ///
    /// **Errors**: [`Error::RankMismatch`] if the array does not have `N` axes; as
    /// [`zeros`](Self::zeros) otherwise.
    pub fn from_array<D: ndarray::Dimension>(array: ndarray::ArrayView<'_, T, D>) -> Result<Self> {
        if array.ndim() != N {
            return Err(Error::RankMismatch { expected: N, found: array.ndim() });
        }
        let mut shape = [0usize; N];
        shape.copy_from_slice(array.shape());
        let len = checked_len(shape, T::BYTES)?;
        let mut data = crate::memory::with_capacity(len, describe::<T, N>(shape))?;
        data.extend(array.iter().copied());
        Ok(Self { data, shape })
    }

    /// Sets every point within `width[axis]` of the edge on some axis to `f(index)`.
    /// Interior points are left as they are.
    pub fn set_boundary(&mut self, width: [usize; N], f: impl Fn([usize; N]) -> T + Sync) {
        let shape = self.shape;
        let on_boundary = |index: &[usize; N]| (0..N).any(|a| index[a] < width[a] || index[a] + width[a] >= shape[a]);
        self.data.par_iter_mut().enumerate().for_each(|(flat, v)| {
            let index = unflatten(shape, flat);
            if on_boundary(&index) {
                *v = f(index);
            }
        });
    }

    /// Index of the first NaN or infinite value in memory order, with that value.
    pub fn first_non_finite(&self) -> Option<([usize; N], T)> {
        self.data
            .par_iter()
            .position_first(|v| !v.is_finite())
            .map(|flat| (unflatten(self.shape, flat), self.data[flat]))
    }
}

impl<T, const N: usize> Grid<T, N> {
    /// Points per axis, slowest axis first.
    pub fn shape(&self) -> [usize; N] {
        self.shape
    }

    /// Total number of points.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Always `false`: a grid has at least one point.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Row-major strides in elements.
    pub fn strides(&self) -> [usize; N] {
        strides_of(self.shape)
    }

    /// The values in memory (C) order.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The values in memory (C) order, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The value at `index`, or `None` outside the grid.
    pub fn get(&self, index: [usize; N]) -> Option<&T> {
        self.flat_index(index).map(|i| &self.data[i])
    }

    fn flat_index(&self, index: [usize; N]) -> Option<usize> {
        let strides = self.strides();
        (0..N).all(|a| index[a] < self.shape[a]).then(|| (0..N).map(|a| index[a] * strides[a]).sum())
    }

    /// An ndarray view (dynamic rank) of the whole grid.
    pub fn view(&self) -> ArrayViewD<'_, T> {
        ArrayViewD::from_shape(IxDyn(&self.shape), &self.data).expect("shape matches data")
    }

    /// A mutable ndarray view (dynamic rank) of the whole grid.
    pub fn view_mut(&mut self) -> ArrayViewMutD<'_, T> {
        ArrayViewMutD::from_shape(IxDyn(&self.shape), &mut self.data).expect("shape matches data")
    }

    /// Converts into an owned ndarray array (no copy).
    pub fn into_array(self) -> ArrayD<T> {
        ArrayD::from_shape_vec(IxDyn(&self.shape), self.data).expect("shape matches data")
    }

    /// Exchanges the contents of two grids of the same shape without copying.
    pub(crate) fn swap_data(&mut self, other: &mut Vec<T>) {
        debug_assert_eq!(self.data.len(), other.len());
        std::mem::swap(&mut self.data, other);
    }
}

impl<T, const N: usize> std::ops::Index<[usize; N]> for Grid<T, N> {
    type Output = T;

    /// **Panics** if `index` is outside the grid (as slice indexing does); use
    /// [`Grid::get`] for a checked read.
    #[track_caller]
    fn index(&self, index: [usize; N]) -> &T {
        match self.flat_index(index) {
            Some(i) => &self.data[i],
            None => panic!("index {index:?} is outside a grid of shape {:?}", self.shape),
        }
    }
}

impl<T, const N: usize> std::ops::IndexMut<[usize; N]> for Grid<T, N> {
    #[track_caller]
    fn index_mut(&mut self, index: [usize; N]) -> &mut T {
        match self.flat_index(index) {
            Some(i) => &mut self.data[i],
            None => panic!("index {index:?} is outside a grid of shape {:?}", self.shape),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_axes_are_errors() {
        assert!(matches!(Grid::<f32, 2>::zeros([0, 3]), Err(Error::InvalidShape { .. })));
        assert!(matches!(Grid::<f32, 3>::zeros([usize::MAX, 2, 2]), Err(Error::InvalidShape { .. })));
    }

    #[test]
    fn boundary_layer_has_the_requested_width() {
        let mut g = Grid::<f64, 3>::zeros([6, 6, 6]).unwrap();
        g.set_boundary([2, 1, 1], |_| 1.0);
        assert_eq!(g[[1, 3, 3]], 1.0);
        assert_eq!(g[[2, 3, 3]], 0.0);
        assert_eq!(g[[4, 3, 3]], 1.0);
        assert_eq!(g[[3, 0, 3]], 1.0);
        assert_eq!(g[[3, 1, 3]], 0.0);
        let ones = g.as_slice().iter().filter(|&&v| v == 1.0).count();
        assert_eq!(ones, 6 * 6 * 6 - 2 * 4 * 4);
    }

    #[test]
    fn array_round_trip_and_rank_check() {
        let g = Grid::<f32, 2>::from_fn([3, 4], |[i, j]| (i * 4 + j) as f32).unwrap();
        let a = g.clone().into_array();
        assert_eq!(Grid::<f32, 2>::from_array(a.view()).unwrap(), g);
        assert!(matches!(Grid::<f32, 3>::from_array(a.view()), Err(Error::RankMismatch { .. })));
        assert_eq!(g.first_non_finite(), None);
    }
}
