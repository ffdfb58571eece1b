//! What `/proc` says of the machine's CPU and of its processes' CPU and memory: the
//! one reader of it for every benchmark that weighs where the machine's time went.

use std::collections::BTreeMap;

/// USER_HZ, the unit of `/proc`'s CPU times: 100 on every Linux architecture this runs on.
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU time the whole machine has spent busy (all cores, every state but idle and
/// I/O wait), from the first line of /proc/stat; 0 where it cannot be read.
pub(crate) fn machine_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<u64> = stat
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("cpu "))
        .map(|fields| fields.split_whitespace().filter_map(|field| field.parse().ok()).collect())
        .unwrap_or_default();
    // user nice system idle iowait irq softirq steal (guest time is within user).
    let busy: u64 = ticks.iter().take(8).enumerate().filter(|(index, _)| ![3, 4].contains(index)).map(|(_, t)| t).sum();
    busy as f64 / TICKS_PER_SECOND
}

/// CPU seconds every Docker container has spent (all of them, those removed included),
/// from the `docker` cgroup of the cgroupfs driver (v1's `cpuacct.usage`, v2's
/// `cpu.stat`); `None` where there is none (the systemd driver, or no Docker). Exact
/// where the processes' own figures are not: a container's processes are reaped by its
/// PID 1, and their shims by the machine's.
pub(crate) fn containers_cpu_seconds() -> Option<f64> {
    if let Ok(nanoseconds) = std::fs::read_to_string("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage") {
        return Some(nanoseconds.trim().parse::<f64>().ok()? / 1e9);
    }
    let stat = std::fs::read_to_string("/sys/fs/cgroup/docker/cpu.stat").ok()?;
    let microseconds: f64 = stat.lines().find_map(|line| line.strip_prefix("usage_usec "))?.trim().parse().ok()?;
    Some(microseconds / 1e6)
}

/// One process's line of `/proc/PID/stat`, read.
#[derive(Debug, PartialEq)]
struct Stat {
    /// The kernel's 15-character `comm`.
    command: String,
    /// Its own user and system time, in seconds.
    own: f64,
    /// The user and system time of the children it reaped, in seconds.
    reaped: f64,
}

impl Stat {
    fn of(pid: u32) -> Option<Stat> {
        Stat::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    fn parse(line: &str) -> Option<Stat> {
        // The command is in parentheses and may hold anything: the fields follow the last `)`.
        let (open, close) = (line.find('(')?, line.rfind(')')?);
        let fields: Vec<f64> = line[close + 1..]
            .split_whitespace()
            .skip(11)
            .take(4)
            .map(|field| field.parse().ok())
            .collect::<Option<_>>()?;
        let [utime, stime, cutime, cstime] = fields[..] else { return None };
        Some(Stat {
            command: line.get(open + 1..close)?.to_owned(),
            own: (utime + stime) / TICKS_PER_SECOND,
            reaped: (cutime + cstime) / TICKS_PER_SECOND,
        })
    }
}

/// CPU seconds (user and system) process `pid` has used itself.
pub(crate) fn process_cpu_seconds(pid: u32) -> Option<f64> {
    Stat::of(pid).map(|stat| stat.own)
}

/// CPU seconds of every process alive now, by pid, with its command (a kernel worker's,
/// which names its current work, cut to `kworker`; dots and spaces made `_`): its own
/// time and that of the children it reaped (a bot process is counted in the supervisor
/// or worker that waited for it).
pub(crate) fn cpu_by_command() -> BTreeMap<u32, (String, f64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return BTreeMap::new() };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = Stat::of(pid)?;
            let command = if stat.command.starts_with("kworker") {
                "kworker".to_owned()
            } else {
                stat.command.replace(['.', ' '], "_")
            };
            Some((pid, (command, stat.own + stat.reaped)))
        })
        .collect()
}

/// The CPU seconds each command spent between two [`cpu_by_command`] readings: each
/// process's growth (all of it for one born meanwhile), summed by command.
pub(crate) fn cpu_spent_by_command(
    before: &BTreeMap<u32, (String, f64)>,
    after: &BTreeMap<u32, (String, f64)>,
) -> BTreeMap<String, f64> {
    let mut spent = BTreeMap::new();
    for (pid, (command, seconds)) in after {
        let earlier = before.get(pid).filter(|(was, _)| was == command).map_or(0.0, |(_, seconds)| *seconds);
        *spent.entry(command.clone()).or_insert(0.0) += (seconds - earlier).max(0.0);
    }
    spent
}

/// A memory figure of process `pid` from `/proc/PID/status` (`VmRSS`, `VmHWM`), in MiB.
pub(crate) fn memory_mib(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// The first process whose command is `name`.
pub(crate) fn process_named(name: &str) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let comm = std::fs::read_to_string(entry.path().join("comm")).ok()?;
        (comm.trim() == name).then_some(pid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_the_command_and_own_and_reaped_time() {
        let line = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 5 0 0";
        let stat = Stat::parse(line).expect("parsed");
        assert_eq!(stat, Stat { command: "a) b (c)".to_owned(), own: 3.0, reaped: 0.1 });
        assert_eq!(Stat::parse("42 (cut) S 1 2"), None, "too short");
        let own = process_cpu_seconds(std::process::id()).expect("this process");
        assert!(own >= 0.0);
        assert!(memory_mib(std::process::id(), "VmRSS").is_some_and(|mib| mib > 0.0));
    }

    #[test]
    fn cpu_is_each_processes_growth_summed_by_command() {
        let reading = |processes: &[(u32, &str, f64)]| {
            processes.iter().map(|(pid, command, seconds)| (*pid, (command.to_string(), *seconds))).collect()
        };
        let before = reading(&[(1, "dockerd", 10.0), (2, "kworker", 5.0), (3, "farm-worker", 1.0)]);
        // dockerd grew 2 s; a second worker was born with 0.5 s; pid 3 is now another
        // command (its pid reused): all of its time is new.
        let after =
            reading(&[(1, "dockerd", 12.0), (2, "kworker", 5.25), (3, "bench-echo-bot", 0.5), (4, "farm-worker", 0.5)]);
        let spent = cpu_spent_by_command(&before, &after);
        let expected = [("bench-echo-bot", 0.5), ("dockerd", 2.0), ("farm-worker", 0.5), ("kworker", 0.25)];
        assert_eq!(
            spent.into_iter().collect::<Vec<_>>(),
            expected.map(|(command, seconds)| (command.to_owned(), seconds))
        );
    }
}
