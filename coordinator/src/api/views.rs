//! The reads every open tournament page polls (its directed status, standings and
//! pairings), computed once for all the pages that poll them rather than once per page.
//!
//! Each is a full pass over the tournament's results (a rating fit, a ladder's replay, a
//! matrix of every pairing): per page and poll, a few viewers of a large tournament kept
//! the coordinator's reader and cores busy enough to starve the publisher (measured with
//! `farm-bench fleet`). A view is kept per tournament and kind and made again when what
//! it was made from ([`ViewSources`]) has changed: at once when an operator changed the
//! tournament's bots (a page shows the bot just added) or when it has finished, and at
//! most once per [`FRESH_FOR`] (1 s, against the pages' 2 s polls) while the farm's
//! matches move it on. One request makes it while the others wait for it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::ledger::Progress;
use crate::tournament::Tournament;

/// How old a view of a tournament still being played may be when it is served.
const FRESH_FOR: Duration = Duration::from_secs(1);
/// The most bytes of views kept (a 1,000-bot round robin's pairings alone are 32 MB);
/// past it the oldest go, and a larger view is served without being kept.
const KEPT_BYTES: usize = 64 << 20;

/// Which view of a tournament.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ViewKind {
    /// A directed tournament's status (its SPRT, Swiss rounds or ladder).
    Status,
    /// Its standings.
    Standings,
    /// Its pairing matrix.
    Pairings,
}

/// The views kept, each behind a lock of its own (held while it is made).
#[derive(Clone)]
pub struct Views {
    slots: Arc<Mutex<HashMap<(String, ViewKind), Slot>>>,
    fresh_for: Duration,
}

type Slot = Arc<tokio::sync::Mutex<Option<View>>>;

struct View {
    sources: ViewSources,
    made: Instant,
    body: Bytes,
}

/// What a view of a tournament is made from, as far as telling whether a kept one
/// still holds: everything else in a tournament is fixed by its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewSources {
    /// Its jobs by state: the farm's progress, which a view of a tournament being
    /// played may lag by up to [`FRESH_FOR`].
    pub progress: Progress,
    /// How many changes an operator made to its bots (its roster only grows): no view
    /// lags these.
    pub roster_changes: usize,
}

impl ViewSources {
    /// The sources of `tournament`'s views, its jobs at `progress`.
    pub fn of(tournament: &Tournament, progress: Progress) -> Self {
        ViewSources { progress, roster_changes: tournament.roster.len() }
    }

    /// Whether a view made from `self` may be served for `now`, `age` old after
    /// `fresh_for` is allowed.
    fn still_hold_for(&self, now: &ViewSources, age: Duration, fresh_for: Duration) -> bool {
        self.roster_changes == now.roster_changes
            && (self.progress == now.progress || (!now.progress.finished() && age < fresh_for))
    }
}

impl Default for Views {
    fn default() -> Self {
        Views::new(FRESH_FOR)
    }
}

impl Views {
    /// Views served up to `fresh_for` old while their tournament is being played.
    pub fn new(fresh_for: Duration) -> Self {
        Views { slots: Arc::default(), fresh_for }
    }

