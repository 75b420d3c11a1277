//! The wavefront of a sweep: which reads of the unknown come earlier in the sweep, the
//! hyperplane that separates them from the later ones, and the skew that makes
//! rectangular tiles legal.

/// Direction-oriented offset: on a descending axis the sign flips, so "earlier in the
/// sweep" is "lexicographically negative" on every axis.
fn oriented(offset: &[i32], ascending: &[bool]) -> Vec<i64> {
    offset.iter().zip(ascending).map(|(&o, &up)| if up { o as i64 } else { -(o as i64) }).collect()
}

/// −1 if `v` comes earlier in lexicographic order than the origin, +1 later, 0 if it is
/// the origin.
fn lex_sign(v: &[i64]) -> i64 {
    v.iter().find(|&&x| x != 0).map_or(0, |x| x.signum())
}

/// The oriented offsets of the unknown's reads, each with its lexicographic sign.
fn classified(offsets: &[Vec<i32>], ascending: &[bool]) -> Vec<(Vec<i64>, i64)> {
    offsets
        .iter()
        .map(|o| oriented(o, ascending))
        .map(|o| {
            let s = lex_sign(&o);
            (o, s)
        })
        .filter(|(_, s)| *s != 0)
        .collect()
}

/// The hyperplane t = Σ aₖ·x'ₖ with aₖ ≥ 1, smallest Σaₖ first (then lexicographically
/// smallest), on which every earlier read lies before the point and every later read after.
pub fn hyperplane(offsets: &[Vec<i32>], ascending: &[bool]) -> Vec<u32> {
    let n = ascending.len();
    let reads = classified(offsets, ascending);
    let fits = |a: &[i64]| {
        reads.iter().all(|(o, s)| {
            let t: i64 = o.iter().zip(a).map(|(x, y)| x * y).sum();
            t.signum() == *s
        })
    };
    // a = (B^{n-1}, …, B, 1) with B > 2·max|offset| always fits, so the search ends.
    let bound = 2 * offsets.iter().flatten().map(|o| o.unsigned_abs() as i64).max().unwrap_or(0) + 1;
    let limit = (0..n).map(|k| bound.pow(k as u32)).sum::<i64>();
    for sum in n as i64..=limit {
        if let Some(a) = compositions(n, sum).find(|a| fits(a)) {
            return a.into_iter().map(|x| x as u32).collect();
        }
    }
    unreachable!("a lexicographic hyperplane exists for any finite set of offsets")
}

/// Every a ∈ ℕⁿ with aₖ ≥ 1 and Σa = `sum`, in lexicographic order.
fn compositions(n: usize, sum: i64) -> impl Iterator<Item = Vec<i64>> {
    let mut out = Vec::new();
    fn rec(prefix: &mut Vec<i64>, n: usize, left: i64, out: &mut Vec<Vec<i64>>) {
        if prefix.len() + 1 == n {
            prefix.push(left);
            out.push(prefix.clone());
            prefix.pop();
            return;
        }
        let rest = (n - prefix.len() - 1) as i64;
        for x in 1..=left - rest {
            prefix.push(x);
            rec(prefix, n, left - x, out);
            prefix.pop();
        }
    }
    if sum >= n as i64 {
        rec(&mut Vec::new(), n, sum, &mut out);
    }
    out.into_iter()
}

/// Skew factors c (c₀ = 0) of z₀ = x'₀, zₖ = x'ₖ + cₖ·zₖ₋₁ such that every earlier read
/// has z ≤ 0 and every later read z ≥ 0 componentwise; smallest Σc first.
pub fn skew(offsets: &[Vec<i32>], ascending: &[bool]) -> Vec<u32> {
    let n = ascending.len();
    let reads = classified(offsets, ascending);
    let max = offsets.iter().flatten().map(|o| o.unsigned_abs() as i64).max().unwrap_or(0);
    let fits = |c: &[i64]| {
        reads.iter().all(|(o, s)| {
            let mut z = 0i64;
            (0..n).all(|k| {
                z = o[k] + c[k] * z;
                z * s >= 0
            })
        })
    };
    // cₖ = max|offset| + 1 always fits: once some zₖ₋₁ is non-zero, cₖ·zₖ₋₁ outweighs oₖ.
    let mut candidates: Vec<Vec<i64>> = vec![vec![0]];
    for _ in 1..n {
        candidates =
            candidates.into_iter().flat_map(|c| (0..=max + 1).map(move |x| [c.clone(), vec![x]].concat())).collect();
    }
    candidates.sort_by_key(|c| (c.iter().sum::<i64>(), c.clone()));
    let c = candidates.into_iter().find(|c| fits(c)).expect("c = max|offset| + 1 fits");
    c.into_iter().map(|x| x as u32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offs(list: &[&[i32]]) -> Vec<Vec<i32>> {
        list.iter().map(|o| o.to_vec()).collect()
    }

    #[test]
    fn five_point_gauss_seidel_is_the_antidiagonal() {
        let o = offs(&[&[-1, 0], &[1, 0], &[0, -1], &[0, 1], &[0, 0]]);
        assert_eq!(hyperplane(&o, &[true, true]), [1, 1]);
        assert_eq!(skew(&o, &[true, true]), [0, 0]);
        assert_eq!(hyperplane(&o, &[true, false]), [1, 1]);
    }

    #[test]
    fn diagonal_reads_need_a_steeper_plane_and_a_skew() {
        // Earlier (-1, +1) and later (+1, -1): a0 > a1 and tiles must be skewed.
        let o = offs(&[&[-1, 1], &[1, -1], &[0, -1], &[0, 1]]);
        assert_eq!(hyperplane(&o, &[true, true]), [2, 1]);
        assert_eq!(skew(&o, &[true, true]), [0, 1]);
        // Descending axis 1 turns (-1, +1) into (-1, -1) in oriented coordinates.
        assert_eq!(hyperplane(&o, &[true, false]), [1, 1]);
    }

    #[test]
    fn seven_point_3d_and_radius_two() {
        let o = offs(&[&[-1, 0, 0], &[1, 0, 0], &[0, -1, 0], &[0, 1, 0], &[0, 0, -1], &[0, 0, 1]]);
        assert_eq!(hyperplane(&o, &[true, true, true]), [1, 1, 1]);
        let o = offs(&[&[-2, 0], &[0, 2], &[0, -2], &[2, 0]]);
        assert_eq!(hyperplane(&o, &[false, true]), [1, 1]);
    }

    #[test]
    fn found_planes_separate_every_read() {
        let o = offs(&[&[-1, 3, -2], &[0, -2, 5], &[1, -3, 0], &[0, 0, -1], &[2, 2, 2]]);
        let dirs = [true, false, true];
        let a = hyperplane(&o, &dirs);
        let c = skew(&o, &dirs);
        for off in &o {
            let x = oriented(off, &dirs);
            let s = lex_sign(&x);
            let t: i64 = x.iter().zip(&a).map(|(x, a)| x * *a as i64).sum();
            assert_eq!(t.signum(), s);
            let mut z = 0;
            for k in 0..3 {
                z = x[k] + c[k] as i64 * z;
                assert!(z * s >= 0);
            }
        }
    }
}
