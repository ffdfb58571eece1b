//! Bots' sources uploaded to `POST /api/bots`, within bounds. Each upload holds its
//! archive and its unpacked files (up to about 130 MiB) while it is checked, so at most
//! [`UploadLimits::concurrent`] are taken at once, and at most
//! [`UploadLimits::per_user`] of them one user's: a user's slow uploads hold only their
//! own permits. A body must arrive at [`UploadLimits::min_bytes_per_sec`] at least, so
//! that a trickle is cut within seconds, and whole within
//! [`UploadLimits::deadline_secs`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use farm_proto::limits;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// What a body is given before it is held to the minimum rate: a second's worth of
/// bytes of slack, for the client's first round trips.
const RATE_GRACE: Duration = Duration::from_secs(1);

/// How many uploads are taken at once, and how fast they must arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UploadLimits {
    /// Uploads being received or checked at once, everyone's (1 to 64); one more is
    /// answered 429.
    pub concurrent: usize,
    /// Of those, one user's (1 to `concurrent`); one more of theirs is answered 429.
    pub per_user: usize,
    /// The slowest a body may arrive, on average from its start after a second of
    /// grace (1024 to 1 GiB); a slower one is cut with 408.
    pub min_bytes_per_sec: u64,
    /// Seconds a body may take to arrive whole (1 to 3600); a slower one is cut with 408.
    pub deadline_secs: u64,
}

impl Default for UploadLimits {
    fn default() -> Self {
        UploadLimits {
            concurrent: limits::UPLOADS_CONCURRENT.default,
            per_user: limits::UPLOADS_PER_USER.default,
            min_bytes_per_sec: limits::UPLOADS_MIN_BYTES_PER_SEC.default,
            deadline_secs: limits::UPLOADS_DEADLINE_SECS.default,
        }
    }
}

impl UploadLimits {
    /// Whether the values are in their ranges; the error names the key.
    pub fn check(&self) -> Result<(), String> {
        limits::UPLOADS_CONCURRENT.check(self.concurrent)?;
        if !(1..=self.concurrent).contains(&self.per_user) {
            return Err(format!(
                "uploads.per_user must be 1 to uploads.concurrent = {}, not {}",
                self.concurrent, self.per_user
            ));
        }
        limits::UPLOADS_MIN_BYTES_PER_SEC.check(self.min_bytes_per_sec)?;
        limits::UPLOADS_DEADLINE_SECS.check(self.deadline_secs)?;
        Ok(())
    }
}

/// Why an upload is not taken now; each says which limit was hit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UploadRefused {
    /// The user has as many uploads going as they may.
    #[error(
        "{user} has {per_user} upload(s) being received or checked (uploads.per_user = {per_user}): send it again \
         once that is answered"
    )]
    PerUser {
        /// Whose.
        user: String,
        /// The limit.
        per_user: usize,
    },
    /// Everyone's uploads take every permit.
    #[error("{0} uploads are being received or checked (uploads.concurrent = {0}): send it again in a moment")]
    Busy(usize),
}

/// Why a body was not read whole; each says which limit was hit.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// Over this many bytes.
    #[error("the body is over {0} bytes")]
    TooLarge(usize),
    /// It arrived slower than the minimum rate.
    #[error(
        "the archive arrived slower than uploads.min_bytes_per_sec = {min}: {received} bytes in {:.1} s",
        elapsed.as_secs_f64()
    )]
    TooSlow {
        /// The minimum rate.
        min: u64,
        /// Bytes received when it was cut.
        received: usize,
        /// How long it had been arriving.
        elapsed: Duration,
    },
    /// It did not arrive whole within the deadline.
    #[error("the archive did not arrive within uploads.deadline_secs = {0} s")]
    Deadline(u64),
    /// The connection failed.
    #[error("reading the body: {0}")]
    Broken(String),
}

/// The upload permits, shared by every request.
#[derive(Debug, Clone)]
pub struct Uploads {
    limits: UploadLimits,
    everyone: Arc<Semaphore>,
    /// Permits held by each user who holds any.
    held: Arc<Mutex<HashMap<String, usize>>>,
}

/// One upload's permit: given back when dropped. Its body is read holding it
/// ([`UploadPermit::read`]), which is what a slow body would hold.
#[derive(Debug)]
pub struct UploadPermit {
    _everyone: OwnedSemaphorePermit,
    user: String,
    held: Arc<Mutex<HashMap<String, usize>>>,
    limits: UploadLimits,
}

impl Drop for UploadPermit {
    fn drop(&mut self) {
        let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = held.get_mut(&self.user) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.user);
            }
        }
    }
}

impl Uploads {
    /// Permits within `limits`.
    pub fn new(limits: UploadLimits) -> Self {
        Uploads { limits, everyone: Arc::new(Semaphore::new(limits.concurrent)), held: Arc::default() }
    }

