//! How a match times its bots' moves ([`MoveClock`]): each move's budget on the wall or
//! the CPU clock, the bank of extra time a bot may draw on, the wall-clock backstop of
//! the CPU clock, and what every move took.
//!
//! A move's CPU time runs from the end of the bot's previous move (the reading taken as
//! its reply came) to its reply, unless the match lets bots ponder: a bot is frozen
//! between its reply and its next request, and what it still spent before the freeze
//! took hold (a thread or a child left computing) is charged to its next move, so no
//! computation goes uncharged. With `ponder`, a move's CPU time runs from its request.
//!
//! With the CPU clock a move ends when the bot's CPU time passes its budget and bank;
//! the wait for its reply wakes up at the earliest moment that could have happened (the
//! CPU time left, spread over every core), reads the bot's CPU time, and waits again: a
//! handful of readings per move, a few microseconds each.

use std::sync::OnceLock;
use std::time::Duration;

use farm_engine::BotReply;
use farm_engine::replay::ReplyTime;
use farm_proto::{ClockKind, MoveClock, TimeSummary};
use tokio::time::Instant;

use crate::bots::{BotSession, Received};

/// The shortest wait between two readings of a bot's CPU time.
const MIN_CPU_CHECK: Duration = Duration::from_millis(1);

/// One seat's moves so far: how many, how many timed out, its bank, and what each
/// reply took.
#[derive(Debug)]
pub(crate) struct SeatClock {
    /// Requests sent.
    pub(crate) requests: u64,
    /// Requests that timed out.
    pub(crate) timeouts: u64,
    /// What is left of its time bank.
    bank: Duration,
    /// Wall-clock time of each reply that came in time, in microseconds.
    wall_us: Vec<u64>,
    /// CPU time of each reply that came in time, where measured, in microseconds.
    cpu_us: Vec<u64>,
    /// The bot's CPU time when its previous move ended, where measured: where its next
    /// move's CPU time is counted from, unless bots ponder.
    cpu_at_last_move: Option<Duration>,
}

/// A move being timed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Move {
    sent: Instant,
    /// The bot's CPU time when it was asked.
    cpu_at_send: Option<Duration>,
    /// Its budget on the match's clock.
    budget: Duration,
    /// When it times out whatever its CPU time.
    wall_limit: Instant,
}

impl SeatClock {
    /// A seat's clock at the start of a match with `clock`.
    pub(crate) fn new(clock: &MoveClock) -> Self {
        SeatClock {
            requests: 0,
            timeouts: 0,
            bank: Duration::from_millis(clock.time_bank_ms),
            wall_us: Vec::new(),
            cpu_us: Vec::new(),
            cpu_at_last_move: None,
        }
    }

    /// Starts timing a request with `budget` to `session`, sent now.
    pub(crate) fn start(&mut self, clock: &MoveClock, budget: Duration, session: &BotSession) -> Move {
        self.requests += 1;
        let sent = Instant::now();
        let wall = clock.wall_limit_ms(millis(budget), millis(self.bank));
        let cpu_at_send = match self.cpu_at_last_move {
            Some(last) if !clock.ponder => Some(last),
            _ => session.cpu_used(),
        };
        Move { sent, cpu_at_send, budget, wall_limit: sent + Duration::from_millis(wall) }
    }

