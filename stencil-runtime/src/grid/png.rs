//! PNG pictures of 2-D slices of a grid.

use std::path::Path;

use super::Grid;
use crate::{Error, Real, Result};

/// Which 2-D slice of a grid to draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slice {
    /// The whole grid (2-D grids only).
    Whole,
    /// The plane `index` of `axis`, for example `{ axis: 0, index: n / 2 }` of a 3-D grid.
    Plane {
        /// The axis held fixed.
        axis: usize,
        /// The position on that axis.
        index: usize,
    },
    /// The middle plane of `axis`.
    Middle {
        /// The axis held fixed.
        axis: usize,
    },
}

/// How values map to colours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorMap {
    /// Perceptually uniform dark-blue → green → yellow, from the slice's minimum to its
    /// maximum (matplotlib's viridis).
    #[default]
    Viridis,
    /// Diverging blue → white → red, symmetric about zero (for signed data).
    CoolWarm,
}

const VIRIDIS: [[f64; 3]; 5] =
    [[68.0, 1.0, 84.0], [59.0, 82.0, 139.0], [33.0, 145.0, 140.0], [94.0, 201.0, 98.0], [253.0, 231.0, 37.0]];
const COOLWARM: [[f64; 3]; 3] = [[59.0, 76.0, 192.0], [221.0, 221.0, 221.0], [180.0, 4.0, 38.0]];

/// Piecewise-linear interpolation of `stops` at `t` in [0, 1].
fn interpolate(stops: &[[f64; 3]], t: f64) -> [u8; 3] {
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let x = t * (stops.len() - 1) as f64;
    let i = (x.floor() as usize).min(stops.len() - 2);
    let w = x - i as f64;
    std::array::from_fn(|c| (stops[i][c] * (1.0 - w) + stops[i + 1][c] * w).round() as u8)
}

impl ColorMap {
    fn rgb(self, v: f64, min: f64, max: f64) -> [u8; 3] {
        match self {
            ColorMap::Viridis => {
                let span = if max > min { max - min } else { 1.0 };
                interpolate(&VIRIDIS, (v - min) / span)
            }
            ColorMap::CoolWarm => {
                let m = min.abs().max(max.abs());
                let m = if m > 0.0 { m } else { 1.0 };
                interpolate(&COOLWARM, 0.5 + 0.5 * v / m)
            }
        }
    }
}

impl<T: Real, const N: usize> Grid<T, N> {
    /// Writes a PNG of a 2-D slice: the slice's first axis runs down the picture, its
    /// second across. NaN and ±∞ are drawn in the colour of the lowest value.
    ///
    /// **Errors**: [`Error::InvalidSlice`] for a slice the grid does not have (`Whole` of a
    /// grid that is not 2-D, an axis or index out of range, a 1-D grid), [`Error::Image`]
    /// if the file cannot be written.
    pub fn write_png(&self, path: impl AsRef<Path>, slice: Slice, colors: ColorMap) -> Result<()> {
        let path = path.as_ref();
        let (rows, cols, values) = self.slice_values(slice)?;
        let finite = values.iter().copied().filter(|v| v.is_finite());
        let min = finite.clone().fold(f64::INFINITY, f64::min);
        let max = finite.fold(f64::NEG_INFINITY, f64::max);
        let mut img = image::RgbImage::new(cols as u32, rows as u32);
        for (i, px) in img.pixels_mut().enumerate() {
            *px = image::Rgb(colors.rgb(values[i], min, max));
        }
        img.save(path).map_err(|source| Error::Image { path: path.to_owned(), source })
    }

    /// The slice as (rows, columns, values in row-major order).
    fn slice_values(&self, slice: Slice) -> Result<(usize, usize, Vec<f64>)> {
        let invalid = |reason: String| Err(Error::InvalidSlice { reason });
        let shape = self.shape();
        let (axis, index) = match slice {
            Slice::Whole if N == 2 => {
                return Ok((shape[0], shape[1], self.as_slice().iter().map(|v| v.to_f64()).collect()));
            }
            Slice::Whole => return invalid(format!("`Slice::Whole` needs a 2-D grid, this one is {N}-D")),
            Slice::Plane { axis, index } => (axis, index),
            Slice::Middle { axis } if axis < N => (axis, shape[axis] / 2),
            Slice::Middle { axis } => (axis, 0),
        };
        if N != 3 {
            return invalid(format!("a plane slice needs a 3-D grid, this one is {N}-D"));
        }
        if axis >= N || index >= shape[axis] {
            return invalid(format!("plane {index} of axis {axis} is outside a grid of shape {shape:?}"));
        }
        let view = self.view();
        let plane = view.index_axis(ndarray::Axis(axis), index);
        let (rows, cols) = (plane.shape()[0], plane.shape()[1]);
        Ok((rows, cols, plane.iter().map(|v| v.to_f64()).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_of_a_3d_plane_has_the_plane_size() {
        let dir = tempfile::tempdir().unwrap();
        let g = Grid::<f32, 3>::from_fn([4, 5, 6], |[i, j, k]| (i + j + k) as f32).unwrap();
        let path = dir.path().join("s.png");
        g.write_png(&path, Slice::Middle { axis: 0 }, ColorMap::Viridis).unwrap();
        let img = image::open(&path).unwrap().to_rgb8();
        assert_eq!((img.width(), img.height()), (6, 5));
        // The smallest value is drawn in viridis' first colour, the largest in its last.
        assert_eq!(img.get_pixel(0, 0).0, [68, 1, 84]);
        assert_eq!(img.get_pixel(5, 4).0, [253, 231, 37]);
    }

    #[test]
    fn slices_that_do_not_exist_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let g = Grid::<f32, 3>::zeros([2, 2, 2]).unwrap();
        let p = dir.path().join("x.png");
        let err = |s| matches!(g.write_png(&p, s, ColorMap::CoolWarm), Err(Error::InvalidSlice { .. }));
        assert!(err(Slice::Whole));
        assert!(err(Slice::Plane { axis: 3, index: 0 }));
        assert!(err(Slice::Plane { axis: 1, index: 2 }));
        let line = Grid::<f32, 1>::zeros([5]).unwrap();
        assert!(line.write_png(&p, Slice::Middle { axis: 0 }, ColorMap::Viridis).is_err());
    }
}
