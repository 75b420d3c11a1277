//! Every emitted CUDA translation unit compiles with NVRTC for `sm_90`, in both precisions
//! and both floating-point modes. Needs only the NVRTC library, not a GPU: the tests are
//! ignored unless asked for (`cargo test --test nvrtc_compile -- --ignored`, as `.ci/run`
//! does with the library installed), and then fail without it.

use stencil::builtin::{AtHalf1, AtHalf2, GrayScott, Jacobi5, Jacobi7};
use stencil::cuda::{CompileOptions, Mode, compile, nvrtc_available};
use stencil::prelude::*;

stencil! {
    /// Every construct of the language in one stencil.
    fn everything(mut u: Field3, k: Field3, a: Real, n: i32) -> Real {
        let c = if u[0, 0, 0] > 0.0 && !(n == 2) || n < -1 { a.abs() } else { { let t = n * 3 - 1; t } };
        let w = u[-2, 1, 0].max(k[1, 1, 1]).min(u[0, 0, 2]).mul_add(a, -c);
        (w.sqrt().exp() + w.ln() * w.sin() - w.cos().tanh()) / u[0, -1, 0].powi(n) + (1 / 2) * c
    }

    /// A user-written radius-2 stencil in 1-D and a 2-D sweep.
    fn wide(mut u: Field1, f: Field1) -> Real {
        (u[-2] + u[2] + 4.0 * (u[-1] + u[1]) + f[0]) / 10.0
    }

    /// Field names that are C keywords or kernel variables.
    sweep(+, -) fn names(mut x: Field2, out: Field2, int: Real) -> Real {
        x[-1, 0] + x[0, 1] + out[0, 0] * int
    }

    /// A 3-D sweep with diagonal reads across the sweep (a skewed wavefront).
    sweep(-, +, -) fn skewed3(mut u: Field3, f: Field3) -> Real {
        (u[1, -1, 0] + u[-1, 1, 0] + u[0, 0, 2] + u[0, 0, -2] + u[0, 1, -1] + f[0, 0, 0]) / 6.0
    }

    /// A 1-D sweep: one lane marching the whole axis.
    sweep(-) fn line(mut u: Field1, tid: Field1) -> Real {
        (u[1] + u[-1] + u[2] + tid[0]) / 3.0
    }

    /// Names the kernels use for themselves, a name beyond ASCII and a raw identifier.
    sweep(+, -) fn clash(mut i: Field2, x: Field2, tid: Field2, REAL: Real, R0: Real, λ: Real, r#type: i32) -> Real {
        let idx = i[-1, 0] + i[0, 1] + x[0, 0] * tid[0, -1];
        let s0 = idx * REAL + R0 * λ;
        s0 + r#type
    }

    /// A Jacobi stencil whose every name is one the generated code also uses.
    fn idx(mut i: Field2, x: Field2, tid: Field2, out: Field2, T: Real, N: i32, point: Real, load: Real,
           params: Real, value: Real, R0: Real, MARCH: Real, REAL: Real, λ: Real, r#type: Real,
           __element: i32) -> Real {
        let k = i[-1, 0] + i[1, 0];
        let j = x[0, -1] * tid[0, 1] + out[0, 0];
        let s0 = k * T + j * N;
        let v = point * load + params * value;
        let z = R0 + MARCH * REAL + λ * r#type + __element;
        let y = { let k = s0 + v; k * z };
        y + k
    }

    /// Two unknowns around a read-only field, with an input named like the second output.
    fn pair(mut u: Field3, out_1: Field3, mut v: Field3, k: Real) -> (Real, Real) {
        let lap = u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -2] + u[0, 0, 2] - 6.0 * u[0, 0, 0];
        (u[0, 0, 0] + k * lap * v[0, 0, 0], v[0, 1, 0] - k * out_1[0, 0, 0])
    }

    /// Three unknowns in 1-D.
    fn triple(mut a: Field1, mut b: Field1, mut c: Field1) -> (Real, Real, Real) {
        (b[-1] + c[1], a[1] * c[-1], 0.5 * (a[0] + b[0]))
    }

    /// A lane-kernel sweep affine in its new reads through a `let`, a condition and
    /// `mul_add`: fast mode's update from slopes.
    sweep(+, +) fn affine(mut u: Field2, k: Field2, w: Real) -> Real {
        let a = w * u[0, -1];
        let b = if k[0, 0] > 0.0 { u[-1, 0] } else { 0.5 * u[-1, 0] };
        (b.mul_add(2.0, a) + u[1, 0] * k[0, 0] + u[0, 1]) / (2.0 + k[0, 0])
    }

    /// A sweep named like a kernel macro's prefix, with the wavefront kernel's own names.
    sweep(+, -) fn at(mut READS: Field2, win: Field2, order: Real, progress: Real, ticket: Real) -> Real {
        let me = READS[-1, 0] + READS[0, 1];
        let done = win[0, 0] * order;
        me * progress + done * ticket
    }
}

