//! 1-D, 2-D and 3-D fields: metadata, and the point function on hand-made reads.
use stencil::prelude::*;

stencil! {
    pub fn average1(mut u: Field1) -> Real {
        (u[-1] + u[1]) / 2.0
    }

    pub fn poisson2(mut u: Field2, f: Field2, h2: Real) -> Real {
        (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] + h2 * f[0, 0]) / 4.0
    }

    pub fn anisotropic3(mut u: Field3, k: Field3) -> Real {
        k[0, 0, 0] * (u[-2, 0, 0] + u[2, 0, 0]) + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -3] + u[0, 0, 3]
    }
}

fn main() {
    let m = <Average1 as Stencil<1>>::META;
    assert_eq!(m.name, "average1");
    assert_eq!(m.dim, 1);
    assert_eq!(m.radius, &[1]);
    assert_eq!(m.reads.len(), 2);
    assert_eq!(m.reads[0].offset, &[-1]);
    assert_eq!(m.reads[1].offset, &[1]);
    assert!(m.sweep.is_none());
    let p = Average1Params;
    let reads = [3.0, 5.0];
    assert_eq!(<Average1 as Stencil<1>>::point(|s| reads[s], &p), 4.0);

    let m = <Poisson2 as Stencil<2>>::META;
    assert_eq!(m.dim, 2);
    assert_eq!(m.radius, &[1, 1]);
    assert_eq!(m.fields.len(), 2);
    assert_eq!((m.fields[0].name, m.fields[0].unknown), ("u", true));
    assert_eq!((m.fields[1].name, m.fields[1].unknown), ("f", false));
    assert_eq!(m.unknown, 0);
    assert_eq!(m.fields[0].offsets, &[&[-1, 0][..], &[1, 0], &[0, -1], &[0, 1]]);
    assert_eq!(m.fields[1].offsets, &[&[0, 0][..]]);
    assert_eq!(m.reads.len(), 5);
    assert_eq!((m.reads[4].field, m.reads[4].offset), (1, &[0, 0][..]));
    assert_eq!(m.params.len(), 1);
    assert_eq!(m.params[0].name, "h2");
    // Four additions, one product, one division.
    assert_eq!(m.flops, 6);
    assert_eq!(m.arrays_per_point, 3);
    let reads = [1.0f32, 2.0, 3.0, 4.0, 8.0];
    let v = <Poisson2 as Stencil<2>>::point(|s| reads[s], &Poisson2Params { h2: 0.5 });
    assert_eq!(v, (1.0 + 2.0 + 3.0 + 4.0 + 0.5 * 8.0) / 4.0);

    let m = <Anisotropic3 as Stencil<3>>::META;
    assert_eq!(m.dim, 3);
    // Radius per axis, slowest axis first.
    assert_eq!(m.radius, &[2, 1, 3]);
    assert_eq!(m.reads[0].field, 1);
    assert_eq!(m.reads[0].offset, &[0, 0, 0]);
    assert_eq!(m.reads.len(), 7);
}
