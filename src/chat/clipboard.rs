//! The system clipboard through the platform's own tools. Ctrl+V with no image path before the
//! cursor: the image on the clipboard (a screenshot copied), or the image file whose path the
//! clipboard holds (a file copied in a file manager), read with `wl-paste` (Wayland), `xclip`
//! (X11) or `pbpaste` (macOS: text only); an image copied as bytes is kept in agentty's state
//! dir (named by its hash) so that the log's path names a real file. `/copy` writes with
//! `wl-copy`, `xclip` or `pbcopy` ([`copy_text`]).

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::attachment::{self, ImageAttachment, ImageMime};

/// How long a clipboard tool may take (one that waits for a display must not hang Ctrl+V).
const TOOL_LIMIT: Duration = Duration::from_secs(2);

/// The image types asked for, in order of preference.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// A clipboard tool: how to list the clipboard's types, read one type, and read its text.
struct Tool {
    program: &'static str,
    list: &'static [&'static str],
    /// Arguments before and after the type.
    read: (&'static [&'static str], &'static [&'static str]),
    text: &'static [&'static str],
}

const TOOLS: [Tool; 3] = [
    Tool {
        program: "wl-paste",
        list: &["--list-types"],
        read: (&["--no-newline", "--type"], &[]),
        text: &["--no-newline"],
    },
    Tool {
        program: "xclip",
        list: &["-selection", "clipboard", "-t", "TARGETS", "-o"],
        read: (&["-selection", "clipboard", "-t"], &["-o"]),
        text: &["-selection", "clipboard", "-o"],
    },
    Tool {
        program: "pbpaste",
        list: &[],
        read: (&[], &[]),
        text: &[],
    },
];

/// The tools that write the clipboard: program and arguments, text on stdin.
const COPY_TOOLS: [(&str, &[&str]); 3] = [
    ("wl-copy", &[]),
    ("xclip", &["-selection", "clipboard"]),
    ("pbcopy", &[]),
];

/// Puts `text` on the system clipboard with the first copy tool found on `path_var`; the
/// tool's name, or why it could not (no tool, or the tool failed).
pub(super) fn copy_text(path_var: &OsStr, text: &str) -> Result<&'static str, String> {
    let mut failures = Vec::new();
    for (name, args) in COPY_TOOLS {
        let Some(program) = find_program(path_var, name) else {
            continue;
        };
        match write_to(&program, args, text) {
            Ok(()) => return Ok(name),
            Err(why) => failures.push(why),
        }
    }
    Err(if failures.is_empty() {
        "no clipboard tool was found (wl-copy, xclip or pbcopy)".to_owned()
    } else {
        failures.join("; ")
    })
}

/// Runs `program` with `text` on its stdin; it is killed after [`TOOL_LIMIT`].
fn write_to(program: &Path, args: &[&str], text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("{}: {error}", program.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A tool that does not read its input fails below by its status.
        let _ = stdin.write_all(text.as_bytes());
    }
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("{} failed ({status})", program.display())),
            Ok(None) if started.elapsed() < TOOL_LIMIT => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{} did not finish", program.display()));
            }
        }
    }
}

/// Where the clipboard's image is, as a Ctrl+V attachment: the image itself (saved under
/// `save_dir`), or the image file its text names (relative to `cwd`, `~/` under `home`).
/// `path_var` is the `PATH` the tools are looked for in.
pub(super) fn clipboard_image(
    path_var: &OsStr,
    save_dir: &Path,
    cwd: &Path,
    home: Option<&Path>,
    max_bytes: u64,
) -> Result<ImageAttachment, String> {
    let Some((tool, program)) = TOOLS
        .iter()
        .find_map(|tool| find_program(path_var, tool.program).map(|found| (tool, found)))
    else {
        return Err(
            "Ctrl+V: no clipboard tool was found (wl-paste, xclip or pbpaste); type or \
                    paste the image's path, then Ctrl+V"
                .to_owned(),
        );
    };
    if !tool.list.is_empty() {
        let types = run(&program, tool.list, 64 * 1024).unwrap_or_default();
        let types = String::from_utf8_lossy(&types);
        if let Some(wanted) = IMAGE_TYPES
            .iter()
            .find(|wanted| types.lines().any(|line| line.trim() == **wanted))
        {
            let args: Vec<&str> = tool
                .read
                .0
                .iter()
                .copied()
                .chain([*wanted])
                .chain(tool.read.1.iter().copied())
                .collect();
            let bytes = run(&program, &args, max_bytes + 1)
                .map_err(|why| format!("Ctrl+V: the clipboard's image could not be read: {why}"))?;
            return save(bytes, save_dir, max_bytes);
        }
    }
    let text = run(&program, tool.text, 64 * 1024).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    match attachment::pasted_image_path(&text) {
        Some(typed) => attachment::load(&attachment::resolve(&typed, cwd, home), max_bytes),
        None => Err(
            "Ctrl+V: the clipboard holds no image and no image's path; type or paste the \
             image's path, then Ctrl+V"
                .to_owned(),
        ),
    }
}

