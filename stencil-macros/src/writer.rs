//! A text writer that keeps indentation, for emitting another language's source
//! (naga's back ends write the same way).

use std::fmt::Write;

pub struct Writer {
    out: String,
    level: usize,
}

impl Writer {
    pub fn new() -> Self {
        Self { out: String::new(), level: 0 }
    }

    /// One line at the current indentation.
    pub fn line(&mut self, text: impl AsRef<str>) {
        let text = text.as_ref();
        if text.is_empty() {
            self.out.push('\n');
            return;
        }
        for _ in 0..self.level {
            self.out.push_str("    ");
        }
        let _ = writeln!(self.out, "{text}");
    }

    /// A line that opens a block (`… {`); what follows is indented one level more.
    pub fn open(&mut self, head: impl AsRef<str>) {
        self.line(format!("{} {{", head.as_ref()));
        self.level += 1;
    }

    /// Closes the innermost block with `}` and `tail` (such as `;`).
    pub fn close(&mut self, tail: &str) {
        self.level = self.level.saturating_sub(1);
        self.line(format!("}}{tail}"));
    }

    /// Closes the innermost block and opens the next on the same line (`} else {`).
    pub fn reopen(&mut self, head: &str) {
        self.level = self.level.saturating_sub(1);
        self.line(format!("}} {head} {{"));
        self.level += 1;
    }

    pub fn blank(&mut self) {
        self.out.push('\n');
    }

    pub fn finish(self) -> String {
        self.out
    }
}
