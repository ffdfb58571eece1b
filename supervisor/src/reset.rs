//! Between matches: every process of the last bot ended, every writable place
//! emptied, and proof of both, or the reason there is none.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::Options;

/// How long the bot's processes may take to die after SIGKILL (one in an
/// uninterruptible sleep takes as long as its I/O).
const KILL_DEADLINE: Duration = Duration::from_secs(5);
/// The System V IPC objects of the container's IPC namespace, by kind.
const SYSV_IPC: [(&str, IpcKind); 3] =
    [("/proc/sysvipc/shm", IpcKind::Shm), ("/proc/sysvipc/msg", IpcKind::Msg), ("/proc/sysvipc/sem", IpcKind::Sem)];

/// The kernel's count of processes killed for memory in this container's cgroup
/// (cgroup v2, then v1); zero where neither can be read.
pub fn oom_kills() -> u64 {
    ["/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"]
        .iter()
        .find_map(|path| fs::read_to_string(path).ok())
        .and_then(|events| {
            events.lines().find_map(|line| line.strip_prefix("oom_kill ").and_then(|count| count.trim().parse().ok()))
        })
        .unwrap_or(0)
}

/// Makes the bot, not the supervisor, the process the kernel kills when the container
/// runs out of memory. Best effort: the supervisor is small, and so rarely chosen.
pub fn lower_priority_for_oom(bot: Pid) {
    let _ = fs::write(format!("/proc/{bot}/oom_score_adj"), "1000");
}

/// The processes of the container other than the supervisor.
fn others() -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != std::process::id() as i32)
        .collect()
}

/// Continues every process of the container that is stopped (state `T`), and says
/// how many were. Between `pause` and `resume` nothing is; outside them, a stopped
/// process is a stop that outlived its `resume`, which must not hold a bot up.
pub fn continue_stopped() -> usize {
    let stopped: Vec<i32> = others()
        .into_iter()
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                // The state follows the command name, which is in parentheses and may
                // hold anything: read it after the last `)`.
                stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('T'))
            })
        })
        .collect();
    for &pid in &stopped {
        let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
    }
    stopped.len()
}

/// Kills every process but the supervisor (as PID 1, `kill(-1)` reaches them all,
/// whatever session or group they made) and reaps them, passing each status to
/// `reaped`, until none is left; or says which were still there at the deadline.
pub fn kill_all(mut reaped: impl FnMut(Pid, WaitStatus)) -> Result<(), String> {
    let deadline = Instant::now() + KILL_DEADLINE;
    loop {
        let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
        while let Ok(status) = waitpid(None, Some(WaitPidFlag::WNOHANG | WaitPidFlag::__WALL)) {
            match status.pid() {
                Some(pid) => reaped(pid, status),
                None => break,
            }
        }
        let left = others();
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("{} processes outlived SIGKILL: {left:?}", left.len()));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Runs the cleaning step as the bot's user, then checks, as root, that it left
/// nothing: no process but the supervisor (in `/proc` and in the cgroup's count), no
/// entry in any directory to clean, no IPC object. A bot that left nothing to clean
/// (the check passes before it) spares the step, a process started per seat of
/// every match.
pub fn clean_and_verify(options: &Options) -> Result<(), String> {
    if verify(&options.clean).is_ok() {
        return Ok(());
    }
    let exe = std::env::current_exe().map_err(|error| format!("cannot find the supervisor's binary: {error}"))?;
    let cleaned = Command::new(exe)
        .arg("clean")
        .args(&options.clean)
        .env_clear()
        .uid(options.uid)
        .gid(options.gid)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|error| format!("cannot run the cleaning step: {error}"))?;
    if !cleaned.status.success() {
        return Err(format!("cleaning failed: {}", String::from_utf8_lossy(&cleaned.stderr).trim()));
    }
    verify(&options.clean)
}

fn verify(clean: &[PathBuf]) -> Result<(), String> {
    let left = others();
    if !left.is_empty() {
        return Err(format!("processes left: {left:?}"));
    }
    if let Ok(count) = fs::read_to_string("/sys/fs/cgroup/pids.current")
        && count.trim() != "1"
    {
        return Err(format!("the cgroup counts {} processes, not 1", count.trim()));
    }
    check_empty(clean)?;
    for (table, _) in SYSV_IPC {
        let ids = ipc_ids(table).map_err(|error| format!("cannot read {table}: {error}"))?;
        if !ids.is_empty() {
            return Err(format!("{table} still holds {} objects", ids.len()));
        }
    }
    Ok(())
}