    /// Waits for the reply to `timed` and judges it on the match's clock: a reply over
    /// its budget draws the excess from the bank; over budget and bank (or past the
    /// wall-clock limit) it is a timeout, and the bank is spent. Returns the reply the
    /// game gets and what the move took.
    pub(crate) async fn reply(
        &mut self,
        clock: &MoveClock,
        timed: Move,
        session: &mut BotSession,
    ) -> (BotReply, ReplyTime) {
        loop {
            let until = match clock.kind {
                ClockKind::Wall => timed.wall_limit,
                ClockKind::Cpu => {
                    let used = self.cpu_spent(&timed, session.cpu_used());
                    let left = (timed.budget + self.bank).saturating_sub(used.unwrap_or_default());
                    let check = Instant::now() + (left / cores()).max(MIN_CPU_CHECK);
                    check.min(timed.wall_limit)
                }
            };
            if let Some(received) = session.receive_until(until).await {
                let judged = self.judge(clock, &timed, received);
                if judged.0 == BotReply::Timeout {
                    // It came, too late: only a client of the worker's server is told.
                    session.timed_out();
                }
                return judged;
            }
            let now = Instant::now();
            let cpu = session.cpu_used();
            let over_cpu = clock.kind == ClockKind::Cpu
                && self.cpu_spent(&timed, cpu).is_some_and(|used| used > timed.budget + self.bank);
            if now >= timed.wall_limit || over_cpu {
                session.give_up();
                return self.time_out(&timed, now, cpu);
            }
        }
    }

    /// A request the bot did not take (it is not reading its input): it still has its
    /// full time, then times out.
    pub(crate) async fn unread(&mut self, timed: Move, session: &mut BotSession) -> (BotReply, ReplyTime) {
        tokio::time::sleep_until(timed.wall_limit).await;
        self.time_out(&timed, timed.wall_limit, session.cpu_used())
    }

    fn cpu_spent(&self, timed: &Move, now: Option<Duration>) -> Option<Duration> {
        Some(now?.saturating_sub(timed.cpu_at_send?))
    }

    fn judge(&mut self, clock: &MoveClock, timed: &Move, received: Received) -> (BotReply, ReplyTime) {
        let wall = received.at.saturating_duration_since(timed.sent);
        let cpu = self.cpu_spent(timed, received.cpu);
        self.cpu_at_last_move = received.cpu;
        if received.reply == BotReply::Crashed {
            return (BotReply::Crashed, reply_time(wall, cpu));
        }
        let spent = match clock.kind {
            ClockKind::Wall => wall,
            // Unmeasured CPU time is taken as the wall clock's: never more lenient.
            ClockKind::Cpu => cpu.unwrap_or(wall),
        };
        // Arrived while the runner was reading another seat, after its time: late is
        // late, whoever was read first.
        if received.at > timed.wall_limit || spent > timed.budget + self.bank {
            return self.time_out(timed, received.at, received.cpu);
        }
        self.bank = self.bank.saturating_sub(spent.saturating_sub(timed.budget));
        self.wall_us.push(micros(wall));
        if let Some(cpu) = cpu {
            self.cpu_us.push(micros(cpu));
        }
        (received.reply, reply_time(wall, cpu))
    }

    fn time_out(&mut self, timed: &Move, at: Instant, cpu_now: Option<Duration>) -> (BotReply, ReplyTime) {
        self.timeouts += 1;
        self.bank = Duration::ZERO;
        self.cpu_at_last_move = cpu_now;
        let wall = at.saturating_duration_since(timed.sent);
        (BotReply::Timeout, reply_time(wall, self.cpu_spent(timed, cpu_now)))
    }

    /// What its replies that came in time took: on the wall clock, and on the CPU
    /// clock where measured.
    pub(crate) fn summaries(&self) -> (Option<TimeSummary>, Option<TimeSummary>) {
        (TimeSummary::of_micros(&self.wall_us), TimeSummary::of_micros(&self.cpu_us))
    }
}

fn reply_time(wall: Duration, cpu: Option<Duration>) -> ReplyTime {
    ReplyTime { wall_us: micros(wall), cpu_us: cpu.map(micros) }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The machine's cores: the most CPU time a bot can use per unit of wall-clock time.
fn cores() -> u32 {
    static CORES: OnceLock<u32> = OnceLock::new();
    *CORES.get_or_init(|| {
        std::thread::available_parallelism().map_or(1, |cores| u32::try_from(cores.get()).unwrap_or(u32::MAX))
    })
}
