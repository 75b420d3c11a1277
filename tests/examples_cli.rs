//! The examples on bad command lines: a message that names the option and its valid range
//! (or the library's error, in `Display` form), a non-zero exit code, and no panic; and help
//! that shows each example's own defaults. Builds the examples it runs (a no-op when `cargo
//! test` has built them already).

use std::path::PathBuf;
use std::process::{Command, Output};

/// The path of example `name`, built with the profile `cargo test` builds examples with.
fn example(name: &str) -> PathBuf {
    let built = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--profile", "test", "--example", name, "--message-format=json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(built.status.success(), "{name} does not build: {}", String::from_utf8_lossy(&built.stderr));
    let marker = "\"executable\":\"";
    let text = String::from_utf8_lossy(&built.stdout);
    let line = text.lines().filter(|l| l.contains("\"reason\":\"compiler-artifact\"")).find(|l| l.contains(marker));
    let start = line.and_then(|l| l.find(marker).map(|at| &l[at + marker.len()..])).expect("an executable");
    PathBuf::from(&start[..start.find('"').expect("a closing quote")])
}

fn run(name: &str, args: &[&str]) -> Output {
    Command::new(example(name)).args(args).output().unwrap()
}

/// That `name args` fails with `code` and its standard error starts with `error: ` and holds
/// every one of `says`.
fn fails(name: &str, args: &[&str], code: i32, says: &[&str]) {
    let out = run(name, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let what = format!("{name} {}", args.join(" "));
    assert_eq!(out.status.code(), Some(code), "{what}: exit status\n{stderr}");
    assert!(stderr.starts_with("error: "), "{what}: {stderr}");
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    for s in says {
        assert!(stderr.contains(s), "{what}: `{s}` is not in\n{stderr}");
    }
}

#[test]
fn numeric_options_are_checked_against_their_range() {
    fails("06_out_of_core", &["--slab", "0"], 2, &["--slab", "at least 1"]);
    fails("06_out_of_core", &["--device-memory-gib=-1"], 2, &["--device-memory-gib", "greater than 0"]);
    fails("06_out_of_core", &["--device-memory-gib", "nan"], 2, &["--device-memory-gib"]);
    fails("07_gauss_seidel", &["--size", "0"], 2, &["--size", "from 3"]);
    fails("07_gauss_seidel", &["--methods", "jacobi,newton"], 2, &["--methods", "gauss-seidel"]);
    fails("07_convection_diffusion", &["--tau", "1e9"], 2, &["--tau", "less than 20"]);
    fails("07_convection_diffusion", &["--tau", "-1"], 2, &["--tau", "greater than 0"]);
    fails("01_poisson3d", &["--size", "2"], 2, &["--size", "at least 3"]);
    fails("05_hierarchical", &["--halos", "1,-2"], 2, &["--halos", "from 1"]);
}

#[test]
fn errors_are_printed_as_sentences_with_a_failure_code() {
    // The library's error, in its `Display` form (not `Error: InvalidShape { … }`).
    fails("01_poisson3d", &["--size", "18446744073709551615"], 1, &["invalid shape", "more bytes than a process"]);
    fails("01_poisson3d", &["--tolerance", "1e-12"], 1, &["--tolerance 1e-12 may never be met in f32"]);
}

#[test]
fn help_shows_each_examples_own_defaults_and_does_not_run() {
    for (name, default) in [("01_poisson3d", "[default: 64]"), ("02_poisson2d", "[default: 257]")] {
        let out = run(name, &["--help"]);
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && help.contains(default), "{name} --help:\n{help}");
    }
    let out = run("03_custom_stencil", &["--help"]);
    assert!(out.status.success(), "03_custom_stencil --help");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage:"), "it prints help instead of running");
    fails("03_custom_stencil", &["--size", "5"], 2, &["unexpected argument"]);
}

#[test]
fn the_heat_box_keeps_its_heat_between_insulated_walls() {
    let png = std::env::temp_dir().join(format!("heat_box_{}.png", std::process::id()));
    let out = run(
        "10_heat_box",
        &["--size", "20", "--steps", "600", "--every", "200", "--backend", "cpu", "--png"]
            .iter()
            .copied()
            .chain([png.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.lines().filter(|l| l.starts_with("| 200 |") || l.starts_with("| 600 |")).count(), 2, "{stdout}");
    let drift: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("largest relative drift of the total heat: "))
        .expect("the drift line")
        .parse()
        .unwrap();
    assert!(drift <= 1e-12, "the total heat drifted by {drift:e}");
    assert!(std::fs::metadata(&png).is_ok_and(|m| m.len() > 0), "no picture at {}", png.display());
    let _ = std::fs::remove_file(png);
}

#[test]
fn gray_scott_writes_its_frames_and_last_step() {
    let dir = std::env::temp_dir().join(format!("gray_scott_{}", std::process::id()));
    // The picture's folder must exist (the example checks it before running); the frames'
    // folder is made by the example.
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("last.png");
    let (frames, last) = (dir.join("frames"), png.to_str().unwrap());
    let args = ["--size", "48", "--steps", "300", "--every", "100", "--backend", "cpu", "--frames"];
    let out = run(
        "09_gray_scott",
        &args.iter().copied().chain([frames.to_str().unwrap(), "--png", last]).collect::<Vec<_>>(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("wrote 3 frames of v"), "{stdout}");
    let written = std::fs::read_dir(&frames).unwrap().count();
    assert_eq!(written, 3, "frames in {}", frames.display());
    assert!(std::fs::metadata(&png).is_ok_and(|m| m.len() > 0), "no picture at {}", png.display());
    let _ = std::fs::remove_dir_all(dir);
}
