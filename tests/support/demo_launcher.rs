//! The demo agent behind a launcher script that records the PID of every start, with a state
//! dir of its own: the stand-in agent of the long-lived transport tests.

use std::collections::BTreeMap;
use std::path::PathBuf;

use agentty::config::ProviderSettings;
use agentty::demo_agent::state::STATE_DIR_VAR;

pub struct DemoLauncher {
    /// The demo agent's state dir (sessions, request log), also the agent's working dir.
    pub state: tempfile::TempDir,
    _bin: tempfile::TempDir,
    starts: PathBuf,
    launcher: PathBuf,
}

impl DemoLauncher {
    pub fn new() -> Self {
        let bin = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let starts = state.path().join("starts");
        let launcher = bin.path().join("demo-agent");
        std::fs::write(
            &launcher,
            format!(
                "#!/bin/sh\necho $$ >> '{}'\nexec '{}' demo-agent \"$@\"\n",
                starts.display(),
                env!("CARGO_BIN_EXE_agentty")
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self {
            state,
            _bin: bin,
            starts,
            launcher,
        }
    }

    /// Settings that run the demo agent through the launcher with `args`, its delays scaled
    /// by `time_scale`.
    pub fn settings(&self, args: &[&str], time_scale: &str) -> ProviderSettings {
        ProviderSettings {
            command: Some(self.launcher.clone()),
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env: BTreeMap::from([
                (
                    STATE_DIR_VAR.to_owned(),
                    self.state.path().display().to_string(),
                ),
                ("AGENTTY_DEMO_TIME_SCALE".to_owned(), time_scale.to_owned()),
            ]),
            ..ProviderSettings::default()
        }
    }

    /// The `sleep` processes the demo's tools started (they carry its state dir in their
    /// environment) that are still alive.
    pub fn sleepers(&self) -> Vec<i32> {
        let marker = format!("{STATE_DIR_VAR}={}", self.state.path().display());
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                let program = cmdline.split(|byte| *byte == 0).next().unwrap_or_default();
                (program == b"sleep" || program.ends_with(b"/sleep"))
                    && environ
                        .split(|byte| *byte == 0)
                        .any(|entry| entry == marker.as_bytes())
                    && super::agent_stream::alive(*pid)
            })
            .collect()
    }

    /// Attempt 1 of `prompt` in `session`, the agent working in its state dir.
    pub fn request(
        &self,
        prompt: &str,
        session: agentty::provider::SessionRef,
    ) -> agentty::provider::AttemptRequest {
        agentty::provider::AttemptRequest {
            prompt: prompt.to_owned(),
            session,
            cwd: Some(self.state.path().to_path_buf()),
            attempt: 1,
            ..agentty::provider::AttemptRequest::default()
        }
    }

    /// The PIDs of every agent process started so far.
    pub fn starts(&self) -> Vec<i32> {
        std::fs::read_to_string(&self.starts)
            .unwrap_or_default()
            .lines()
            .map(|line| line.trim().parse().unwrap())
            .collect()
    }
}
