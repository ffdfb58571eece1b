//! Webhooks: users told of their tournaments' events over HTTP, signed, retried.
//!
//! The ledger writes an event once, in the transaction that makes it happen (its
//! triggers: a tournament finished, a directed tournament concluded). The [`Deliverer`]
//! then fans each event out to its owner's webhooks that asked for its kind, and posts
//! it to each: a JSON body, signed with the webhook's secret, retried with exponential
//! backoff until the receiver answers 2xx or [`WebhookSettings::max_attempts`] have
//! failed. Every attempt's outcome is kept and shown (`GET /api/webhooks/{id}/deliveries`).
//!
//! # Signature
//! `X-Matchfarm-Signature: t=UNIX_SECONDS,v1=HEX` where `HEX` is the HMAC-SHA256, keyed
//! by the webhook's secret, of `UNIX_SECONDS.BODY` ([`sign`]); a receiver recomputes it
//! and refuses old timestamps ([`verify`]).
//!
//! # Where deliveries may go
//! Webhook URLs are the users', so each is a request the farm makes for a stranger. The
//! host is resolved at each attempt, and the request goes to the address checked: never
//! to loopback, private, link-local or other non-public addresses unless the operator
//! allows them ([`WebhookSettings::allow_private_addresses`]; the tests and a farm on one
//! machine do). Redirects are not followed; the answer's body is not read.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use futures_util::StreamExt;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use tokio::sync::watch;

use crate::accounts::same_secret;
use crate::ledger::{Delivery, Ledger, LedgerError, now};
use crate::metrics;
use farm_proto::limits;

/// The events a webhook can ask for.
pub const EVENT_KINDS: &[&str] =
    &[TOURNAMENT_FINISHED, TOURNAMENT_CONCLUDED, BUILD_FAILED, VERSION_VALIDATED, VERSION_REJECTED];
/// A submitted version's build gave no image.
pub const BUILD_FAILED: &str = "build.failed";
/// A submitted version passed validation.
pub const VERSION_VALIDATED: &str = "version.validated";
/// A submitted version failed validation.
pub const VERSION_REJECTED: &str = "version.rejected";
/// A tournament has every result it will have.
pub const TOURNAMENT_FINISHED: &str = "tournament.finished";
/// A directed tournament's director ended it: an SPRT's verdict, a settled ranking, a stop.
pub const TOURNAMENT_CONCLUDED: &str = "tournament.concluded";
/// The header carrying the signature.
pub const SIGNATURE_HEADER: &str = "x-matchfarm-signature";
/// Deliveries taken per sweep.
const SWEEP_BATCH: u32 = 64;

/// How webhooks are delivered (`[webhooks]` in the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookSettings {
    /// Whether URLs may point at loopback, private or link-local addresses (a farm on
    /// one machine, the tests). Off by default: a user's webhook must not reach into
    /// the farm's own network.
    pub allow_private_addresses: bool,
    /// Attempts before a delivery is abandoned.
    pub max_attempts: u32,
    /// The wait before the first retry; each next one doubles it.
    pub first_retry_secs: u64,
    /// The longest wait between attempts.
    pub max_retry_secs: u64,
    /// How long one attempt may take.
    pub timeout_secs: u64,
    /// How often due deliveries are looked for when nothing wakes the deliverer.
    pub sweep_secs: u64,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            allow_private_addresses: false,
            max_attempts: limits::WEBHOOKS_MAX_ATTEMPTS.default,
            first_retry_secs: limits::WEBHOOKS_FIRST_RETRY_SECS.default,
            max_retry_secs: limits::WEBHOOKS_MAX_RETRY_SECS.default,
            timeout_secs: limits::WEBHOOKS_TIMEOUT_SECS.default,
            sweep_secs: limits::WEBHOOKS_SWEEP_SECS.default,
        }
    }
}

impl WebhookSettings {
    /// `Ok` when the settings can work; otherwise which key is wrong.
    pub fn check(&self) -> Result<(), String> {
        limits::WEBHOOKS_MAX_ATTEMPTS.check(self.max_attempts)?;
        limits::WEBHOOKS_TIMEOUT_SECS.check(self.timeout_secs)?;
        limits::WEBHOOKS_SWEEP_SECS.check(self.sweep_secs)?;
        if self.first_retry_secs > self.max_retry_secs {
            return Err("webhooks.first_retry_secs must not be over webhooks.max_retry_secs".to_owned());
        }
        Ok(())
    }

