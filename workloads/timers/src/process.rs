//! Child processes of the `run` command: the server it starts (tied to the client's life)
//! and the older builds it hands `tokio-timeout-legacy` and `tokio-timeout-sharded` runs to.

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A server child process; killed and reaped when dropped.
pub struct ServerProcess {
    child: Child,
    port: u16,
}

impl ServerProcess {
    /// Starts `exe serve --port 0 <args>` and reads the port it prints.
    ///
    /// The child gets `PR_SET_PDEATHSIG(SIGKILL)`, so it dies with the client even when the
    /// client is killed. The kernel ties that signal to the *thread* that forked the child,
    /// so call this from the main thread.
    pub fn spawn(exe: &Path, args: &[String]) -> Result<ServerProcess, String> {
        let parent = std::process::id() as libc::pid_t;
        let mut command = Command::new(exe);
        command
            .args(["serve", "--port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // SAFETY: the closure runs in the forked child before exec and only makes the
        // async-signal-safe calls prctl and getppid.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                // The parent died between fork and prctl: nobody would kill this child.
                if libc::getppid() != parent {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start the server {}: {e}", exe.display()))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        let mut server = ServerProcess { child, port: 0 };
        match (read, line.trim().parse::<u16>()) {
            (Ok(_), Ok(port)) if port != 0 => {
                server.port = port;
                Ok(server)
            }
            (Err(e), _) => Err(format!("cannot read the server's port: {e}")),
            _ => {
                let _ = server.child.kill();
                let status = server
                    .child
                    .wait()
                    .map_or_else(|e| e.to_string(), |s| s.to_string());
                Err(format!(
                    "the server did not report its port (printed {:?}; {status})",
                    line.trim()
                ))
            }
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Errors mean it is already gone; wait reaps it either way.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// File descriptors a run's process needs besides its connections: the standard streams, the
/// runtime's epoll and waker, the server's listener and pipe (about ten seen), with room.
pub const DESCRIPTOR_RESERVE: u64 = 32;

/// This process's descriptor limit (the soft RLIMIT_NOFILE, which the server it starts
/// inherits); `None` when unlimited or unreadable.
pub fn descriptor_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given, which lives across the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    Some(limit.rlim_cur)
}

/// Whether `connections` connections (and `extra` more, such as the scylla driver's control
/// connection) fit the descriptor limit `limit` in the client and in the server, which each
/// hold one descriptor per connection; if not, one line naming the limit and the need.
pub fn check_descriptors(connections: u64, extra: u64, limit: Option<u64>) -> Result<(), String> {
    let Some(limit) = limit else { return Ok(()) };
    let need = connections + extra + DESCRIPTOR_RESERVE;
    if need <= limit {
        return Ok(());
    }
    let most = limit.saturating_sub(extra + DESCRIPTOR_RESERVE);
    Err(format!(
        "connections={connections} needs {need} file descriptors in the client and as many in \
         the server, but the descriptor limit (RLIMIT_NOFILE, ulimit -n) is {limit} (valid: \
         connections <= {most}, or a higher limit)"
    ))
}

/// The path of executable `name` next to the running one.
pub fn sibling(name: &str) -> io::Result<PathBuf> {
    Ok(std::env::current_exe()?.with_file_name(name))
}

/// Replaces this process with `path`, passing `args`; returns only on failure.
pub fn exec(path: &Path, args: impl IntoIterator<Item = OsString>) -> io::Error {
    Command::new(path).args(args).exec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_checked_against_the_limit() {
        assert_eq!(check_descriptors(2000, 0, None), Ok(()));
        assert_eq!(check_descriptors(992, 0, Some(1024)), Ok(()));
        let e = check_descriptors(2000, 1, Some(1024)).unwrap_err();
        assert!(
            e.starts_with("connections=2000 needs 2033 file descriptors"),
            "{e}"
        );
        assert!(e.contains("(RLIMIT_NOFILE, ulimit -n) is 1024"), "{e}");
        assert!(e.contains("connections <= 991"), "{e}");
        assert!(!e.contains('\n'));
    }
}