    /// The `kind` view of `tournament`, made from `sources`: the one kept when it still
    /// holds, else the one `make` makes (kept).
    pub async fn get<E, F, Fut>(
        &self,
        tournament: &str,
        kind: ViewKind,
        sources: ViewSources,
        make: F,
    ) -> Result<Bytes, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Bytes, E>>,
    {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(slots.entry((tournament.to_owned(), kind)).or_default())
        };
        let mut view = slot.lock().await;
        if let Some(kept) = view.as_ref()
            && kept.sources.still_hold_for(&sources, kept.made.elapsed(), self.fresh_for)
        {
            return Ok(kept.body.clone());
        }
        let body = make().await?;
        *view = (body.len() <= KEPT_BYTES).then(|| View { sources, made: Instant::now(), body: body.clone() });
        drop(view);
        self.evict();
        Ok(body)
    }

    /// Drops the oldest views (and the empty slots) until what is kept fits
    /// [`KEPT_BYTES`]; a view being made is left alone.
    fn evict(&self) {
        let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut kept: Vec<(Instant, usize, (String, ViewKind))> = Vec::new();
        slots.retain(|key, slot| match slot.try_lock() {
            Ok(view) => match view.as_ref() {
                Some(view) => {
                    kept.push((view.made, view.body.len(), key.clone()));
                    true
                }
                None => false,
            },
            Err(_) => true,
        });
        let mut total: usize = kept.iter().map(|(_, size, _)| size).sum();
        kept.sort_by_key(|(made, ..)| *made);
        for (_, size, key) in kept {
            if total <= KEPT_BYTES {
                break;
            }
            slots.remove(&key);
            total -= size;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A maker that counts its calls and answers their number.
    async fn counted(calls: &AtomicUsize) -> Result<Bytes, String> {
        Ok(Bytes::from(calls.fetch_add(1, Ordering::SeqCst).to_string()))
    }

    /// A tournament with `done` jobs done and one more pending unless `finished`, after
    /// `roster_changes` changes to its bots.
    fn sources(done: u64, finished: bool, roster_changes: usize) -> ViewSources {
        let left = u64::from(!finished);
        let progress = Progress { total: done + left, pending: left, done, open: !finished, ..Progress::default() };
        assert_eq!(progress.finished(), finished);
        ViewSources { progress, roster_changes }
    }

    #[tokio::test]
    async fn a_view_is_made_again_past_its_freshness_once_finished_or_when_the_bots_change() {
        let calls = AtomicUsize::new(0);
        // Fresh for an hour: while the tournament plays, its progress does not remake it.
        let views = Views::new(Duration::from_secs(3600));
        let get = |sources| views.get("t", ViewKind::Standings, sources, || counted(&calls));
        assert_eq!(get(sources(5, false, 0)).await.expect("made"), "0");
        assert_eq!(get(sources(5, false, 0)).await.expect("kept"), "0");
        assert_eq!(get(sources(9, false, 0)).await.expect("fresh enough"), "0");
        // An operator's change to its bots is shown at once.
        assert_eq!(get(sources(9, false, 1)).await.expect("a bot added"), "1");
        assert_eq!(get(sources(10, false, 1)).await.expect("fresh enough"), "1");
        // Finished with other progress: made again at once, then kept.
        assert_eq!(get(sources(12, true, 1)).await.expect("remade"), "2");
        assert_eq!(get(sources(12, true, 1)).await.expect("kept"), "2");
        // Another kind, or another tournament, is another view.
        let pairings = views.get("t", ViewKind::Pairings, sources(12, true, 1), || counted(&calls)).await;
        assert_eq!(pairings.expect("made"), "3");
        let other = views.get("u", ViewKind::Standings, sources(12, true, 1), || counted(&calls)).await;
        assert_eq!(other.expect("made"), "4");

        // Fresh for no time: every change of progress remakes it.
        let views = Views::new(Duration::ZERO);
        let get = |done| views.get("t", ViewKind::Status, sources(done, false, 0), || counted(&calls));
        assert_eq!(get(1).await.expect("made"), "5");
        assert_eq!(get(1).await.expect("same progress: kept"), "5");
        assert_eq!(get(2).await.expect("new progress"), "6");
    }

    #[tokio::test]
    async fn pages_asking_at_once_wait_for_one_making() {
        let calls = AtomicUsize::new(0);
        let views = Views::new(Duration::ZERO);
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let slow = views.get("t", ViewKind::Pairings, sources(3, false, 0), || async {
            let _ = released.await;
            counted(&calls).await
        });
        let waiting = views.get("t", ViewKind::Pairings, sources(3, false, 0), || counted(&calls));
        let (slow, waiting, ()) = tokio::join!(slow, waiting, async { release.send(()).expect("the maker waits") });
        assert_eq!((slow.expect("made"), waiting.expect("waited")), ("0".into(), "0".into()));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn errors_are_not_kept_and_views_past_the_budget_are_not_kept() {
        let views = Views::new(Duration::from_secs(3600));
        let at = sources(1, false, 0);
        let failed = views.get("t", ViewKind::Standings, at, || async { Err::<Bytes, _>("ledger") }).await;
        assert_eq!(failed, Err("ledger"));
        let made = views.get("t", ViewKind::Standings, at, || async { Ok::<_, &str>(Bytes::from("ok")) });
        assert_eq!(made.await.expect("made after the error"), "ok");
        let huge = Bytes::from(vec![b' '; KEPT_BYTES + 1]);
        let big = views.get("t", ViewKind::Pairings, at, || async { Ok::<_, &str>(huge.clone()) }).await;
        assert_eq!(big.expect("served").len(), KEPT_BYTES + 1);
        let again = views.get("t", ViewKind::Pairings, at, || async { Ok::<_, &str>(Bytes::from("small")) });
        assert_eq!(again.await.expect("not kept: made again"), "small");
    }
}
