//! The reads every open tournament page polls (its directed status, standings and
//! pairings), computed once for all the pages that poll them rather than once per page.
//!
//! Each is a full pass over the tournament's results (a rating fit, a ladder's replay, a
//! matrix of every pairing): per page and poll, a few viewers of a large tournament kept
//! the coordinator's reader and cores busy enough to starve the publisher (measured with
//! `farm-bench fleet`). A view is kept per tournament and kind, made again only when the
//! tournament has new answers and the view is older than [`Views::fresh_for`] (1 s,
//! against the pages' 2 s polls); a finished tournament's view is made again as soon as
//! its answers change. One request makes it while the others wait for it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;

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
    /// The tournament's answers (done and failed) when it was made.
    answered: u64,
    made: Instant,
    body: Bytes,
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

    /// The `kind` view of `tournament`, which has `answered` answers and is `finished`
    /// or not: the one kept when it still holds, else the one `make` makes (kept).
    pub async fn get<E, F, Fut>(
        &self,
        tournament: &str,
        kind: ViewKind,
        (answered, finished): (u64, bool),
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
            && (kept.answered == answered || (!finished && kept.made.elapsed() < self.fresh_for))
        {
            return Ok(kept.body.clone());
        }
        let body = make().await?;
        *view = (body.len() <= KEPT_BYTES).then(|| View { answered, made: Instant::now(), body: body.clone() });
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

    #[tokio::test]
    async fn a_view_is_made_again_only_for_new_answers_past_its_freshness_or_once_finished() {
        let calls = AtomicUsize::new(0);
        // Fresh for an hour: while the tournament plays, new answers do not remake it.
        let views = Views::new(Duration::from_secs(3600));
        let get = |answered, finished| views.get("t", ViewKind::Standings, (answered, finished), || counted(&calls));
        assert_eq!(get(5, false).await.expect("made"), "0");
        assert_eq!(get(5, false).await.expect("kept"), "0");
        assert_eq!(get(9, false).await.expect("fresh enough"), "0");
        // Finished with other answers: made again at once, then kept.
        assert_eq!(get(12, true).await.expect("remade"), "1");
        assert_eq!(get(12, true).await.expect("kept"), "1");
        // Another kind, or another tournament, is another view.
        let pairings = views.get("t", ViewKind::Pairings, (12, true), || counted(&calls)).await;
        assert_eq!(pairings.expect("made"), "2");
        let other = views.get("u", ViewKind::Standings, (12, true), || counted(&calls)).await;
        assert_eq!(other.expect("made"), "3");

        // Fresh for no time: every new answer count remakes it.
        let views = Views::new(Duration::ZERO);
        let get = |answered| views.get("t", ViewKind::Status, (answered, false), || counted(&calls));
        assert_eq!(get(1).await.expect("made"), "4");
        assert_eq!(get(1).await.expect("same answers: kept"), "4");
        assert_eq!(get(2).await.expect("new answers"), "5");
    }

    #[tokio::test]
    async fn pages_asking_at_once_wait_for_one_making() {
        let calls = AtomicUsize::new(0);
        let views = Views::new(Duration::ZERO);
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let slow = views.get("t", ViewKind::Pairings, (3, false), || async {
            let _ = released.await;
            counted(&calls).await
        });
        let waiting = views.get("t", ViewKind::Pairings, (3, false), || counted(&calls));
        let (slow, waiting, ()) = tokio::join!(slow, waiting, async { release.send(()).expect("the maker waits") });
        assert_eq!((slow.expect("made"), waiting.expect("waited")), ("0".into(), "0".into()));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn errors_are_not_kept_and_views_past_the_budget_are_not_kept() {
        let views = Views::new(Duration::from_secs(3600));
        let failed = views.get("t", ViewKind::Standings, (1, false), || async { Err::<Bytes, _>("ledger") }).await;
        assert_eq!(failed, Err("ledger"));
        let made = views.get("t", ViewKind::Standings, (1, false), || async { Ok::<_, &str>(Bytes::from("ok")) });
        assert_eq!(made.await.expect("made after the error"), "ok");
        let huge = Bytes::from(vec![b' '; KEPT_BYTES + 1]);
        let big = views.get("t", ViewKind::Pairings, (1, false), || async { Ok::<_, &str>(huge.clone()) }).await;
        assert_eq!(big.expect("served").len(), KEPT_BYTES + 1);
        let again = views.get("t", ViewKind::Pairings, (1, false), || async { Ok::<_, &str>(Bytes::from("small")) });
        assert_eq!(again.await.expect("not kept: made again"), "small");
    }
}
