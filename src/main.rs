use std::process::ExitCode;

use clap::Parser;

use agentty::cli::{Cli, CliCommand};
use agentty::console::err_line;
use agentty::orchestrator::exit_status;

fn main() -> ExitCode {
    agentty::logging::mark_launch();
    keep_large_buffers_out_of_the_heap();
    survive_file_size_limits();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            // Help and version exit 0; usage errors exit 2 (DESIGN.md).
            return ExitCode::from(if error.use_stderr() {
                exit_status::USAGE as u8
            } else {
                exit_status::COMPLETED as u8
            });
        }
    };
    let status = match cli.command {
        Some(CliCommand::DemoAgent(args)) => agentty::demo_agent::run(args),
        Some(CliCommand::Replay(mut args)) => {
            let agent = std::mem::take(&mut args.agent).or(cli.agent);
            agentty::headless::replay(agent, args)
        }
        Some(CliCommand::Completions(args)) => {
            agentty::cli::print_completions(args.shell);
            exit_status::COMPLETED
        }
        Some(CliCommand::Run(args)) => {
            let _log_guard = agentty::logging::init();
            guard_agent_trees();
            let mut args = args;
            let agent = std::mem::take(&mut args.agent).or(cli.agent);
            agentty::headless::run(agent, args)
        }
        None => {
            let _log_guard = agentty::logging::init();
            guard_agent_trees();
            agentty::chat::run(cli)
        }
    };
    // Last line of defence: nothing agentty started outlives it.
    agentty::process::tree::kill_all_trees_now();
    ExitCode::from(status.clamp(0, 255) as u8)
}

/// Orphaned descendants of our agents re-parent to us, and a panic still kills every agent.
fn guard_agent_trees() {
    agentty::process::tree::become_subreaper();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        agentty::process::tree::kill_all_trees_now();
        tracing::error!(%info, "panic");
        previous(info);
        err_line(format!(
            "agentty: this is a bug; the agent was stopped. The log is at {}",
            agentty::logging::current_log_file().display()
        ));
    }));
}

/// A file-size limit (`ulimit -f`) must be an error a write reports (EFBIG, shown as a notice
/// that the conversation is not being saved), not SIGXFSZ killing agentty with the terminal
/// left raw. Agents get the default back when they start (`process::spawn`).
fn survive_file_size_limits() {
    // SAFETY: setting a signal's disposition to "ignore" before any other thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Agents print lines of hundreds of KiB (pi repeats the whole answer twice per update). With
/// glibc's default sliding mmap threshold those buffers end up in the heap arenas of several
/// threads and the memory is kept after they are freed; a fixed threshold gives them back.
fn keep_large_buffers_out_of_the_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only tunes the allocator; it is called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
