//! Threads for agentty's own background work (the working tree's snapshots, the session
//! checkpoints), which runs while the agent sends its request: on a machine with few cores it
//! must not take the core the agent needs, so these threads run at a lower priority (10 nice
//! steps below agentty's; Linux gives each thread its own). Measured by `cargo bench --bench
//! enter_to_request` with `AGENTTY_BENCH_TREE=checkout` (snapshots on and off).

use std::io;
use std::thread::JoinHandle;

/// Spawns `work` on a thread named `name` that yields to the agent.
pub(crate) fn spawn<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> io::Result<JoinHandle<T>> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            lower_this_thread_priority();
            work()
        })
}

fn lower_this_thread_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain syscalls that take no pointer; `gettid` names this thread, which
        // starts with the nice value of the thread that spawned it.
        let result = unsafe {
            let thread = libc::gettid() as libc::id_t;
            let nice = libc::getpriority(libc::PRIO_PROCESS, thread);
            libc::setpriority(libc::PRIO_PROCESS, thread, (nice + 10).min(19))
        };
        if result != 0 {
            tracing::debug!(
                error = %io::Error::last_os_error(),
                "cannot lower a background thread's priority"
            );
        }
    }
}

/// Gives the pages of freed memory back to the system (glibc keeps them in the process after
/// many small allocations are freed; elsewhere the allocator returns them itself).
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    /// The work runs, on a thread whose nice value is above the caller's.
    #[cfg(target_os = "linux")]
    #[test]
    fn background_work_runs_at_a_lower_priority() {
        let nice_of_this_thread = || {
            // SAFETY: as above.
            unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
        };
        let ours = nice_of_this_thread();
        let theirs = super::spawn("agentty-test", nice_of_this_thread)
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(
            theirs,
            (ours + 10).min(19),
            "background {theirs}, caller {ours}"
        );
    }
}