/// Fails the test unless the NVRTC library can be loaded.
fn require_nvrtc() {
    assert!(nvrtc_available(), "this test needs the NVRTC library: add its folder to LD_LIBRARY_PATH");
}

/// The parameter sizes of kernel `symbol`'s `.entry` in `ptx`, in order.
fn entry_param_sizes(ptx: &str, symbol: &str) -> Option<Vec<usize>> {
    let start = ptx.find(&format!(".entry {symbol}("))?;
    let params = &ptx[start..start + ptx[start..].find(')')?];
    let sizes = params
        .lines()
        .filter_map(|line| line.trim().strip_prefix(".param ."))
        .map(|ty| match &ty[1..3] {
            "64" => 8,
            "32" => 4,
            other => panic!("{symbol}: a parameter of width {other} in `{ty}`"),
        })
        .collect();
    Some(sizes)
}

/// Every kernel of the stencil's manifest compiles, in both precisions and modes (with a
/// register working region of 32 rows, and the plain pass at every vector width), and its parameters in the PTX have the sizes the
/// manifest gives: the launcher pushes its arguments from the manifest, so a drift between
/// the source and the manifest fails here, without a GPU.
fn compile_all<S: Stencil<N>, const N: usize>() {
    let name = S::META.name;
    assert!(!S::KERNELS.kernels.is_empty(), "{name}: the manifest lists no kernel");
    for mode in [Mode::Exact, Mode::Fast] {
        for (options, real) in
            [(CompileOptions::new::<f32>(mode, "sm_90"), 4), (CompileOptions::new::<f64>(mode, "sm_90"), 8)]
        {
            // Every vector width of the plain pass, without compiling more translation units:
            // f32 with 2 and 4 points per thread, f64 with 1 and 2.
            let vec = match (mode, real) {
                (Mode::Exact, 4) => 2,
                (Mode::Fast, 4) => 4,
                (Mode::Exact, _) => 1,
                _ => 2,
            };
            // The streaming kernel at several levels, columns per thread, with and without
            // the mirror rule, its threads holding every column of a 16 × 16·cols region, its
            // levels in either order (ascending where the stencil allows it; the mirror rule
            // overrides it) and level 0 in the levels' loop or after it.
            let (levels, cols, mirrors, ascending, zero_in_loop) = match (mode, real) {
                (Mode::Exact, 4) => (3, 2, 1, 1, 0),
                (Mode::Fast, 4) => (2, 1, 0, 0, 1),
                (Mode::Exact, _) => (2, 3, 0, 1, 0),
                _ => (1, 1, 1, 0, 1),
            };
            let ascending = if mirrors == 1 || S::KERNELS.streaming.ascending_ring.is_some() { ascending } else { 0 };
            let options = options
                .define("HIER_ROWS", 32)
                .define("VEC", vec)
                .define("STREAM_SUB", levels)
                .define("STREAM_COLS", cols)
                .define("STREAM_THREADS", 256)
                .define("STREAM_W1", 16)
                .define("STREAM_W2", 16 * cols)
                .define("STREAM_MIRRORS", mirrors)
                .define("STREAM_ASCENDING", ascending)
                .define("STREAM_ZERO_IN_LOOP", zero_in_loop);
            let ptx = compile(name, S::CUDA_SOURCE, &options).unwrap_or_else(|e| panic!("{e}")).ptx;
            for kernel in S::KERNELS.kernels {
                let sizes = entry_param_sizes(&ptx.0, kernel.symbol)
                    .unwrap_or_else(|| panic!("{name}: no `.entry {}` in the PTX ({options:?})", kernel.symbol));
                let expected: Vec<usize> = kernel.params.iter().map(|p| p.ty.size(real)).collect();
                assert_eq!(sizes, expected, "{}: parameter sizes in the PTX and in the manifest", kernel.symbol);
            }
            let entries = ptx.0.matches(".entry ").count();
            assert_eq!(entries, S::KERNELS.kernels.len(), "{name}: kernels in the PTX and in the manifest");
        }
    }
}

