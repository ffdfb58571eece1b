//! What an isolated bot sees of the host's files: the system's programs and libraries
//! (read-only), the directories of the files its command names (read-only), and
//! nothing else of the host: not the farm's directory (its data, its config), not
//! another bot's directory, not the rest of `/etc`, `/home` or `/tmp`.

use std::path::{Path, PathBuf};

/// The system's programs and libraries, where interpreters (`python3`, `node`) and the
/// libraries they load live. Where one is a symbolic link (`/bin` to `usr/bin` on a
/// merged-`/usr` system), the bot gets the same link.
const SYSTEM: [&str; 7] = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/// What programs need of `/etc`: the dynamic loader's cache, and Debian's alternatives
/// (`/usr/bin/awk` is a link through them).
const SYSTEM_CONFIG: [&str; 2] = ["/etc/ld.so.cache", "/etc/alternatives"];
/// Places whose files a command may name but which are never a bot's own: the sandbox
/// has its own `/dev` and `/proc`, no `/sys`, and of `/etc` only [`SYSTEM_CONFIG`].
const NEVER_THE_BOTS: [&str; 4] = ["/etc", "/dev", "/proc", "/sys"];
/// The size of the bot's private `/dev/shm`.
const SHM_BYTES: u64 = 16 << 20;
/// The size of the bot's private `/run`.
const RUN_BYTES: u64 = 1 << 20;

/// bubblewrap's arguments for an isolated bot's files, for `command` (which runs in the
/// farm's directory, as every local bot's): the system's, read-only; private places,
/// each a bounded tmpfs (`/tmp` of `tmp_bytes`, holding the bot's `home`); the bot's own
/// directories, read-only; the farm's directory, in which the command starts, empty but
/// for those; and nothing else, the root read-only.
pub(super) fn args(command: &str, tmp_bytes: u64, home: &str) -> Result<Vec<String>, String> {
    let here = std::env::current_dir()
        .and_then(|dir| dir.canonicalize())
        .map_err(|error| format!("the farm's directory: {error}"))?;
    let directories = bot_directories(command, &here)?;
    let mut args = system_args();
    args.extend(["--dev", "/dev"].map(str::to_owned));
    for (place, bytes) in private_places(tmp_bytes) {
        args.extend(["--size".to_owned(), bytes.to_string(), "--tmpfs".to_owned(), place.to_owned()]);
    }
    let here = here.to_string_lossy().into_owned();
    args.extend(["--dir".to_owned(), here.clone()]);
    for directory in directories {
        let directory = directory.to_string_lossy().into_owned();
        args.extend(["--ro-bind".to_owned(), directory.clone(), directory]);
    }
    args.extend(["--dir", home].map(str::to_owned));
    args.extend(["--chdir".to_owned(), here, "--remount-ro".to_owned(), "/".to_owned()]);
    Ok(args)
}

/// The places the sandbox makes private to the bot, with their sizes: `/tmp` of the
/// bot's own limit, the others small; `/run` goes too, so that no host socket (Docker's)
/// is in sight. A directory of the bot's own may lie in one, never be one.
fn private_places(tmp_bytes: u64) -> [(&'static str, u64); 3] {
    [("/tmp", tmp_bytes), ("/dev/shm", SHM_BYTES), ("/run", RUN_BYTES)]
}

/// bubblewrap's arguments for the system's part of the view: read-only binds, or the
/// same symbolic links. What the host lacks is left out.
fn system_args() -> Vec<String> {
    let mut args = Vec::new();
    for place in SYSTEM.iter().chain(&SYSTEM_CONFIG) {
        let path = Path::new(place);
        match std::fs::read_link(path) {
            Ok(target) => {
                args.extend(["--symlink".to_owned(), target.to_string_lossy().into_owned(), (*place).to_owned()])
            }
            Err(_) if path.exists() => args.extend(["--ro-bind", place, place].map(str::to_owned)),
            Err(_) => {}
        }
    }
    args
}

/// The bot's own directories, by their real paths: the directory of each file its
/// command names (a word naming a file or directory, from `here`, where commands run),
/// or the directory itself, less the system's. A directory that would show the farm's
/// own (`here`, or one holding it, such as the root) or a place the sandbox makes
/// private is refused, naming the word: the bot's files belong in a directory of their
/// own.
fn bot_directories(command: &str, here: &Path) -> Result<Vec<PathBuf>, String> {
    let mut directories: Vec<PathBuf> = Vec::new();
    for word in command.split_whitespace() {
        let Ok(path) = here.join(word).canonicalize() else { continue };
        let directory = if path.is_dir() { path.as_path() } else { path.parent().unwrap_or(Path::new("/")) };
        if SYSTEM.iter().chain(&NEVER_THE_BOTS).any(|place| directory.starts_with(place)) {
            continue;
        }
        // The root holds the farm's directory too.
        let shows_the_farm = here.starts_with(directory);
        let private = private_places(0).iter().any(|(place, _)| Path::new(place) == directory);
        if shows_the_farm || private {
            return Err(format!(
                "{word:?} lies in {}, which an isolated bot may not see (it holds {}): give the bot a directory of its \
                 own",
                directory.display(),
                if shows_the_farm {
                    format!("the farm's directory, {}", here.display())
                } else {
                    "the host's files".to_owned()
                }
            ));
        }
        if !directories.iter().any(|known| known == directory) {
            directories.push(directory.to_owned());
        }
    }
    Ok(directories)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn farm() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let here = dir.path().canonicalize().expect("canonical").join("farm");
        std::fs::create_dir_all(here.join("bots/a")).expect("bots/a");
        std::fs::create_dir_all(here.join("bots/b/lib")).expect("bots/b");
        for file in ["bots/a/bot.py", "bots/b/harness.js", "bots/b/lib/player.js", "loose.py"] {
            std::fs::write(here.join(file), "").expect("a bot's file");
        }
        (dir, here)
    }

    #[test]
    fn a_bot_sees_the_directories_of_the_files_its_command_names() {
        let (_dir, here) = farm();
        let seen = |command| bot_directories(command, &here).expect("allowed");
        assert_eq!(seen("python3 bots/a/bot.py --seat 1 missing/file.py"), [here.join("bots/a")]);
        assert_eq!(
            seen("/usr/bin/env node bots/b/harness.js bots/b/lib/player.js bots/b/harness.js"),
            [here.join("bots/b"), here.join("bots/b/lib")]
        );
        assert_eq!(seen("node bots/b/lib"), [here.join("bots/b/lib")], "a directory named is the bot's");
        assert!(seen("sh -c true").is_empty());
        assert!(seen("cat /etc/hostname /proc/self/status /sys/kernel /dev/null").is_empty(), "none a bot's");
    }

    #[test]
    fn a_bot_whose_files_lie_in_the_farms_directory_or_a_shared_place_is_refused() {
        let (_dir, here) = farm();
        for command in ["python3 loose.py", "python3 ./bots/../loose.py", "ls ..", "cat /tmp", "ls /", "ls /run"] {
            let error = bot_directories(command, &here).expect_err(command);
            assert!(error.contains("give the bot a directory of its own"), "{command}: {error}");
        }
        let error = bot_directories("python3 loose.py", &here).expect_err("refused");
        assert!(error.contains("\"loose.py\"") && error.contains("the farm's directory"), "{error}");
        let error = bot_directories("ls /run", &here).expect_err("refused");
        assert!(error.contains("lies in /run") && error.contains("the host's files"), "{error}");
    }
}