    /// The wait after failed attempt number `attempts` (1, 2, ...).
    pub fn retry_after(&self, attempts: u32) -> u64 {
        let (first, max) = (Duration::from_secs(self.first_retry_secs), Duration::from_secs(self.max_retry_secs));
        farm_runtime::backoff::doubled(first, max, attempts).as_secs()
    }
}

/// A webhook that cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// The URL is not one.
    #[error("url {url:?}: {problem}")]
    Url {
        /// As given.
        url: String,
        /// What is wrong with it.
        problem: String,
    },
    /// An event kind the farm does not send.
    #[error("events: {0:?} is not one of {EVENT_KINDS:?}")]
    Kind(String),
}

/// `url` if a webhook may post to it: `http` or `https`, a host, no credentials, at
/// most [`limits::MAX_WEBHOOK_URL`] bytes, and (for an address given as such) an address it may reach.
pub fn check_url(url: &str, settings: &WebhookSettings) -> Result<reqwest::Url, WebhookError> {
    let refuse =
        |problem: &str| WebhookError::Url { url: url.chars().take(200).collect(), problem: problem.to_owned() };
    if url.len() > limits::MAX_WEBHOOK_URL {
        return Err(refuse(&format!("longer than {} bytes", limits::MAX_WEBHOOK_URL)));
    }
    let parsed = reqwest::Url::parse(url).map_err(|error| refuse(&error.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(refuse("only http and https URLs are posted to"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(refuse("credentials do not belong in a webhook URL; check the signature instead"));
    }
    match parsed.host() {
        None => return Err(refuse("no host")),
        Some(url::Host::Ipv4(address)) if !reachable(IpAddr::V4(address), settings) => {
            return Err(refuse("not a public address (webhooks.allow_private_addresses is off)"));
        }
        Some(url::Host::Ipv6(address)) if !reachable(IpAddr::V6(address), settings) => {
            return Err(refuse("not a public address (webhooks.allow_private_addresses is off)"));
        }
        Some(_) => {}
    }
    Ok(parsed)
}

/// `kinds` checked; none means every kind.
pub fn check_kinds(kinds: Option<Vec<String>>) -> Result<Vec<String>, WebhookError> {
    let Some(kinds) = kinds.filter(|kinds| !kinds.is_empty()) else {
        return Ok(EVENT_KINDS.iter().map(|&kind| kind.to_owned()).collect());
    };
    for kind in &kinds {
        if !EVENT_KINDS.contains(&kind.as_str()) {
            return Err(WebhookError::Kind(kind.clone()));
        }
    }
    let mut kinds = kinds;
    kinds.sort_unstable();
    kinds.dedup();
    Ok(kinds)
}

/// Whether a delivery may go to `address`.
fn reachable(address: IpAddr, settings: &WebhookSettings) -> bool {
    settings.allow_private_addresses || is_public(address)
}

/// Whether `address` is on the public internet: for IPv4, not loopback, private,
/// link-local, shared (CGNAT), documentation, multicast, unspecified or the like; for
/// IPv6, global unicast but documentation, and an address that stands for an IPv4 one
/// ([`ipv4_behind`]) judged by that IPv4 address.
pub fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = ipv4_behind(v6) {
                return is_public(IpAddr::V4(v4));
            }
            // Only global unicast (2000::/3) is routed on the internet. That leaves out
            // loopback, unspecified, IPv4-compatible (::/96, deprecated by RFC 4291, which
            // a stack that still knows them sends over IPv4 to any address), NAT64 for
            // local use (64:ff9b:1::/48, RFC 8215: the operator's own translation), unique
            // local (fc00::/7), link-local (fe80::/10), site-local (fec0::/10, deprecated
            // but still routed within sites) and multicast (ff00::/8).
            let [first, second, ..] = v6.segments();
            (first & 0xe000) == 0x2000 && [first, second] != [0x2001, 0x0db8]
        }
    }
}

