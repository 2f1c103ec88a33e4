//! ANSI colors (`--color`) written exactly as LLVM's output streams write
//! them: a color is `ESC[0;1;3Nm` (or `ESC[0;1;4Nm` for a background), the
//! stream's own color is bold `ESC[1m`, and every colored piece ends with
//! `ESC[0m`. Turned off, every escape is empty and the text is unchanged.

/// The colors FileCheck uses, numbered as in ANSI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Color {
    Black = 0,
    Red = 1,
    Green = 2,
    Blue = 4,
    Magenta = 5,
    Cyan = 6,
}

/// Whether escapes are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Paint {
    pub(crate) enabled: bool,
}

impl Paint {
    pub(crate) fn new(enabled: bool) -> Paint {
        Paint { enabled }
    }

    /// Bold in the stream's own color.
    pub(crate) fn bold(self) -> &'static str {
        if self.enabled { "\x1b[1m" } else { "" }
    }

    /// A bold foreground color.
    pub(crate) fn fg(self, color: Color) -> String {
        if self.enabled { format!("\x1b[0;1;3{}m", color as u8) } else { String::new() }
    }

    /// A bold background color.
    pub(crate) fn bg(self, color: Color) -> String {
        if self.enabled { format!("\x1b[0;1;4{}m", color as u8) } else { String::new() }
    }

    /// Back to plain text.
    pub(crate) fn reset(self) -> &'static str {
        if self.enabled { "\x1b[0m" } else { "" }
    }
}
