//! Compile tests of the `stencil!` language: every misuse in `tests/ui/<category>/` must
//! fail with the message in its `.stderr`, and every program in `tests/ui/pass/` must build
//! and run. Regenerate the expected output with
//! `TRYBUILD=overwrite cargo test --test compiletest`, then read it.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
    // A later glob overrides an earlier one for the same file, so `pass/` is run, not
    // expected to fail.
    t.pass("tests/ui/pass/*.rs");
}