    /// A permit for an upload by `user`, or which limit refuses one now.
    pub fn acquire(&self, user: &str) -> Result<UploadPermit, UploadRefused> {
        let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let theirs = held.get(user).copied().unwrap_or(0);
        if theirs >= self.limits.per_user {
            return Err(UploadRefused::PerUser { user: user.to_owned(), per_user: self.limits.per_user });
        }
        let everyone =
            Arc::clone(&self.everyone).try_acquire_owned().map_err(|_| UploadRefused::Busy(self.limits.concurrent))?;
        held.insert(user.to_owned(), theirs + 1);
        Ok(UploadPermit {
            _everyone: everyone,
            user: user.to_owned(),
            held: Arc::clone(&self.held),
            limits: self.limits,
        })
    }
}

impl UploadPermit {
    /// `body`, whole: at most `most` bytes, arriving at the minimum rate within the
    /// deadline.
    pub async fn read(&self, body: Body, most: usize) -> Result<Bytes, BodyError> {
        let start = Instant::now();
        let deadline = start + Duration::from_secs(self.limits.deadline_secs);
        let rate = self.limits.min_bytes_per_sec as f64;
        let mut chunks = body.into_data_stream();
        let mut received = Vec::new();
        loop {
            // The bytes so far buy time at the minimum rate: the next must come by then.
            let due = start + RATE_GRACE + Duration::from_secs_f64(received.len() as f64 / rate);
            let Ok(next) = tokio::time::timeout_at(due.min(deadline), chunks.next()).await else {
                return Err(if due < deadline {
                    BodyError::TooSlow {
                        min: self.limits.min_bytes_per_sec,
                        received: received.len(),
                        elapsed: start.elapsed(),
                    }
                } else {
                    BodyError::Deadline(self.limits.deadline_secs)
                });
            };
            match next {
                None => return Ok(Bytes::from(received)),
                Some(Ok(chunk)) if received.len() + chunk.len() > most => return Err(BodyError::TooLarge(most)),
                Some(Ok(chunk)) => received.extend_from_slice(&chunk),
                Some(Err(error)) => return Err(BodyError::Broken(error.to_string())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_holds_at_most_their_share_and_everyone_at_most_the_whole() {
        let uploads = Uploads::new(UploadLimits { concurrent: 3, per_user: 2, ..UploadLimits::default() });
        let first = uploads.acquire("ada").expect("ada's first");
        let _second = uploads.acquire("ada").expect("ada's second");
        let refused = uploads.acquire("ada").expect_err("ada's third");
        assert_eq!(refused, UploadRefused::PerUser { user: "ada".into(), per_user: 2 });
        assert!(refused.to_string().contains("uploads.per_user = 2"), "{refused}");
        let bob = uploads.acquire("bob").expect("bob's, beside ada's");
        let refused = uploads.acquire("cy").expect_err("every permit is taken");
        assert_eq!(refused, UploadRefused::Busy(3));
        assert!(refused.to_string().contains("uploads.concurrent = 3"), "{refused}");
        drop(first);
        let _third = uploads.acquire("ada").expect("ada's first was given back");
        drop(bob);
        assert!(!uploads.held.lock().expect("lock").contains_key("bob"), "a user with none is forgotten");
    }

    #[tokio::test]
    async fn a_body_that_trickles_is_cut_and_one_that_arrives_is_read() {
        let limits = UploadLimits { min_bytes_per_sec: 1 << 10, ..UploadLimits::default() };
        let uploads = Uploads::new(limits);
        let permit = uploads.acquire("ada").expect("a permit");
        let read = permit.read(Body::from(vec![7u8; 5000]), 5000).await.expect("whole");
        assert_eq!(read.len(), 5000);
        let over = permit.read(Body::from(vec![7u8; 5001]), 5000).await.expect_err("too large");
        assert!(matches!(over, BodyError::TooLarge(5000)), "{over}");

        // 2 KiB, then nothing: they buy 2 s at 1 KiB/s, after the second of grace.
        let (sender, mut receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        sender.send(Ok(Bytes::from(vec![7u8; 2048]))).await.expect("send");
        let body = Body::from_stream(futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx)));
        let error = permit.read(body, 1 << 20).await.expect_err("cut");
        let BodyError::TooSlow { received, elapsed, .. } = &error else { panic!("{error}") };
        assert_eq!(*received, 2048);
        assert!(*elapsed >= Duration::from_secs(3), "not before its bytes' time ran out: {elapsed:?}");
        assert!(error.to_string().contains("uploads.min_bytes_per_sec = 1024"), "{error}");
        drop(sender); // Open until the body was cut.
    }

    #[test]
    fn limits_out_of_range_name_their_key() {
        assert!(UploadLimits::default().check().is_ok());
        for (wrong, key) in [
            (UploadLimits { concurrent: 0, ..UploadLimits::default() }, "uploads.concurrent"),
            (UploadLimits { per_user: 3, ..UploadLimits::default() }, "uploads.per_user"),
            (UploadLimits { min_bytes_per_sec: 10, ..UploadLimits::default() }, "uploads.min_bytes_per_sec"),
            (UploadLimits { deadline_secs: 0, ..UploadLimits::default() }, "uploads.deadline_secs"),
        ] {
            assert!(wrong.check().expect_err("out of range").starts_with(key), "{key}");
        }
    }
}
