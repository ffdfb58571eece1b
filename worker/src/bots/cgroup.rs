//! A control group per local bot: every process the bot starts is in it, whatever
//! sessions or double forks it makes, so the end of its match kills all of them at once
//! (`cgroup.kill`), and its memory, process and CPU limits hold for all of them together.
//!
//! Works on the unified hierarchy (cgroup v2) and on the hybrid layout (v1 controllers
//! beside a v2 hierarchy at `/sys/fs/cgroup/unified`, which is what Docker's hosts still
//! often run): membership and killing through the v2 hierarchy, limits through whichever
//! hierarchy holds each controller. Creating cgroups needs write access to the
//! process's own cgroup, which in practice means root; elsewhere [`CgroupHost::get`] is
//! `None` and bots are contained by a PID namespace or their process group instead.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use farm_proto::BotLimits;
use farm_supervisor::protocol::CpuUsageFile;
use tokio::time::{Duration, Instant, sleep};

use super::cpu::CpuMeter;

const ROOT: &str = "/sys/fs/cgroup";
/// The CFS period the CPU quota is expressed in.
const CPU_PERIOD_US: u64 = 100_000;
/// How long a killed cgroup may take to empty before it is left to the next sweep.
const EMPTY_TIMEOUT: Duration = Duration::from_secs(5);

/// Where this process makes its bots' cgroups: found once.
#[derive(Debug)]
pub struct CgroupHost {
    /// The v2 directory holding one cgroup per bot (`…/matchfarm-<pid>`).
    membership: PathBuf,
    /// Per controller, the directory in which the bots' limit cgroups are made: the
    /// same as `membership` on a unified host, a v1 hierarchy on a hybrid one.
    memory: Option<Controller>,
    pids: Option<Controller>,
    cpu: Option<Controller>,
    next: AtomicU64,
}

/// A controller's home: its directory for this process's bots and its file dialect.
#[derive(Debug, Clone)]
struct Controller {
    dir: PathBuf,
    v1: bool,
}