/// Each kernel of the stencil's manifest compiles alone, with every other kernel's guard
/// at 0, as a run that launches only it compiles it: nothing it needs lies in another
/// kernel's part of the unit, and the guards leave the others out.
fn compile_each_alone<S: Stencil<N>, const N: usize>() {
    let name = S::META.name;
    for kernel in S::KERNELS.kernels {
        let mut options = CompileOptions::new::<f32>(Mode::Exact, "sm_90").define("STREAM_SUB", 2);
        for other in S::KERNELS.kernels {
            options = options.define(other.guard, u8::from(other.kind == kernel.kind));
        }
        let output = compile(name, S::CUDA_SOURCE, &options).unwrap_or_else(|e| panic!("{}: {e}", kernel.symbol));
        let entries: Vec<&str> = output.ptx.0.lines().filter(|l| l.contains(".entry ")).collect();
        assert_eq!(entries.len(), 1, "{}: the PTX's entries {entries:?}", kernel.symbol);
        assert!(entries[0].contains(&format!(".entry {}(", kernel.symbol)), "{}: {entries:?}", kernel.symbol);
        assert!(!output.cubin.0.is_empty(), "{}: no device code", kernel.symbol);
    }
}

#[test]
#[ignore = "needs the NVRTC library"]
fn builtin_stencils_compile() {
    require_nvrtc();
    compile_all::<Jacobi5, 2>();
    compile_all::<Jacobi7, 3>();
    compile_all::<AtHalf1, 2>();
    compile_all::<AtHalf2, 2>();
    compile_all::<GrayScott, 2>();
}

#[test]
#[ignore = "needs the NVRTC library"]
fn every_construct_compiles() {
    require_nvrtc();
    compile_all::<Everything, 3>();
    compile_all::<Wide, 1>();
    compile_all::<Names, 2>();
    compile_all::<Skewed3, 3>();
    compile_all::<Line, 1>();
    compile_all::<Pair, 3>();
    compile_all::<Triple, 1>();
    compile_all::<Affine, 2>();
}

#[test]
#[ignore = "needs the NVRTC library"]
fn names_the_generated_code_uses_compile() {
    require_nvrtc();
    compile_all::<Clash, 2>();
    compile_all::<Idx, 2>();
    compile_all::<At, 2>();
}

#[test]
#[ignore = "needs the NVRTC library"]
fn each_kernel_compiles_alone() {
    require_nvrtc();
    compile_each_alone::<Jacobi5, 2>();
    compile_each_alone::<Jacobi7, 3>();
    compile_each_alone::<GrayScott, 2>();
    compile_each_alone::<Skewed3, 3>();
    compile_each_alone::<Line, 1>();
}

#[test]
#[ignore = "needs the NVRTC library"]
fn launch_shapes_are_set_at_jit_time() {
    require_nvrtc();
    let options =
        CompileOptions::new::<f32>(Mode::Fast, "sm_90").define("INDEX", "int").define("BLOCK_X", 64).define("MARCH", 4);
    compile("jacobi7", Jacobi7::CUDA_SOURCE, &options).unwrap();
}

#[test]
#[ignore = "needs the NVRTC library"]
fn compile_errors_show_the_log_and_the_numbered_source() {
    require_nvrtc();
    let options = CompileOptions::new::<f32>(Mode::Fast, "sm_90").define("R0", "oops");
    let source = "extern \"C\" __global__ void k(float* x) { x[0] = undefined_name; }";
    let message = compile("broken", source, &options).unwrap_err().to_string();
    assert!(message.contains("undefined_name"), "{message}");
    assert!(message.contains("   1 | extern"), "{message}");
}

#[test]
#[ignore = "needs the NVRTC library"]
fn fast_mode_multiplies_by_the_reciprocal_of_a_constant_divisor() {
    require_nvrtc();
    // Only the plain pass, so that the PTX holds `jacobi7`'s `/ 6.0` and nothing else that divides.
    let ptx = |mode| {
        let options = CompileOptions::new::<f32>(mode, "sm_90")
            .define("KERNEL_PLAIN_MEASURE", 0)
            .define("KERNEL_TILED", 0)
            .define("KERNEL_HIER", 0)
            .define("KERNEL_HIER_ROWS", 0)
            .define("KERNEL_STREAM", 0)
            .define("KERNEL_BOUNDARY", 0);
        compile("jacobi7", Jacobi7::CUDA_SOURCE, &options).unwrap().ptx.0
    };
    let (exact, fast) = (ptx(Mode::Exact), ptx(Mode::Fast));
    assert!(exact.contains("div.rn.f32"), "exact mode divides by 6 with IEEE division");
    assert!(!fast.contains("div."), "fast mode multiplies by 1/6 instead of dividing");
}
