//! What makes a worker's answer believable, on the broker's word and the coordinator's
//! own, never on the answer's: who sent it is the `user_id` RabbitMQ vouches for (it
//! refuses a message whose `user_id` is not the user its connection signed in as), and
//! that its sender was given what it answers is shown by a token only the coordinator
//! can make, which came with the job, audit or build and comes back with the answer.
//!
//! A token is the HMAC-SHA256 of what it is for (`job`, `audit` or `build` and its id)
//! under the ledger's answer key, made when the coordinator first opens a ledger. Job
//! ids are public; tokens travel only in deliveries, which go to one worker at a time.
//! A worker that was handed a job holds its token; one that was not cannot answer it.

use hmac::{Hmac, Mac};
use lapin::BasicProperties;
use sha2::Sha256;

/// What a token is for: a match job, an audit of a match, or a bot's build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answerable<'a> {
    /// The match job with this id (its result and its returned-delivery notices).
    Job(&'a str),
    /// The audit of the match with this job id (its verdict).
    Audit(&'a str),
    /// The build of a bot's version (its report).
    Build {
        /// The bot.
        bot: &'a str,
        /// The version.
        version: u32,
    },
}

impl Answerable<'_> {
    fn message(&self) -> String {
        // A NUL cannot be in an id or a bot's name: no two things share a message.
        match self {
            Answerable::Job(job_id) => format!("job\0{job_id}"),
            Answerable::Audit(job_id) => format!("audit\0{job_id}"),
            Answerable::Build { bot, version } => format!("build\0{bot}\0{version}"),
        }
    }
}

/// The ledger's answer key: makes the tokens deliveries carry and checks those that
/// answers bring back.
#[derive(Clone)]
pub struct AnswerKey {
    key: [u8; 32],
}

impl std::fmt::Debug for AnswerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AnswerKey(..)")
    }
}

impl AnswerKey {
    /// The key of these 32 bytes.
    pub fn new(key: [u8; 32]) -> Self {
        AnswerKey { key }
    }

    fn mac(&self, what: Answerable<'_>) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(what.message().as_bytes());
        mac
    }

    /// The token a delivery of `what` carries, in lower-case hex.
    pub fn token(&self, what: Answerable<'_>) -> String {
        hex::encode(self.mac(what).finalize().into_bytes())
    }

    /// Whether `token` is `what`'s (compared in constant time).
    pub fn holds(&self, what: Answerable<'_>, token: &str) -> bool {
        hex::decode(token).is_ok_and(|bytes| self.mac(what).verify_slice(&bytes).is_ok())
    }
}

/// Why an answer is not believed: a metric's `reason` label and what the log says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forgery {
    /// It names no sender the broker vouches for (no `user_id`).
    Unsigned,
    /// It says it is from another worker than the broker user that sent it.
    Impostor,
    /// Its token is not that of what it answers: its sender was never given it.
    NotHeld,
}

impl Forgery {
    /// The `reason` label of `farm_coordinator_forged_answers_total`.
    pub fn label(self) -> &'static str {
        match self {
            Forgery::Unsigned => "unsigned",
            Forgery::Impostor => "impostor",
            Forgery::NotHeld => "not_held",
        }
    }
}

/// `Ok` when the broker vouches that the delivery with `properties` was sent by the
/// worker `named` in its body.
pub fn vouched_for(properties: &BasicProperties, named: &str) -> Result<(), Forgery> {
    match farm_runtime::queue::sender(properties) {
        None => Err(Forgery::Unsigned),
        Some(sender) if sender == named => Ok(()),
        Some(_) => Err(Forgery::Impostor),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lapin::types::ShortString;

    #[test]
    fn a_token_holds_for_what_it_was_made_for_and_nothing_else() {
        let key = AnswerKey::new([7; 32]);
        let token = key.token(Answerable::Job("j-1"));
        assert_eq!(token.len(), 64);
        assert!(key.holds(Answerable::Job("j-1"), &token));
        for other in [Answerable::Job("j-2"), Answerable::Audit("j-1"), Answerable::Build { bot: "j-1", version: 0 }] {
            assert!(!key.holds(other, &token), "{other:?}");
        }
        assert!(!AnswerKey::new([8; 32]).holds(Answerable::Job("j-1"), &token), "another ledger's key");
        for forged in ["", "00", "not hex", &token[..62]] {
            assert!(!key.holds(Answerable::Job("j-1"), forged), "{forged:?}");
        }
        let build = Answerable::Build { bot: "ada", version: 12 };
        assert_ne!(key.token(build), key.token(Answerable::Build { bot: "ada1", version: 2 }));
    }

    #[test]
    fn only_the_sender_the_broker_names_is_believed() {
        let signed = BasicProperties::default().with_user_id(ShortString::from("w-1"));
        assert_eq!(vouched_for(&signed, "w-1"), Ok(()));
        assert_eq!(vouched_for(&signed, "w-2"), Err(Forgery::Impostor));
        assert_eq!(vouched_for(&BasicProperties::default(), "w-1"), Err(Forgery::Unsigned));
    }
}