impl CgroupHost {
    /// The host's cgroups, or `None` when this process cannot make any (not root, a
    /// read-only cgroupfs, a kernel without `cgroup.kill`).
    pub fn get() -> Option<&'static CgroupHost> {
        static HOST: OnceLock<Option<CgroupHost>> = OnceLock::new();
        HOST.get_or_init(|| match CgroupHost::discover() {
            Ok(host) => Some(host),
            Err(error) => {
                tracing::info!(%error, "no cgroup per local bot: contained by PID namespace or process group instead");
                None
            }
        })
        .as_ref()
    }

    fn discover() -> io::Result<CgroupHost> {
        let own = std::fs::read_to_string("/proc/self/cgroup")?;
        let path_of = |controller: &str| {
            own.lines().find_map(|line| {
                let mut parts = line.splitn(3, ':');
                let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
                (names.split(',').any(|name| name == controller)).then(|| path.trim_start_matches('/').to_owned())
            })
        };
        let unified_path = own
            .lines()
            .find_map(|line| line.strip_prefix("0::"))
            .map(|path| path.trim_start_matches('/').to_owned())
            .ok_or_else(|| io::Error::other("this process is in no cgroup v2 hierarchy"))?;
        let name = format!("matchfarm-{}", std::process::id());
        let unified_root = Path::new(ROOT);
        let host = if unified_root.join("cgroup.controllers").exists() {
            // Unified: one tree for everything.
            let own_dir = unified_root.join(&unified_path);
            let membership = own_dir.join(&name);
            let enabled = enable_controllers(&own_dir, &membership)?;
            let controller = |name: &str| {
                enabled.iter().any(|c| c == name).then(|| Controller { dir: membership.clone(), v1: false })
            };
            CgroupHost {
                memory: controller("memory"),
                pids: controller("pids"),
                cpu: controller("cpu"),
                membership,
                next: AtomicU64::new(0),
            }
        } else {
            let unified = unified_root.join("unified");
            if !unified.join("cgroup.procs").exists() {
                return Err(io::Error::other("no cgroup v2 hierarchy is mounted"));
            }
            let membership = unified.join(&unified_path).join(&name);
            std::fs::create_dir_all(&membership)?;
            let v1 = |controller: &str| {
                let dir = unified_root.join(controller).join(path_of(controller)?).join(&name);
                std::fs::create_dir_all(&dir).ok().map(|()| Controller { dir, v1: true })
            };
            CgroupHost { memory: v1("memory"), pids: v1("pids"), cpu: v1("cpu"), membership, next: AtomicU64::new(0) }
        };
        if !host.membership.join("cgroup.kill").exists() {
            return Err(io::Error::other("the kernel has no cgroup.kill (Linux 5.14 or newer is needed)"));
        }
        host.sweep_dead_owners();
        Ok(host)
    }

    /// Makes a cgroup for one bot, with `limits` if given.
    pub fn create(&self, limits: Option<&BotLimits>) -> io::Result<BotCgroup> {
        let name = format!("bot-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let membership = self.membership.join(&name);
        std::fs::create_dir(&membership)?;
        // Freezing is the v2 hierarchy's own (no controller): every bot cgroup has it
        // from Linux 5.2.
        let freezer = std::fs::OpenOptions::new().write(true).open(membership.join("cgroup.freeze")).ok();
        let mut cgroup = BotCgroup { membership, limit_dirs: Vec::new(), memory: None, freezer };
        let Some(limits) = limits else { return Ok(cgroup) };
        let memory_bytes = limits.memory_mib.saturating_mul(1024 * 1024);
        for (controller, apply) in [
            (&self.memory, Limit::Memory(memory_bytes)),
            (&self.pids, Limit::Pids(limits.pids)),
            (&self.cpu, Limit::Cpu(limits.cpu_millis)),
        ] {
            let Some(controller) = controller else { continue };
            let dir = controller.dir.join(&name);
            if controller.v1 && !cgroup.limit_dirs.contains(&dir) {
                std::fs::create_dir(&dir)?;
                cgroup.limit_dirs.push(dir.clone());
            }
            apply.write(&dir, controller.v1)?;
            if matches!(apply, Limit::Memory(_)) {
                cgroup.memory = Some(controller.clone().with_dir(dir));
            }
        }
        Ok(cgroup)
    }

    /// Whether memory, process and CPU limits are enforced (not only membership).
    pub fn limits_enforced(&self) -> bool {
        self.memory.is_some() && self.pids.is_some() && self.cpu.is_some()
    }

    /// Removes what a killed earlier worker left: `matchfarm-<pid>` cgroups of
    /// processes that no longer exist, and every process still in them.
    fn sweep_dead_owners(&self) {
        let mut parents = vec![self.membership.parent().map(Path::to_path_buf)];
        for controller in [&self.memory, &self.pids, &self.cpu].into_iter().flatten() {
            parents.push(controller.dir.parent().map(Path::to_path_buf));
        }
        for parent in parents.into_iter().flatten() {
            let Ok(entries) = std::fs::read_dir(&parent) else { continue };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("matchfarm-")) else { continue };
                if Path::new("/proc").join(pid).exists() {
                    continue;
                }
                for bot in std::fs::read_dir(entry.path()).into_iter().flatten().flatten() {
                    let _ = std::fs::write(bot.path().join("cgroup.kill"), "1");
                    let _ = std::fs::remove_dir(bot.path());
                }
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
}

/// One limit, written in either dialect.
#[derive(Debug, Clone, Copy)]
enum Limit {
    Memory(u64),
    Pids(i64),
    Cpu(u64),
}

impl Limit {
    fn write(self, dir: &Path, v1: bool) -> io::Result<()> {
        match (self, v1) {
            (Limit::Memory(bytes), false) => {
                std::fs::write(dir.join("memory.max"), bytes.to_string())?;
                // No swap: the limit is the bot's memory, as in its container.
                write_if_present(&dir.join("memory.swap.max"), "0")
            }
            (Limit::Memory(bytes), true) => {
                std::fs::write(dir.join("memory.limit_in_bytes"), bytes.to_string())?;
                write_if_present(&dir.join("memory.memsw.limit_in_bytes"), &bytes.to_string())
            }
            (Limit::Pids(pids), _) => std::fs::write(dir.join("pids.max"), pids.max(1).to_string()),
            (Limit::Cpu(millis), false) => {
                std::fs::write(dir.join("cpu.max"), format!("{} {CPU_PERIOD_US}", cpu_quota_us(millis)))
            }
            (Limit::Cpu(millis), true) => {
                std::fs::write(dir.join("cpu.cfs_period_us"), CPU_PERIOD_US.to_string())?;
                std::fs::write(dir.join("cpu.cfs_quota_us"), cpu_quota_us(millis).to_string())
            }
        }
    }
}

fn cpu_quota_us(millis: u64) -> u64 {
    // The kernel refuses quotas under 1 ms.
    (millis.saturating_mul(CPU_PERIOD_US) / 1000).max(1000)
}

fn write_if_present(path: &Path, value: &str) -> io::Result<()> {
    match std::fs::write(path, value) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

impl Controller {
    fn with_dir(mut self, dir: PathBuf) -> Self {
        self.dir = dir;
        self
    }
}

/// Turns on the memory, pids and cpu controllers for the bots' cgroups under
/// `own_dir`, and makes `membership`. The kernel allows controllers below a cgroup
/// only while it holds no processes itself, so a worker whose cgroup has processes
/// first moves itself into a leaf of its own (as container inits do). Returns the
/// controllers turned on; none is an answer too (then only membership is used).
fn enable_controllers(own_dir: &Path, membership: &Path) -> io::Result<Vec<String>> {
    let wanted = ["memory", "pids", "cpu"];
    let available = std::fs::read_to_string(own_dir.join("cgroup.controllers")).unwrap_or_default();
    let wanted: Vec<&str> = wanted.into_iter().filter(|c| available.split_whitespace().any(|a| a == *c)).collect();
    let request = wanted.iter().map(|c| format!("+{c}")).collect::<Vec<_>>().join(" ");
    let mut enabled = Vec::new();
    if !wanted.is_empty() {
        let subtree = own_dir.join("cgroup.subtree_control");
        if std::fs::write(&subtree, &request).is_err() {
            let leaf = own_dir.join("matchfarm-worker");
            std::fs::create_dir_all(&leaf)?;
            std::fs::write(leaf.join("cgroup.procs"), std::process::id().to_string())?;
            let _ = std::fs::write(&subtree, &request);
        }
        let on = std::fs::read_to_string(&subtree).unwrap_or_default();
        enabled = wanted.iter().filter(|c| on.split_whitespace().any(|o| o == **c)).map(|c| (*c).to_owned()).collect();
    }
    std::fs::create_dir_all(membership)?;
    if !enabled.is_empty() {
        let request = enabled.iter().map(|c| format!("+{c}")).collect::<Vec<_>>().join(" ");
        std::fs::write(membership.join("cgroup.subtree_control"), request)?;
    }
    Ok(enabled)
}

/// The cgroup of one bot: its processes, its limits, and their end.
#[derive(Debug)]
pub struct BotCgroup {
    /// In the v2 hierarchy: `cgroup.procs`, `cgroup.kill`, `cgroup.events`.
    membership: PathBuf,
    /// The v1 cgroups holding its limits (empty on a unified host).
    limit_dirs: Vec<PathBuf>,
    /// Where its memory is accounted, for the OOM count.
    memory: Option<Controller>,
    /// Its `cgroup.freeze`, open for writing, where the kernel has one.
    freezer: Option<std::fs::File>,
}

impl BotCgroup {
    /// Moves process `pid` (and so everything it will start) into this cgroup.
    pub fn adopt(&self, pid: u32) -> io::Result<()> {
        for dir in std::iter::once(&self.membership).chain(&self.limit_dirs) {
            std::fs::write(dir.join("cgroup.procs"), pid.to_string())?;
        }
        Ok(())
    }

    /// How many processes are in it now.
    pub fn process_count(&self) -> usize {
        std::fs::read_to_string(self.membership.join("cgroup.procs")).map(|procs| procs.lines().count()).unwrap_or(0)
    }

    /// A meter of the CPU time of all its processes: the v2 hierarchy counts it in
    /// every cgroup, with or without the cpu controller.
    pub fn cpu_meter(&self) -> Option<CpuMeter> {
        let file = std::fs::File::open(self.membership.join(CpuUsageFile::CpuStat.name())).ok()?;
        let meter = CpuMeter::Cgroup { file, kind: CpuUsageFile::CpuStat };
        meter.used().is_some().then_some(meter)
    }

    /// Freezes every process in it (they stay as they are, using no CPU, until thawed)
    /// or thaws them. `false` if this kernel cannot.
    pub fn freeze(&self, frozen: bool) -> bool {
        use std::os::unix::fs::FileExt;
        self.freezer.as_ref().is_some_and(|file| file.write_at(if frozen { b"1" } else { b"0" }, 0).is_ok())
    }

    /// Whether the kernel killed one of its processes for exceeding the memory limit.
    pub fn oom_killed(&self) -> bool {
        let Some(memory) = &self.memory else { return false };
        let file = if memory.v1 { "memory.oom_control" } else { "memory.events" };
        std::fs::read_to_string(memory.dir.join(file)).is_ok_and(|text| {
            text.lines()
                .filter_map(|line| line.strip_prefix("oom_kill "))
                .any(|count| count.trim().parse::<u64>().is_ok_and(|n| n > 0))
        })
    }

    /// Kills every process in it (the kernel takes them away asynchronously).
    pub fn kill(&self) {
        let _ = std::fs::write(self.membership.join("cgroup.kill"), "1");
    }

    /// Waits (at most a few seconds) until the kernel has taken every process of a
    /// [`BotCgroup::kill`]ed cgroup away. `false` if some were still there.
    pub async fn emptied(&self) -> bool {
        let started = Instant::now();
        while self.populated() {
            if started.elapsed() > EMPTY_TIMEOUT {
                return false;
            }
            // By now the bot's own process has been reaped, so what is left is
            // usually gone within microseconds; cgroup.events has no async wake-up
            // short of inotify, so it is polled.
            sleep(Duration::from_millis(1)).await;
        }
        true
    }

    fn populated(&self) -> bool {
        std::fs::read_to_string(self.membership.join("cgroup.events"))
            .map(|events| events.lines().any(|line| line == "populated 1"))
            .unwrap_or(false)
    }
}

impl Drop for BotCgroup {
    /// Kills whatever is left and removes the cgroups. A cgroup that is not empty yet
    /// cannot be removed: that happens only when the kill is still under way, and the
    /// sweep of the next worker to start on this host removes it.
    fn drop(&mut self) {
        let _ = std::fs::write(self.membership.join("cgroup.kill"), "1");
        for dir in std::iter::once(&self.membership).chain(&self.limit_dirs) {
            let _ = std::fs::remove_dir(dir);
        }
    }
}