/// The clipboard's image bytes, kept under `save_dir` by their hash.
fn save(bytes: Vec<u8>, save_dir: &Path, max_bytes: u64) -> Result<ImageAttachment, String> {
    if bytes.len() as u64 > max_bytes {
        return Err(format!(
            "No image attached: the clipboard's image is over the {} limit (image_max_bytes in \
             the config)",
            attachment::human_size(max_bytes)
        ));
    }
    let Some(mime) = ImageMime::sniff(&bytes) else {
        return Err(
            "No image attached: the clipboard's image is not a PNG, JPEG, GIF or WebP".to_owned(),
        );
    };
    let hash = xxhash_rust::xxh3::xxh3_128(&bytes);
    let path = save_dir.join(format!("clipboard-{hash:032x}.{}", mime.short_name()));
    crate::logging::private_state_dir(save_dir)
        .and_then(|()| {
            use std::io::Write;
            crate::files::no_follow()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)?
                .write_all(&bytes)
        })
        .map_err(|error| {
            format!("No image attached: cannot keep the clipboard's image: {error}")
        })?;
    ImageAttachment::from_bytes(path, bytes)
}

fn find_program(path_var: &OsStr, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path_var)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Runs `program` and returns at most `limit` bytes of its stdout; it is killed after
/// [`TOOL_LIMIT`].
fn run(program: &Path, args: &[&str], limit: u64) -> Result<Vec<u8>, String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("{}: {error}", program.display()))?;
    let stdout = child.stdout.take();
    // Read on a thread of its own: a full pipe must not stop the tool from exiting.
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(stdout) = stdout {
            let _ = stdout.take(limit).read_to_end(&mut bytes);
        }
        bytes
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < TOOL_LIMIT => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let bytes = reader.join().unwrap_or_default();
    match status {
        Some(status) if status.success() => Ok(bytes),
        Some(status) => Err(format!("{} exited with {status}", program.display())),
        None => Err(format!("{} did not answer in time", program.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn tool(dir: &Path, name: &str, script: &str) {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn an_image_on_the_clipboard_is_kept_and_attached() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let png = dir.path().join("copied.png");
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.resize(300, 1);
        std::fs::write(&png, &bytes).unwrap();
        tool(
            &bin,
            "wl-paste",
            &format!(
                "case \"$*\" in\n  --list-types) printf 'text/plain\\nimage/png\\n' ;;\n  \
                 '--no-newline --type image/png') cat '{}' ;;\n  *) exit 1 ;;\nesac",
                png.display()
            ),
        );
        let saved = dir.path().join("images");
        let image = clipboard_image(
            bin.as_os_str(),
            &saved,
            dir.path(),
            None,
            attachment::DEFAULT_MAX_BYTES,
        )
        .unwrap();
        assert_eq!(&image.bytes[..], &bytes[..]);
        assert!(image.path.starts_with(&saved));
        assert_eq!(std::fs::read(&image.path).unwrap(), bytes);
        // Over the cap: said, nothing kept.
        let why = clipboard_image(bin.as_os_str(), &saved, dir.path(), None, 100).unwrap_err();
        assert!(why.contains("over the 100 B limit"), "{why}");
    }

    #[test]
    fn a_copied_image_path_is_attached_and_anything_else_is_said_once() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let mut bytes = b"GIF89a".to_vec();
        bytes.resize(50, 0);
        std::fs::write(dir.path().join("anim.gif"), &bytes).unwrap();
        tool(
            &bin,
            "xclip",
            &format!(
                "case \"$*\" in\n  *TARGETS*) printf 'UTF8_STRING\\n' ;;\n  \
                 *) printf 'file://{}/anim.gif' ;;\nesac",
                dir.path().display()
            ),
        );
        let image = clipboard_image(
            bin.as_os_str(),
            &dir.path().join("images"),
            dir.path(),
            None,
            attachment::DEFAULT_MAX_BYTES,
        )
        .unwrap();
        assert_eq!(image.mime, ImageMime::Gif);
        assert_eq!(image.path, dir.path().join("anim.gif"));
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let why = clipboard_image(
            empty.as_os_str(),
            dir.path(),
            dir.path(),
            None,
            attachment::DEFAULT_MAX_BYTES,
        )
        .unwrap_err();
        assert!(why.contains("no clipboard tool was found"), "{why}");
    }

    /// `/copy`: the first tool found gets the text and is named; one that fails is said, and
    /// so is a `PATH` without any (then nothing claims the copy worked).
    #[test]
    fn copying_text_names_the_tool_that_took_it_or_says_why_none_did() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let kept = dir.path().join("kept.txt");
        tool(&bin, "xclip", &format!("cat > '{}'", kept.display()));
        assert_eq!(copy_text(bin.as_os_str(), "the answer\n"), Ok("xclip"));
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "the answer\n");
        // A tool that fails: the next one takes it; the last one failing is said.
        tool(&bin, "wl-copy", "exit 3");
        assert_eq!(copy_text(bin.as_os_str(), "again"), Ok("xclip"));
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "again");
        std::fs::remove_file(bin.join("xclip")).unwrap();
        let why = copy_text(bin.as_os_str(), "x").unwrap_err();
        assert!(why.contains("wl-copy failed"), "{why}");
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let why = copy_text(empty.as_os_str(), "x").unwrap_err();
        assert_eq!(
            why,
            "no clipboard tool was found (wl-copy, xclip or pbcopy)"
        );
    }
}
