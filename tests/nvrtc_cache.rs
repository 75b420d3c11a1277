//! The module cache: memory first, then disk, then NVRTC; keyed by everything that changes
//! the device code. Needs the NVRTC library: ignored unless asked for (`-- --ignored`, as
//! `.ci/run` does), and then fails without it.

use stencil::builtin::Jacobi5;
use stencil::cuda::{self, CompileOptions, Mode, Origin, compile_cached, nvrtc_available};

#[test]
#[ignore = "needs the NVRTC library"]
fn modules_come_from_memory_then_disk_then_nvrtc() {
    assert!(nvrtc_available(), "this test needs the NVRTC library: add its folder to LD_LIBRARY_PATH");
    let dir = tempfile::tempdir().unwrap();
    let dump = tempfile::tempdir().unwrap();
    // SAFETY: this test binary has one test, so no other thread reads the environment.
    unsafe {
        std::env::set_var(cuda::CACHE_DIR_VAR, dir.path());
        std::env::set_var(cuda::DUMP_DIR_VAR, dump.path());
    }
    let options = CompileOptions::new::<f32>(Mode::Exact, "sm_90");
    let source = Jacobi5::CUDA_SOURCE;
    let first = compile_cached("jacobi5", source, &options, 13000).unwrap();
    assert_eq!(first.origin, Origin::Compiled);
    assert_eq!(compile_cached("jacobi5", source, &options, 13000).unwrap().origin, Origin::Memory);
    cuda::clear_memory_cache();
    let from_disk = compile_cached("jacobi5", source, &options, 13000).unwrap();
    assert_eq!((from_disk.origin, &from_disk.cubin), (Origin::Disk, &first.cubin));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    assert_eq!(std::fs::read_to_string(dump.path().join("jacobi5.cu")).unwrap(), source);

    // Another element type, mode or driver is another module.
    let f64_options = CompileOptions::new::<f64>(Mode::Exact, "sm_90");
    assert_eq!(compile_cached("jacobi5", source, &f64_options, 13000).unwrap().origin, Origin::Compiled);
    let fast = CompileOptions::new::<f32>(Mode::Fast, "sm_90");
    assert_eq!(compile_cached("jacobi5", source, &fast, 13000).unwrap().origin, Origin::Compiled);
    assert_eq!(compile_cached("jacobi5", source, &options, 13010).unwrap().origin, Origin::Compiled);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);

    // `off` keeps the disk out of it.
    cuda::clear_memory_cache();
    // SAFETY: as above.
    unsafe { std::env::set_var(cuda::CACHE_DIR_VAR, "off") };
    assert_eq!(cuda::cache_dir(), None);
    assert_eq!(compile_cached("jacobi5", source, &options, 13000).unwrap().origin, Origin::Compiled);
}