/// The IPv4 address an IPv6 `address` reaches, where the network hands it over to
/// IPv4: IPv4-mapped (`::ffff:0:0/96`), NAT64's well-known prefix (`64:ff9b::/96`,
/// RFC 6052) and 6to4 (`2002::/16`, RFC 3056). Judged by that address rather than
/// refused whole: on an IPv6-only network with DNS64, every IPv4-only receiver resolves
/// to `64:ff9b::/96`.
fn ipv4_behind(address: Ipv6Addr) -> Option<Ipv4Addr> {
    let ipv4 = |high: u16, low: u16| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    match address.segments() {
        [0, 0, 0, 0, 0, 0xffff, high, low] | [0x64, 0xff9b, 0, 0, 0, 0, high, low] | [0x2002, high, low, ..] => {
            Some(ipv4(high, low))
        }
        _ => None,
    }
}

/// The signature header's value for `body` sent at `timestamp`.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", hex::encode(mac(secret, timestamp, body)))
}

fn mac(secret: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().to_vec()
}

/// Whether `header` is a signature of `body` by `secret`, made at most `tolerance`
/// seconds from `now`: what a receiver checks.
pub fn verify(secret: &str, header: &str, body: &[u8], now: i64, tolerance: i64) -> bool {
    let mut timestamp = None;
    let mut given = None;
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => given = Some(value),
            _ => {}
        }
    }
    let (Some(timestamp), Some(given)) = (timestamp, given) else { return false };
    if (now - timestamp).abs() > tolerance {
        return false;
    }
    same_secret(given, &hex::encode(mac(secret, timestamp, body)))
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// The receiver answered 2xx.
    Delivered(String),
    /// It did not; the text says what happened.
    Failed(String),
}

/// Fans events out and delivers them, until stopped.
pub struct Deliverer {
    ledger: Ledger,
    settings: WebhookSettings,
}

impl Deliverer {
    /// A deliverer of `ledger`'s events.
    pub fn new(ledger: Ledger, settings: WebhookSettings) -> Self {
        Deliverer { ledger, settings }
    }

    /// Delivers until `stop` turns true: at once whenever answers are `recorded` (a
    /// tournament may have finished), and every `sweep_secs` (retries come due, a
    /// director concluded). Only the ledger failing ends it early.
    pub async fn run(
        &self,
        mut recorded: watch::Receiver<u64>,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), LedgerError> {
        loop {
            if *stop.borrow() {
                return Ok(());
            }
            self.sweep().await?;
            tokio::select! {
                changed = recorded.changed() => if changed.is_err() {
                    // No recorder any more: the timer alone from now on.
                    recorded = watch::channel(0).1;
                },
                () = tokio::time::sleep(Duration::from_secs(self.settings.sweep_secs)) => {}
                _ = stop.wait_for(|stop| *stop) => return Ok(()),
            }
        }
    }

    /// Fans out new events, then attempts every delivery due now; returns how many
    /// were attempted.
    pub async fn sweep(&self) -> Result<usize, LedgerError> {
        self.ledger.fan_out_events().await?;
        let due = self.ledger.due_deliveries(now(), SWEEP_BATCH).await?;
        let count = due.len();
        let settings = self.settings;
        let mut attempts = futures_util::stream::iter(due)
            .map(|delivery| async move {
                let attempt = attempt(&delivery, &settings).await;
                (delivery, attempt)
            })
            .buffer_unordered(limits::WEBHOOK_DELIVERIES_AT_ONCE);
        while let Some((delivery, attempt)) = attempts.next().await {
            let (delivered, outcome) = match attempt {
                Attempt::Delivered(outcome) => (true, outcome),
                Attempt::Failed(outcome) => (false, outcome),
            };
            let attempts = delivery.attempts + 1;
            let next_at =
                (!delivered && attempts < settings.max_attempts).then(|| now() + settings.retry_after(attempts) as i64);
            let state = if delivered {
                "delivered"
            } else if next_at.is_some() {
                "retrying"
            } else {
                "abandoned"
            };
            metrics::WEBHOOK_ATTEMPTS.with_label_values(&[state]).inc();
            if !delivered {
                tracing::info!(webhook = %delivery.webhook_id, event = delivery.event_id, attempts, %outcome, "webhook delivery failed");
            }
            self.ledger.attempted(delivery.webhook_id, delivery.event_id, delivered, next_at, outcome).await?;
        }
        Ok(count)
    }
}

