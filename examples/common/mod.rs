//! What the examples share on the command line: parsing, option parsers that state the valid
//! range in their message, and an end of `main` that prints errors as sentences.

// Each example uses a part of this module.
#![allow(dead_code)]

use std::error::Error;
use std::fmt::Display;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Command, Parser};

/// Starts the logger that prints the library's messages, then parses the command line, or
/// prints clap's message and exits (0 for `--help`, 2 otherwise).
pub fn parse<A: Parser>() -> A {
    parse_with(|command| command).0
}

/// [`parse`] after `adjust` changed the command (a default that depends on the example), with
/// the matches, which tell an option given on the command line from its default. A value may
/// be negative (`--tau -1`), so that the option's own parser names its range rather than clap
/// taking `-1` for a flag.
pub fn parse_with<A: Parser>(adjust: impl FnOnce(Command) -> Command) -> (A, ArgMatches) {
    // The library's notices (a run that goes to the CPU for want of a GPU, a grid that could
    // not be page-locked) are warnings; `RUST_LOG` chooses others.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let negative_values = |arg: Arg| {
        let takes_values = arg.get_action().takes_values();
        arg.allow_negative_numbers(takes_values)
    };
    let mut command = adjust(A::command()).mut_args(negative_values);
    let matches = command.try_get_matches_from_mut(std::env::args_os()).unwrap_or_else(|e| e.exit());
    match A::from_arg_matches(&matches) {
        Ok(args) => (args, matches),
        Err(e) => e.format(&mut command).exit(),
    }
}

/// Refuses an option given on the command line that this run would ignore: `options` holds
/// each option's id, whether it applies, and when it does ("to --schedule hierarchical").
pub fn refuse_ignored(matches: &ArgMatches, options: &[(&str, bool, &str)]) -> Result<(), String> {
    for &(id, applies, when) in options {
        if !applies && matches.value_source(id) == Some(ValueSource::CommandLine) {
            return Err(format!("--{} has no effect here: it applies {when}", id.replace('_', "-")));
        }
    }
    Ok(())
}

/// The end of `main`: on an error, `error: …` and its causes on stderr and a failure exit code.
/// (`main` returning `Result` would print the error's `Debug` form.)
pub fn exit<E: Into<Box<dyn Error>>>(result: Result<(), E>) -> ExitCode {
    match result.map_err(Into::into) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", message(&*e));
            ExitCode::FAILURE
        }
    }
}

/// An error's message followed by its causes, one a line; a cause whose text the message
/// already quotes is not repeated.
pub fn message(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let line = c.to_string();
        if !text.contains(&line) {
            text += &format!("\n  caused by: {line}");
        }
        cause = c.source();
    }
    text
}

/// A parser of integers in `range`.
pub fn int(range: RangeInclusive<usize>) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    in_range(range)
}

/// A parser of random seeds: any `u32`.
pub fn seed() -> impl Fn(&str) -> Result<u32, String> + Clone + Send + Sync + 'static {
    in_range(0..=u32::MAX)
}

fn in_range<T>(range: RangeInclusive<T>) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: FromStr + PartialOrd + Display + Clone + Send + Sync + 'static,
{
    move |s| match s.parse::<T>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(format!("expected an integer from {} to {}", range.start(), range.end())),
    }
}

/// A parser of integers of at least `min`, with no upper bound of their own (a size that
/// the library checks against memory, say).
pub fn at_least(min: usize) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    move |s| match s.parse::<usize>() {
        Ok(n) if n >= min => Ok(n),
        _ => Err(format!("expected an integer of at least {min}")),
    }
}

/// A parser of numbers strictly between `low` and `high` (an infinite `high` asks only for a
/// finite number); NaN is never in range.
pub fn real(low: f64, high: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s| match s.parse::<f64>() {
        Ok(x) if low < x && x < high && x.is_finite() => Ok(x),
        _ if high.is_infinite() => Err(format!("expected a finite number greater than {low}")),
        _ => Err(format!("expected a number greater than {low} and less than {high}")),
    }
}

/// A parser of the path of a file to write, `.extension`, in a directory that exists: checked
/// before a long run rather than after it.
pub fn output(extension: &'static str) -> impl Fn(&str) -> Result<PathBuf, String> + Clone + Send + Sync + 'static {
    move |s| {
        let path = PathBuf::from(s);
        if path.extension().is_none_or(|e| e != extension) {
            return Err(format!("expected a file name ending in .{extension}"));
        }
        if path.is_dir() {
            return Err("this is a directory".into());
        }
        match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(dir) if !dir.is_dir() => Err(format!("the directory `{}` does not exist", dir.display())),
            _ => Ok(path),
        }
    }
}
