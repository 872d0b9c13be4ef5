//! API keys and tokens, from the environment, the config file or the command line, never reach
//! agentty's logs, session logs or output.

use crate::support::captures;
use crate::support::script_agent;

use std::process::Command;

fn all_files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(all_files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn keys_from_env_config_and_flags_are_never_written_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let capture = captures::captures_dir("pi").join("a_plain.stdout.jsonl");
    let agent =
        script_agent::write_script(dir.path(), "agent", &format!("cat '{}'", capture.display()));
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[providers.demo.env]\nANTHROPIC_API_KEY = \"sk-config-SECRET-456\"\n",
    )
    .unwrap();

    let output = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["run", "--provider", "demo", "--config"])
        .arg(&config)
        .arg("--agent-bin")
        .arg(&agent)
        .args([
            "--provider-arg=--api-key=sk-arg-SECRET-789",
            "--provider-arg=--token",
            "--provider-arg=sk-arg-SECRET-000",
            "--provider-arg=--header",
            "--provider-arg=Authorization: Bearer sk-hdr-SECRET-111",
            "--provider-arg=-c",
            "--provider-arg=api_key=sk-c-SECRET-222",
            "--provider-arg=--config=model_providers.x.api_key=sk-cfg-SECRET-333",
            "--provider-arg=--base-url=https://user:sk-url-SECRET-444@example.com/v1",
            // A key after a short flag that names nothing, and `NAME=value` inside a longer
            // argument.
            "--provider-arg=-k",
            "--provider-arg=sk-ant-api03-SECRET-555-AbCdEf0123456789",
            "--provider-arg=-e",
            "--provider-arg=GH_TOKEN=gh-SECRET-666 MODEL=o3 run",
            PROMPT,
        ])
        .env("OPENAI_API_KEY", "sk-env-SECRET-123")
        .env("AGENTTY_STATE_DIR", &state)
        .env("AGENTTY_LOG", "trace")
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let mut written = vec![
        ("stdout".to_owned(), output.stdout.clone()),
        ("stderr".to_owned(), output.stderr.clone()),
    ];
    let files = all_files_under(&state);
    assert!(
        files
            .iter()
            .any(|file| file.to_string_lossy().contains("logs")),
        "a log was written: {files:?}"
    );
    assert!(
        files
            .iter()
            .any(|file| file.to_string_lossy().contains("sessions")),
        "a session log was written"
    );
    for file in files {
        written.push((file.display().to_string(), std::fs::read(&file).unwrap()));
    }
    for (origin, bytes) in written {
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("SECRET"),
            "a secret reached {origin}:\n{text}"
        );
        // The prompt is the conversation's, kept in its session log; agentty's own log (a
        // file users attach to bug reports) names it by length and hash only.
        if origin.contains("/logs/") {
            assert!(
                !text.contains(PROMPT),
                "the prompt reached {origin}:\n{text}"
            );
            assert!(
                text.contains(&format!("[prompt: {} chars #", PROMPT.len())),
                "{origin}:\n{text}"
            );
        }
    }
}

/// The prompt of [`keys_from_env_config_and_flags_are_never_written_anywhere`].
const PROMPT: &str = "tell me about the otter-prompt-777";