/// One attempt at `delivery`.
async fn attempt(delivery: &Delivery, settings: &WebhookSettings) -> Attempt {
    let url = match check_url(&delivery.url, settings) {
        Ok(url) => url,
        Err(error) => return Attempt::Failed(error.to_string()),
    };
    let Some(host) = url.host_str().map(str::to_owned) else { return Attempt::Failed("no host".to_owned()) };
    let port = url.port_or_known_default().unwrap_or(80);
    let timeout = Duration::from_secs(settings.timeout_secs);
    let lookup_host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    let addresses: Vec<SocketAddr> =
        match tokio::time::timeout(timeout, tokio::net::lookup_host((lookup_host.as_str(), port))).await {
            Ok(Ok(addresses)) => addresses.collect(),
            Ok(Err(error)) => return Attempt::Failed(format!("resolving {host}: {error}")),
            Err(_) => return Attempt::Failed(format!("resolving {host} took over {timeout:?}")),
        };
    let Some(address) = addresses.iter().copied().find(|address| reachable(address.ip(), settings)) else {
        return Attempt::Failed(format!(
            "{host} resolves to no public address (webhooks.allow_private_addresses is off)"
        ));
    };
    // The request goes to the address just checked, not to a second lookup's.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .no_proxy()
        .resolve(&lookup_host, address)
        .build();
    let client = match client {
        Ok(client) => client,
        Err(error) => return Attempt::Failed(format!("making the request: {error}")),
    };
    let body = delivery.body.clone().into_bytes();
    let signature = sign(&delivery.secret, now(), &body);
    let sent = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::USER_AGENT, "matchfarm-webhooks")
        .header(SIGNATURE_HEADER, signature)
        .header("x-matchfarm-event", &delivery.kind)
        .header("x-matchfarm-delivery", format!("{}-{}", delivery.webhook_id, delivery.event_id))
        .body(body)
        .send()
        .await;
    match sent {
        Ok(response) if response.status().is_success() => Attempt::Delivered(response.status().to_string()),
        Ok(response) => Attempt::Failed(format!("answered {}", response.status())),
        Err(error) if error.is_timeout() => Attempt::Failed(format!("no answer within {timeout:?}")),
        Err(error) => Attempt::Failed(format!("{error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_and_tampering_is_caught() {
        let body = br#"{"event":{"id":1}}"#;
        let header = sign("whsec_1", 1_700_000_000, body);
        assert!(header.starts_with("t=1700000000,v1="), "{header}");
        assert!(verify("whsec_1", &header, body, 1_700_000_100, 300));
        assert!(!verify("whsec_2", &header, body, 1_700_000_100, 300), "another secret");
        assert!(!verify("whsec_1", &header, br#"{"event":{"id":2}}"#, 1_700_000_100, 300), "another body");
        assert!(!verify("whsec_1", &header, body, 1_700_001_000, 300), "too old");
        let moved = header.replace("t=1700000000", "t=1700000050");
        assert!(!verify("whsec_1", &moved, body, 1_700_000_100, 300), "the timestamp is signed");
        assert!(!verify("whsec_1", "v1=00", body, 1_700_000_100, 300));
    }

    #[test]
    fn backoff_doubles_up_to_its_ceiling() {
        let settings = WebhookSettings { first_retry_secs: 10, max_retry_secs: 100, ..WebhookSettings::default() };
        let waits: Vec<u64> = (1..=6).map(|attempt| settings.retry_after(attempt)).collect();
        assert_eq!(waits, [10, 20, 40, 80, 100, 100]);
        assert_eq!(settings.retry_after(200), 100);
        assert!(WebhookSettings { first_retry_secs: 200, ..settings }.check().is_err());
    }

    #[test]
    fn urls_are_checked_and_private_addresses_refused_unless_allowed() {
        let closed = WebhookSettings::default();
        let open = WebhookSettings { allow_private_addresses: true, ..closed };
        assert!(check_url("https://hooks.example.com/matchfarm?x=1", &closed).is_ok());
        for url in ["http://127.0.0.1:9/", "http://10.1.2.3/", "http://[::1]/", "http://169.254.169.254/latest"] {
            let error = check_url(url, &closed).expect_err(url);
            assert!(error.to_string().contains("not a public address"), "{error}");
            assert!(check_url(url, &open).is_ok(), "{url}");
        }
        for (url, problem) in [
            ("ftp://example.com/", "only http and https"),
            ("https://user:pw@example.com/", "credentials"),
            ("not a url", "relative URL"),
        ] {
            let error = check_url(url, &open).expect_err(url);
            assert!(error.to_string().contains(problem), "{url}: {error}");
        }
        let long = format!("https://example.com/{}", "a".repeat(limits::MAX_WEBHOOK_URL));
        assert!(check_url(&long, &open).expect_err("long").to_string().contains("longer than"));
    }

    #[test]
    fn public_addresses_are_told_from_the_others() {
        for public in ["1.1.1.1", "8.8.4.4", "2606:4700::1111"] {
            assert!(is_public(public.parse().expect("address")), "{public}");
        }
        for private in
            ["127.0.0.2", "192.168.1.1", "172.16.0.1", "100.64.0.1", "0.0.0.0", "fd00::1", "fe80::1", "::ffff:10.0.0.1"]
        {
            assert!(!is_public(private.parse().expect("address")), "{private}");
        }
    }

    /// Each IPv6 prefix that stands for IPv4 addresses is judged by the address it
    /// holds; the deprecated and local-use ones are refused whatever they hold.
    #[test]
    fn ipv6_addresses_that_reach_ipv4_are_judged_by_it_and_the_deprecated_prefixes_refused() {
        let cases: &[(&str, bool)] = &[
            // IPv4-mapped.
            ("::ffff:1.1.1.1", true),
            ("::ffff:169.254.169.254", false),
            // NAT64's well-known prefix: 1.1.1.1, then 127.0.0.1, 10.0.0.1 and 169.254.169.254.
            ("64:ff9b::101:101", true),
            ("64:ff9b::7f00:1", false),
            ("64:ff9b::10.0.0.1", false),
            ("64:ff9b::a9fe:a9fe", false),
            // Beyond its /96 it is no NAT64 address, nor global unicast.
            ("64:ff9b:0:1::101:101", false),
            // NAT64 for local use: the operator's, whatever it holds.
            ("64:ff9b:1::101:101", false),
            // 6to4: 1.1.1.1 and 8.8.8.8, then 127.0.0.1, 192.168.0.1 and 100.64.0.1.
            ("2002:101:101::1", true),
            ("2002:808:808:1::", true),
            ("2002:7f00:1::1", false),
            ("2002:c0a8:1::1", false),
            ("2002:6440:1::", false),
            // IPv4-compatible: refused whatever it holds, a public address too.
            ("::1.1.1.1", false),
            ("::10.0.0.1", false),
            ("::127.0.0.1", false),
            ("::2", false),
            // Site-local, across its /10; and the global unicast beside it.
            ("fec0::1", false),
            ("feff:ffff::1", false),
            ("2a00:1450::1", true),
            ("2001:db8::1", false),
            ("3fff:ffff::1", true),
            ("4000::1", false),
        ];
        for &(address, public) in cases {
            assert_eq!(is_public(address.parse().expect("address")), public, "{address}");
        }
        let closed = WebhookSettings::default();
        for url in
            ["http://[64:ff9b::7f00:1]:8080/", "http://[2002:a00:1::1]/", "http://[::a00:1]/", "http://[fec0::1]/"]
        {
            let error = check_url(url, &closed).expect_err(url);
            assert!(error.to_string().contains("not a public address"), "{url}: {error}");
        }
        assert!(check_url("http://[64:ff9b::101:101]/", &closed).is_ok());
    }

    #[test]
    fn kinds_default_to_all_and_unknown_ones_are_refused() {
        assert_eq!(check_kinds(None).expect("all"), EVENT_KINDS);
        assert_eq!(
            check_kinds(Some(vec![TOURNAMENT_FINISHED.into(), TOURNAMENT_FINISHED.into()])).expect("one"),
            [TOURNAMENT_FINISHED]
        );
        assert_eq!(check_kinds(Some(vec!["match.played".into()])), Err(WebhookError::Kind("match.played".into())));
    }
}
