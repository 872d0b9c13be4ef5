//! agentty's own lines on its stdout and stderr (usage errors, the way back, `agentty run`'s
//! diagnostics), written so that a stream that is gone is not a panic: `println!` panics when
//! the write fails, and after the terminal hangs up (EIO) or a reader closes a pipe, leaving
//! must still end with the log written and the right exit status.

use std::fmt::Display;
use std::io::Write;

/// One line on stdout; a failure to write it is ignored (nobody is there to read it).
pub fn out_line(line: impl Display) {
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// One line on stderr; a failure to write it is ignored (nobody is there to read it).
pub fn err_line(line: impl Display) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
