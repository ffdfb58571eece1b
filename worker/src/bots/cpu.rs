//! A bot's CPU time: what the CPU clock times its moves by ([`farm_proto::ClockKind::Cpu`]),
//! and what every move's telemetry records.
//!
//! Read where the kernel counts every process of the bot: its cgroup (a container's,
//! whose usage file its supervisor hands over; a local bot's own, where the worker can
//! make one). Without one, the CPU clock of the bot's own process (all its threads,
//! not the processes it starts). A reading costs one `pread` or `clock_gettime`: a few
//! microseconds per move (the `cpu_reading` bench measures it).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Duration;

use farm_supervisor::protocol::CpuUsageFile;
use nix::time::{ClockId, clock_gettime};

/// Where one bot's cumulative CPU time is read.
#[derive(Debug)]
pub enum CpuMeter {
    /// A cgroup's usage file, open, read from its start each time.
    Cgroup {
        /// The open file.
        file: File,
        /// Its dialect.
        kind: CpuUsageFile,
    },
    /// The CPU clock of the bot's one process.
    Process(ClockId),
}

impl CpuMeter {
    /// The CPU clock of process `pid`, if the kernel gives one.
    pub fn of_process(pid: u32) -> Option<Self> {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).ok()?);
        ClockId::pid_cpu_clock_id(pid).ok().map(CpuMeter::Process)
    }

    /// The CPU time used so far by everything it counts; `None` once it cannot be read
    /// (the process is gone, the file is not what it should be).
    pub fn used(&self) -> Option<Duration> {
        match self {
            CpuMeter::Cgroup { file, kind } => {
                let mut buffer = [0u8; 512];
                let read = file.read_at(&mut buffer, 0).ok()?;
                let text = std::str::from_utf8(&buffer[..read]).ok()?;
                kind.parse_micros(text).map(Duration::from_micros)
            }
            CpuMeter::Process(clock) => clock_gettime(*clock).ok().map(Duration::from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process's clock counts what its threads spend: at least this thread's spin
    /// (other test threads may add more).
    #[test]
    fn a_process_clock_counts_the_cpu_its_threads_spend() {
        let meter = CpuMeter::of_process(std::process::id()).expect("a clock of our own");
        let thread = || Duration::from(clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("this thread's clock"));
        let before = meter.used().expect("readable");
        let spin = thread();
        while thread() - spin < Duration::from_millis(30) {
            std::hint::black_box(0u64);
        }
        let spent = meter.used().expect("readable") - before;
        assert!(spent >= Duration::from_millis(30), "{spent:?}");
    }

    /// A cgroup file is read from its start every time, in its dialect.
    #[test]
    fn a_usage_file_is_read_again_from_its_start() {
        let directory = tempfile::tempdir().expect("a directory");
        let path = directory.path().join("cpu.stat");
        std::fs::write(&path, "usage_usec 1500\nuser_usec 1000\n").expect("written");
        let meter = CpuMeter::Cgroup { file: File::open(&path).expect("open"), kind: CpuUsageFile::CpuStat };
        assert_eq!(meter.used(), Some(Duration::from_micros(1500)));
        assert_eq!(meter.used(), Some(Duration::from_micros(1500)));
        std::fs::write(&path, "usage_usec 2500\n").expect("written");
        assert_eq!(meter.used(), Some(Duration::from_micros(2500)));
    }
}
