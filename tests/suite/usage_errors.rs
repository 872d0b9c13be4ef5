//! Usage errors of the real binary: each exits 2 with one line that names the problem and the
//! fix, before any agent starts; a config with one wrong key keeps every valid key.

use std::path::Path;
use std::process::{Command, Output};

/// A scratch dir per test: state and config dirs of their own, so the user's config is not read.
/// Removed when the test ends.
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("agentty-usage-{name}-"))
        .tempdir()
        .unwrap()
}

fn agentty(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(args)
        .env("AGENTTY_STATE_DIR", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("HOME", dir)
        .output()
        .unwrap()
}

/// Exit 2, nothing on stdout, and exactly one line on stderr, which is returned.
fn one_line_usage_error(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(output.stdout.is_empty(), "stdout: {:?}", output.stdout);
    assert_eq!(stderr.trim_end().lines().count(), 1, "stderr: {stderr}");
    stderr.trim_end().to_owned()
}

#[test]
fn an_empty_or_blank_prompt_is_a_usage_error() {
    let scratch_dir = scratch("empty");
    let dir = scratch_dir.path().to_path_buf();
    for prompt in ["", "   "] {
        let line = one_line_usage_error(&agentty(&dir, &["run", "--provider", "demo", prompt]));
        assert!(line.starts_with("agentty: empty prompt: "), "{line}");
    }
}

#[test]
fn a_missing_config_file_is_a_usage_error() {
    let scratch_dir = scratch("missing-config");
    let dir = scratch_dir.path().to_path_buf();
    let line = one_line_usage_error(&agentty(
        &dir,
        &[
            "run",
            "--config",
            "/missing.toml",
            "--provider",
            "demo",
            "hi",
        ],
    ));
    assert!(
        line.starts_with("agentty: --config /missing.toml: no such file"),
        "{line}"
    );
}

#[test]
fn an_unknown_config_key_is_warned_with_its_line_and_the_rest_applies() {
    let scratch_dir = scratch("config-typo");
    let dir = scratch_dir.path().to_path_buf();
    let config = dir.join("agentty.toml");
    std::fs::write(
        &config,
        "default_provider = \"demo\"\n\n[providers.demo]\nargs = []\nenvv = { X = \"1\" }\n",
    )
    .unwrap();
    let output = agentty(
        &dir,
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--scenario",
            "hello",
            "hi",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    assert!(
        stderr.contains(
            ", line 5: `providers.demo.envv`: unknown key (known keys: acp_command, args, command, env, mode, model"
        ),
        "{stderr}"
    );
    // `default_provider` from the same file still applies.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout
            .lines()
            .next()
            .unwrap_or_default()
            .contains(r#""provider":"demo""#),
        "{stdout}"
    );
}

#[test]
fn an_unknown_scenario_lists_the_scenarios() {
    let scratch_dir = scratch("scenario");
    let dir = scratch_dir.path().to_path_buf();
    let line = one_line_usage_error(&agentty(
        &dir,
        &["run", "--provider", "demo", "--scenario", "nosuch", "hi"],
    ));
    assert!(
        line.starts_with("agentty: unknown scenario `nosuch`; the scenarios are: "),
        "{line}"
    );
    assert!(
        line.contains("hello") && line.contains("thinking"),
        "{line}"
    );
}

#[test]
fn a_scenario_for_another_provider_is_a_usage_error() {
    let scratch_dir = scratch("scenario-provider");
    let dir = scratch_dir.path().to_path_buf();
    let line = one_line_usage_error(&agentty(
        &dir,
        &["run", "--provider", "pi", "--scenario", "hello", "hi"],
    ));
    assert!(
        line.contains("--scenario only applies to the demo agent"),
        "{line}"
    );
}

#[test]
fn provider_names_are_listed_in_help_and_checked() {
    let scratch_dir = scratch("provider");
    let dir = scratch_dir.path().to_path_buf();
    let help = agentty(&dir, &["run", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("[possible values: pi, claude, codex, gemini, demo]"),
        "{help}"
    );
    let line = one_line_usage_error(&agentty(&dir, &["run", "--provider", "nope", "hi"]));
    assert!(
        line.contains("unknown provider `nope` (expected one of: pi, claude, codex, gemini, demo)"),
        "{line}"
    );
    let malformed = agentty(&dir, &["run", "--provider", "no pe", "hi"]);
    assert_eq!(malformed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&malformed.stderr).contains("invalid value 'no pe'"));
}

/// Runs agentty and gives up (killing it) after `limit`: a test for "never hangs".
fn agentty_within(dir: &Path, args: &[&str], limit: std::time::Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(args)
        .env("AGENTTY_STATE_DIR", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("HOME", dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            let output = child.wait_with_output().unwrap();
            panic!(
                "agentty {args:?} still ran after {limit:?}; stderr: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_config_that_is_a_device_a_fifo_or_a_directory_is_refused_at_once() {
    let scratch_dir = scratch("odd-config");
    let dir = scratch_dir.path().to_path_buf();
    // A FIFO with no writer: opening it to read would wait for ever.
    let fifo = dir.join("config.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let cases = [
        (
            "/dev/zero".to_owned(),
            "it is a character device, not a regular file",
        ),
        (
            fifo.display().to_string(),
            "it is a FIFO, not a regular file",
        ),
        (
            dir.display().to_string(),
            "it is a directory, not a regular file",
        ),
    ];
    for (config, what) in &cases {
        // The chat (which would take the terminal) and `agentty run` alike.
        for command in [
            &["--provider", "demo"][..],
            &["run", "--provider", "demo", "hi"],
        ] {
            let mut args = vec!["--config", config.as_str()];
            args.extend_from_slice(command);
            let output = agentty_within(&dir, &args, std::time::Duration::from_secs(10));
            let line = one_line_usage_error(&output);
            assert_eq!(
                line,
                format!(
                    "agentty: --config {config}: {what}; give a TOML file (see assets/config.example.toml)"
                )
            );
        }
    }
    // Too large is refused too, without reading it all.
    let big = dir.join("big.toml");
    std::fs::write(&big, vec![b'#'; 2 * 1024 * 1024]).unwrap();
    let line = one_line_usage_error(&agentty(
        &dir,
        &[
            "run",
            "--config",
            big.to_str().unwrap(),
            "--provider",
            "demo",
            "hi",
        ],
    ));
    assert!(line.contains("it is larger than 1 MiB; not read"), "{line}");
}
