//! How long to wait before trying again. [`doubled`] is the farm's one doubling rule.
//! [`Backoff`] and [`ReconnectPacing`] pace reconnecting to RabbitMQ, one policy for the
//! worker and the coordinator, so that a broker that is down is not hammered, and a
//! broker that was fine for a while and then restarted is reconnected to at once, not
//! after delays grown by failures long past.

use std::time::Duration;

/// The first delay after a failure.
pub const FIRST_DELAY: Duration = Duration::from_millis(200);
/// The longest delay: a broker back up is found within this.
pub const MAX_DELAY: Duration = Duration::from_secs(10);
/// A session that lasted this long was healthy: the failure that ended it starts the
/// delays again from [`FIRST_DELAY`].
pub const STABLE_SESSION: Duration = Duration::from_secs(30);

/// The wait before try number `attempt` (1, 2, ...; 0 counts as 1) of a backoff from
/// `first`, doubling, capped at `max`: `first` × 2^(`attempt` − 1). The one doubling
/// rule of the farm: reconnects ([`Backoff`]), a job's retries after an infrastructure
/// failure and a webhook's deliveries.
pub fn doubled(first: Duration, max: Duration, attempt: u32) -> Duration {
    first.saturating_mul(1 << attempt.saturating_sub(1).min(31)).min(max)
}

/// Exponential backoff: each delay twice the last, from a first delay up to a maximum
/// ([`doubled`]).
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    /// Delays taken since the last reset.
    taken: u32,
}

impl Backoff {
    /// Delays from `first`, doubling, capped at `max`.
    pub fn new(first: Duration, max: Duration) -> Self {
        Backoff { first, max, taken: 0 }
    }

    /// The delay to wait now; the one after it is twice as long, up to the maximum.
    pub fn next_delay(&mut self) -> Duration {
        self.taken = self.taken.saturating_add(1);
        doubled(self.first, self.max, self.taken)
    }

    /// Starts again from the first delay.
    pub fn reset(&mut self) {
        self.taken = 0;
    }
}

impl Default for Backoff {
    /// [`FIRST_DELAY`] doubling to [`MAX_DELAY`].
    fn default() -> Self {
        Backoff::new(FIRST_DELAY, MAX_DELAY)
    }
}

/// The delay before reconnecting after a broker session ended: growing while sessions
/// keep failing quickly (a broker that accepts connections but fails every session, a
/// queue declared with other arguments say, must not be hammered in a tight loop), from
/// the first delay again after a session that lasted.
#[derive(Debug, Clone)]
pub struct ReconnectPacing {
    backoff: Backoff,
    stable: Duration,
}

impl ReconnectPacing {
    /// Delays from `backoff`, reset by any session that lasted at least `stable`.
    pub fn new(backoff: Backoff, stable: Duration) -> Self {
        ReconnectPacing { backoff, stable }
    }

    /// How long to wait before reconnecting after a session that `lasted` this long.
    pub fn after_session(&mut self, lasted: Duration) -> Duration {
        if lasted >= self.stable {
            self.backoff.reset();
        }
        self.backoff.next_delay()
    }
}

impl Default for ReconnectPacing {
    /// The default [`Backoff`], reset by sessions of [`STABLE_SESSION`].
    fn default() -> Self {
        ReconnectPacing::new(Backoff::default(), STABLE_SESSION)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubled_waits_double_from_the_first_and_stop_at_the_maximum() {
        let second = Duration::from_secs(1);
        let waits: Vec<u64> = (0..=7).map(|attempt| doubled(second, 30 * second, attempt).as_secs()).collect();
        assert_eq!(waits, [1, 1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(doubled(second, 30 * second, u32::MAX), 30 * second, "no overflow");
        assert_eq!(doubled(Duration::MAX / 2, Duration::MAX, 40), Duration::MAX, "saturates");
    }

    fn millis(delays: impl IntoIterator<Item = Duration>) -> Vec<u128> {
        delays.into_iter().map(|delay| delay.as_millis()).collect()
    }

    #[test]
    fn delays_double_from_a_fifth_of_a_second_up_to_ten_seconds() {
        let mut backoff = Backoff::default();
        let delays = millis((0..9).map(|_| backoff.next_delay()));
        assert_eq!(delays, [200, 400, 800, 1600, 3200, 6400, 10_000, 10_000, 10_000]);
    }

    #[test]
    fn reset_starts_again_from_the_first_delay() {
        let mut backoff = Backoff::default();
        for _ in 0..5 {
            backoff.next_delay();
        }
        backoff.reset();
        assert_eq!(millis([backoff.next_delay(), backoff.next_delay()]), [200, 400]);
    }

    #[test]
    fn a_first_delay_above_the_maximum_is_capped() {
        let mut backoff = Backoff::new(Duration::from_secs(20), Duration::from_secs(10));
        assert_eq!(millis([backoff.next_delay(), backoff.next_delay()]), [10_000, 10_000]);
    }

    #[test]
    fn short_sessions_keep_growing_the_delay() {
        let mut pacing = ReconnectPacing::default();
        let short = STABLE_SESSION - Duration::from_millis(1);
        let delays = millis((0..8).map(|_| pacing.after_session(short)));
        assert_eq!(delays, [200, 400, 800, 1600, 3200, 6400, 10_000, 10_000]);
    }

    #[test]
    fn a_session_that_lasted_the_threshold_starts_again_from_the_first_delay() {
        let mut pacing = ReconnectPacing::default();
        for _ in 0..10 {
            pacing.after_session(Duration::ZERO);
        }
        assert_eq!(pacing.after_session(Duration::from_secs(1)), MAX_DELAY, "a short session does not reset");
        assert_eq!(pacing.after_session(STABLE_SESSION), FIRST_DELAY);
        assert_eq!(pacing.after_session(Duration::ZERO), FIRST_DELAY * 2, "failing again grows again");
        assert_eq!(pacing.after_session(Duration::from_secs(3600)), FIRST_DELAY);
    }
}