/// Fails on the first directory that is not empty (or missing).
fn check_empty(dirs: &[PathBuf]) -> Result<(), String> {
    for dir in dirs {
        match fs::read_dir(dir) {
            Ok(mut entries) => {
                if let Some(entry) = entries.next() {
                    let name = entry.map(|entry| entry.file_name()).unwrap_or_default();
                    return Err(format!("{} still holds {name:?}", dir.display()));
                }
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(format!("cannot read {}: {error}", dir.display())),
        }
    }
    Ok(())
}

/// The cleaning step, run as the bot's user: empties each directory (a directory the
/// bot made unreadable is opened again first: it owns it) and removes every System V
/// IPC object. Reports what it could not remove on stderr.
pub fn clean_as_bot(dirs: impl Iterator<Item = PathBuf>) -> ExitCode {
    let mut failures = Vec::new();
    for dir in dirs {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if let Err(error) = remove_tree(&entry.path()) {
                failures.push(format!("{}: {error}", entry.path().display()));
            }
        }
    }
    for (table, kind) in SYSV_IPC {
        match ipc_ids(table) {
            Ok(ids) => failures.extend(
                ids.into_iter()
                    .filter_map(|id| remove_ipc(kind, id).err().map(|error| format!("{table} {id}: {error}"))),
            ),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => failures.push(format!("{table}: {error}")),
        }
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!("{}", failures.join("; "));
        ExitCode::FAILURE
    }
}

fn remove_tree(path: &Path) -> io::Result<()> {
    if !fs::symlink_metadata(path)?.is_dir() {
        return fs::remove_file(path);
    }
    let _ = fs::set_permissions(path, fs::Permissions::from_mode(0o700));
    for entry in fs::read_dir(path)? {
        remove_tree(&entry?.path())?;
    }
    fs::remove_dir(path)
}

#[derive(Debug, Clone, Copy)]
enum IpcKind {
    Shm,
    Msg,
    Sem,
}

/// The ids in one of `/proc/sysvipc`'s tables (the second column; the first line is
/// the header).
fn ipc_ids(table: &str) -> io::Result<Vec<i32>> {
    Ok(fs::read_to_string(table)?
        .lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().nth(1)?.parse().ok())
        .collect())
}

#[allow(unsafe_code)]
fn remove_ipc(kind: IpcKind, id: i32) -> io::Result<()> {
    // SAFETY: IPC_RMID reads and writes no buffer (the pointer argument is null, which
    // it allows), and `id` is only a number the kernel checks.
    let result = unsafe {
        match kind {
            IpcKind::Shm => libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()),
            IpcKind::Msg => libc::msgctl(id, libc::IPC_RMID, std::ptr::null_mut()),
            IpcKind::Sem => libc::semctl(id, 0, libc::IPC_RMID),
        }
    };
    if result == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_the_bot_locked_is_removed_whole() {
        let root = std::env::temp_dir().join(format!("farm-supervisor-test-{}", std::process::id()));
        let locked = root.join("a/b");
        fs::create_dir_all(&locked).expect("made");
        fs::write(locked.join("file"), "x").expect("written");
        std::os::unix::fs::symlink("/etc/passwd", root.join("a/link")).expect("linked");
        fs::set_permissions(root.join("a"), fs::Permissions::from_mode(0o000)).expect("locked");
        remove_tree(&root.join("a")).expect("removed");
        assert!(fs::read_dir(&root).expect("root").next().is_none());
        assert!(Path::new("/etc/passwd").exists(), "a link is removed, not followed");
        fs::remove_dir(&root).expect("empty");
    }

    #[test]
    fn a_directory_that_still_holds_an_entry_fails_the_check() {
        let root = std::env::temp_dir().join(format!("farm-supervisor-verify-{}", std::process::id()));
        fs::create_dir_all(root.join("left")).expect("made");
        let error = check_empty(&[root.join("missing"), root.clone()]).expect_err("not empty");
        assert!(error.ends_with("still holds \"left\""), "{error}");
        assert_eq!(check_empty(&[root.join("left")]), Ok(()), "an empty directory passes");
        fs::remove_dir_all(&root).expect("removed");
    }
}
