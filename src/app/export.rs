//! `/export [FILE]`: the conversation as Markdown. Prompts are quoted under a heading each,
//! answers are kept as the agent wrote them (they are Markdown already), and what is detail in
//! the chat (thinking, tool calls and their output) is folded as `<details>`, as GitHub and most
//! Markdown viewers show it. Notices, permission answers and plans are left out: they are
//! agentty's, not the conversation's.

use std::path::{Path, PathBuf};

use super::transcript::{CellBody, ToolStatus, Transcript};

/// The conversation in `transcript` as Markdown, titled with the `provider` it ran on.
pub(crate) fn conversation_markdown(transcript: &Transcript, provider: &str) -> String {
    let mut out = format!("# Conversation with {provider}\n");
    let mut prompts = 0;
    for cell in transcript.cells() {
        match &cell.body {
            CellBody::User(user) => {
                prompts += 1;
                out.push_str(&format!("\n## Prompt {prompts}\n\n"));
                for line in user.text.lines() {
                    out.push_str(&format!("> {line}\n").replace("> \n", ">\n"));
                }
            }
            CellBody::Assistant(answer) if !answer.superseded => {
                out.push('\n');
                out.push_str(crate::sanitize::for_clipboard(answer.source()).trim_end());
                out.push('\n');
            }
            CellBody::Thought(thought) => {
                out.push_str("\n<details><summary>Thinking</summary>\n\n");
                out.push_str(thought.text.trim_end());
                out.push_str("\n\n</details>\n");
            }
            CellBody::Tool(tool) => {
                let how = match tool.status {
                    ToolStatus::Done { .. } => "",
                    ToolStatus::Failed { .. } => " (failed)",
                    ToolStatus::Interrupted { .. } => " (interrupted)",
                    ToolStatus::Running { .. } | ToolStatus::WaitingForYou { .. } => " (running)",
                };
                out.push_str(&format!(
                    "\n<details><summary>Tool: {}{how}</summary>\n\n",
                    html_inert(format!("{} {}", tool.name, tool.summary).trim_end())
                ));
                out.push_str(&fenced(&tool.output));
                out.push_str("\n</details>\n");
            }
            _ => {}
        }
    }
    out
}

/// `text` in a code fence longer than any run of backticks inside it.
fn fenced(text: &str) -> String {
    let longest = text.split(|ch| ch != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}\n{}\n{fence}\n", text.trim_end())
}

/// Text inside an HTML element (the `<summary>`): `<`, `>` and `&` escaped.
fn html_inert(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Where `/export` writes: `file` as given (relative to `cwd`), else
/// `agentty-<conversation id's first characters>.md` in `cwd`.
pub(crate) fn export_path(cwd: &Path, file: Option<&str>, conversation: Option<&str>) -> PathBuf {
    match file.map(str::trim).filter(|file| !file.is_empty()) {
        Some(file) => cwd.join(file),
        None => cwd.join(format!(
            "agentty-{}.md",
            conversation.map_or("conversation", crate::session_log::short_conversation_id)
        )),
    }
}

/// Writes `markdown` to `path`, never over an existing file: the error says so, and how to
/// choose another name.
pub(crate) fn write_export(path: &Path, markdown: &str) -> Result<PathBuf, String> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::AlreadyExists => format!(
                "{} already exists and was left as it is: /export OTHER-FILE writes elsewhere",
                path.display()
            ),
            _ => format!("cannot create {}: {error}", path.display()),
        })?;
    file.write_all(markdown.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_outlasts_the_backticks_inside() {
        assert_eq!(fenced("a ``` b"), "````\na ``` b\n````\n");
        assert_eq!(fenced("plain"), "```\nplain\n```\n");
    }

    #[test]
    fn an_existing_file_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = export_path(dir.path(), Some("notes.md"), None);
        std::fs::write(&path, "mine").unwrap();
        let error = write_export(&path, "# Conversation").unwrap_err();
        assert!(error.contains("already exists"), "{error}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine");
        let default = export_path(dir.path(), None, Some("0123456789abcdef"));
        assert_eq!(default, dir.path().join("agentty-01234567.md"));
        assert_eq!(write_export(&default, "x").unwrap(), default);
    }
}
