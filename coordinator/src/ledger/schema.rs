//! The ledger's tables, indexes and triggers, and what brings a ledger written by an
//! earlier build up to date.

use rusqlite::Connection;

/// The `user_version` from which `job_counts` is kept by triggers.
const COUNTED_VERSION: i64 = 1;
/// The `user_version` from which published jobs carry their lease
/// (`published_seq`, `lease_secs`).
const LEASED_VERSION: i64 = 2;
/// The `user_version` from which jobs count the deliveries their workers gave back
/// for outages (`returns`) and their fresh starts after a dead letter (`restarts`).
const RETURNS_VERSION: i64 = 3;
/// The `user_version` from which tournaments say whether their director may still
/// schedule (`open`) and how they ended when it stopped them (`conclusion`).
const DIRECTED_VERSION: i64 = 4;
/// The `user_version` from which tournaments have an `owner` and a `priority`
/// ([`crate::accounts`], [`crate::fair_share`]).
const OWNED_VERSION: i64 = 5;
/// The `user_version` from which published audits are leased (`published_at`,
/// `publications`).
const AUDIT_LEASED_VERSION: i64 = 6;
/// The `user_version` from which bots say whether other users' tournaments may enter
/// their validated versions (`public`).
const PUBLIC_BOTS_VERSION: i64 = 7;
/// The `user_version` from which jobs say when they were first published
/// (`published_ms`): what a result's latency is measured from.
const PUBLISHED_TIME_VERSION: i64 = 8;
/// The `user_version` from which jobs say whether they hold a failure (`failure`), so
/// that a tournament's failures are listed from an index rather than a pass over all
/// its jobs.
const FAILURE_FLAG_VERSION: i64 = 9;
/// The lease given to jobs a ledger from before leases had published: the workers'
/// default cap on a match, twice (see [`super::Ledger::mark_running`]).
const LEGACY_LEASE_SECS: i64 = 2 * 20 * 60;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tournaments (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    game TEXT NOT NULL,
    definition TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    jobs INTEGER NOT NULL,
    duplicates INTEGER NOT NULL DEFAULT 0,
    -- 1 while its director may still add or cancel jobs; then
    -- why it stopped, if it stopped before its schedule ran out.
    open INTEGER NOT NULL DEFAULT 0,
    conclusion TEXT,
    -- The user who submitted it (crate::accounts::OPERATOR for the configured token),
    -- and where it stands among that user's tournaments when jobs are published.
    owner TEXT NOT NULL DEFAULT 'operator',
    priority INTEGER NOT NULL DEFAULT 0
);
-- The tournaments' pages (crate::ledger::Ledger::tournaments_after), newest first: a
-- page reads its rows in order instead of sorting the whole table.
CREATE INDEX IF NOT EXISTS tournaments_by_creation ON tournaments(created_at DESC, id);
-- The key of the tokens deliveries carry (crate::vouch), made with the ledger:
-- SQLite's randomblob reads the operating system's random source.
-- A ladder's season: from when no new version enters it, and the
-- tournament of its finals.
CREATE TABLE IF NOT EXISTS seasons (
    ladder_id TEXT PRIMARY KEY REFERENCES tournaments(id),
    frozen_at INTEGER,
    finals_id TEXT REFERENCES tournaments(id)
);
CREATE TABLE IF NOT EXISTS answer_key (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    key BLOB NOT NULL CHECK (length(key) = 32)
);
INSERT OR IGNORE INTO answer_key (id, key) VALUES (1, randomblob(32));
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    tournament_id TEXT NOT NULL REFERENCES tournaments(id),
    position INTEGER NOT NULL,
    seats TEXT NOT NULL,
    map INTEGER NOT NULL,
    repetition INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    reason TEXT,
    -- When it was last published, in publishing order (1, 2, ...), and the lease it
    -- was published with; NULL while pending.
    published_seq INTEGER,
    lease_secs INTEGER,
    -- When it was first published, in milliseconds since the epoch (NULL while pending,
    -- and for jobs published before the column): the start of its latency.
    published_ms INTEGER,
    -- 1 when it failed, or a bot failed in it (a seat whose status is not ok): kept by
    -- the triggers after the migrations, listed by jobs_with_failures.
    failure INTEGER NOT NULL DEFAULT 0,
    -- Deliveries of its current publication given back for outages, and how often a
    -- dead letter made it start over (crate::ledger::Recorded::Restarted).
    returns INTEGER NOT NULL DEFAULT 0,
    restarts INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state);
CREATE INDEX IF NOT EXISTS jobs_by_tournament ON jobs(tournament_id, state, position);
-- A tournament's jobs in schedule order, a page at a time (crate::ledger::Ledger::export_page).
CREATE INDEX IF NOT EXISTS jobs_in_order ON jobs(tournament_id, position);
-- How many of a tournament's jobs are in each state, kept by the triggers below in
-- the same transaction as the change, so progress is read in constant time however
-- many jobs a tournament has (counting a million-job tournament's rows per request
-- made the API slow while one was being inserted).
CREATE TABLE IF NOT EXISTS job_counts (
    tournament_id TEXT NOT NULL,
    state TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (tournament_id, state)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS job_counts_on_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO job_counts (tournament_id, state, count) VALUES (NEW.tournament_id, NEW.state, 1)
        ON CONFLICT (tournament_id, state) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER IF NOT EXISTS job_counts_on_state AFTER UPDATE OF state ON jobs WHEN OLD.state <> NEW.state BEGIN
    UPDATE job_counts SET count = count - 1 WHERE tournament_id = OLD.tournament_id AND state = OLD.state;
    INSERT INTO job_counts (tournament_id, state, count) VALUES (NEW.tournament_id, NEW.state, 1)
        ON CONFLICT (tournament_id, state) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER IF NOT EXISTS job_counts_on_delete AFTER DELETE ON jobs BEGIN
    UPDATE job_counts SET count = count - 1 WHERE tournament_id = OLD.tournament_id AND state = OLD.state;
END;
CREATE TABLE IF NOT EXISTS results (
    job_id TEXT PRIMARY KEY REFERENCES jobs(job_id),
    envelope TEXT NOT NULL,
    recorded_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS result_seats (
    job_id TEXT NOT NULL REFERENCES jobs(job_id),
    seat INTEGER NOT NULL,
    bot INTEGER,
    score INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    status TEXT NOT NULL,
    timeouts INTEGER NOT NULL,
    PRIMARY KEY (job_id, seat)
);
-- Each worker's record: what it played and what went wrong with it
-- (crate::audits). A quarantined one has its reason.
CREATE TABLE IF NOT EXISTS workers (
    worker_id TEXT PRIMARY KEY,
    instance TEXT,
    matches INTEGER NOT NULL DEFAULT 0,
    faults INTEGER NOT NULL DEFAULT 0,
    audits INTEGER NOT NULL DEFAULT 0,
    mismatches INTEGER NOT NULL DEFAULT 0,
    quarantined TEXT,
    last_seen INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS worker_bot_failures (
    worker_id TEXT NOT NULL REFERENCES workers(worker_id),
    status TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (worker_id, status)
);
-- Audits of stored replays: pending (to publish), published, then a verdict
-- (confirmed, mismatch, skipped). `document` is the audit job as published. A
-- published audit is leased (crate::audits): when it was last published and how often.
CREATE TABLE IF NOT EXISTS audits (
    job_id TEXT PRIMARY KEY REFERENCES jobs(job_id),
    played_by TEXT NOT NULL,
    state TEXT NOT NULL,
    audited_by TEXT,
    detail TEXT,
    document TEXT NOT NULL,
    published_at INTEGER,
    publications INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS audits_by_state ON audits(state);
-- Users (crate::accounts) and their tokens, kept as hashes only.
CREATE TABLE IF NOT EXISTS users (
    name TEXT PRIMARY KEY,
    admin INTEGER NOT NULL,
    share INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    created_by TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY,
    user_name TEXT NOT NULL REFERENCES users(name),
    hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX IF NOT EXISTS tokens_by_user ON tokens(user_name);
-- What users are told of through their webhooks: an event once per kind and subject, then
-- one delivery of it to each of its owner's webhooks that asked for its kind.
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    owner TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    -- 1 once its deliveries are made.
    fanned INTEGER NOT NULL DEFAULT 0,
    UNIQUE (kind, subject)
);
CREATE INDEX IF NOT EXISTS events_to_fan_out ON events(fanned);
CREATE TABLE IF NOT EXISTS webhooks (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    url TEXT NOT NULL,
    kinds TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    -- Events up to this one were before it: it is sent the later ones.
    after_event INTEGER NOT NULL,
    removed_at INTEGER
);
CREATE TABLE IF NOT EXISTS deliveries (
    webhook_id TEXT NOT NULL REFERENCES webhooks(id),
    event_id INTEGER NOT NULL REFERENCES events(id),
    body TEXT NOT NULL,
    -- pending (not tried yet) or retrying (next_at says when), delivered, abandoned (every
    -- attempt failed) or cancelled (its webhook was removed).
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER NOT NULL,
    -- What the last attempt got: a status line or why it got none.
    last_outcome TEXT,
    PRIMARY KEY (webhook_id, event_id)
);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries(state, next_at);
-- Bots submitted by their authors (crate::ledger::bots): each upload is a version.
CREATE TABLE IF NOT EXISTS bots (
    name TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    game TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    -- 1 when other users' tournaments may enter its validated versions (its owner's
    -- and admins' always may).
    public INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS versions (
    bot TEXT NOT NULL REFERENCES bots(name),
    version INTEGER NOT NULL,
    -- building, build_failed, validating, validated or rejected.
    state TEXT NOT NULL,
    layout TEXT NOT NULL,
    source_key TEXT NOT NULL,
    log_key TEXT NOT NULL,
    -- The ladder it enters once validated.
    ladder TEXT,
    -- 1 once its build job is in farm.builds.
    build_published INTEGER NOT NULL DEFAULT 0,
    image TEXT,
    validation TEXT,
    reason TEXT,
    submitted_by TEXT NOT NULL,
    submitted_at INTEGER NOT NULL,
    decided_at INTEGER,
    PRIMARY KEY (bot, version)
);
CREATE INDEX IF NOT EXISTS versions_by_state ON versions(state);
CREATE INDEX IF NOT EXISTS versions_by_uploader ON versions(submitted_by, submitted_at);
CREATE INDEX IF NOT EXISTS versions_by_validation ON versions(validation);
-- Short series one user asked for between two bots' validated versions.
CREATE TABLE IF NOT EXISTS challenges (
    tournament_id TEXT PRIMARY KEY,
    challenger TEXT NOT NULL,
    bot TEXT NOT NULL,
    opponent TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS challenges_by_challenger ON challenges(challenger, created_at);
-- A version decided: its owner's webhooks hear of it.
CREATE TRIGGER IF NOT EXISTS version_decided AFTER UPDATE OF state ON versions
    WHEN OLD.state <> NEW.state AND NEW.state IN ('build_failed', 'validated', 'rejected') BEGIN
    INSERT OR IGNORE INTO events (kind, subject, owner, created_at)
        SELECT CASE NEW.state WHEN 'build_failed' THEN 'build.failed' WHEN 'validated' THEN 'version.validated'
                   ELSE 'version.rejected' END,
               NEW.bot || '/' || NEW.version, b.owner, unixepoch()
        FROM bots b WHERE b.name = NEW.bot;
END;
";

/// What needs the columns the migrations add: made after them, whichever way they came.
const AFTER_MIGRATIONS: &str = "
CREATE INDEX IF NOT EXISTS jobs_by_publication ON jobs(published_seq);
CREATE INDEX IF NOT EXISTS jobs_by_lease ON jobs(state, lease_secs, published_seq);
CREATE INDEX IF NOT EXISTS tournaments_by_owner ON tournaments(owner, open);
-- A tournament's jobs holding a failure, in schedule order: what its page lists under
-- failures, found without a pass over every job (which took seconds per request on a
-- million-job round robin, holding the reader the publisher needs).
CREATE INDEX IF NOT EXISTS jobs_with_failures ON jobs(tournament_id, position) WHERE failure = 1;
CREATE TRIGGER IF NOT EXISTS failure_by_seat AFTER INSERT ON result_seats WHEN NEW.status != 'ok' BEGIN
    UPDATE jobs SET failure = 1 WHERE job_id = NEW.job_id AND failure = 0;
END;
CREATE TRIGGER IF NOT EXISTS failure_by_state AFTER UPDATE OF state ON jobs
    WHEN (NEW.state = 'failed') <> (OLD.state = 'failed') BEGIN
    -- A job retried after it failed has no seats left (the retry removes them).
    UPDATE jobs SET failure = (NEW.state = 'failed') WHERE job_id = NEW.job_id;
END;
-- A tournament is finished when its director may add nothing (open = 0) and no job is
-- pending or running (crate::ledger::Progress::finished): checked when a job's state
-- becomes final and when `open` clears, so its event is written once, in the
-- transaction that finished it.
CREATE TRIGGER IF NOT EXISTS finished_by_job AFTER UPDATE OF state ON jobs
    WHEN NEW.state IN ('done', 'failed', 'cancelled') BEGIN
    INSERT OR IGNORE INTO events (kind, subject, owner, created_at)
        SELECT 'tournament.finished', t.id, t.owner, unixepoch() FROM tournaments t
        WHERE t.id = NEW.tournament_id AND t.open = 0 AND NOT EXISTS (
            SELECT 1 FROM jobs j WHERE j.tournament_id = t.id AND j.state IN ('pending', 'running'));
END;
CREATE TRIGGER IF NOT EXISTS finished_by_close AFTER UPDATE OF open ON tournaments
    WHEN OLD.open <> 0 AND NEW.open = 0 BEGIN
    INSERT OR IGNORE INTO events (kind, subject, owner, created_at)
        SELECT 'tournament.finished', NEW.id, NEW.owner, unixepoch() WHERE NOT EXISTS (
            SELECT 1 FROM jobs j WHERE j.tournament_id = NEW.id AND j.state IN ('pending', 'running'));
END;
-- A directed tournament's director ended it (an SPRT's verdict, a settled ranking, a
-- stop): crate::ledger::Ledger::conclude.
CREATE TRIGGER IF NOT EXISTS concluded AFTER UPDATE OF conclusion ON tournaments
    WHEN OLD.conclusion IS NULL AND NEW.conclusion IS NOT NULL BEGIN
    INSERT OR IGNORE INTO events (kind, subject, owner, created_at)
        VALUES ('tournament.concluded', NEW.id, NEW.owner, unixepoch());
END;
";

/// Creates what is missing of the schema in `connection` and migrates what an earlier
/// build wrote.
pub(super) fn apply(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch(SCHEMA)?;
    // A ledger written before job_counts existed: count its jobs once.
    let version: i64 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version < COUNTED_VERSION {
        connection.execute_batch(&format!(
            "BEGIN;
             DELETE FROM job_counts;
             INSERT INTO job_counts (tournament_id, state, count)
                 SELECT tournament_id, state, count(*) FROM jobs GROUP BY tournament_id, state;
             PRAGMA user_version = {COUNTED_VERSION};
             COMMIT;"
        ))?;
    }
    if version < LEASED_VERSION {
        // A ledger from before leases: its running jobs are leased as if just published.
        let lease_running = format!(
            "UPDATE jobs SET published_seq = 0, lease_secs = {LEGACY_LEASE_SECS}
                 WHERE state = 'running' AND published_seq IS NULL;"
        );
        let columns = [("published_seq", "INTEGER"), ("lease_secs", "INTEGER")];
        add_job_columns(connection, LEASED_VERSION, &columns, &lease_running)?;
    }
    if version < RETURNS_VERSION {
        let columns = [("returns", "INTEGER NOT NULL DEFAULT 0"), ("restarts", "INTEGER NOT NULL DEFAULT 0")];
        add_job_columns(connection, RETURNS_VERSION, &columns, "")?;
    }
    if version < DIRECTED_VERSION {
        let columns = [("open", "INTEGER NOT NULL DEFAULT 0"), ("conclusion", "TEXT")];
        add_columns(connection, "tournaments", DIRECTED_VERSION, &columns, "")?;
    }
    if version < OWNED_VERSION {
        let columns = [("owner", "TEXT NOT NULL DEFAULT 'operator'"), ("priority", "INTEGER NOT NULL DEFAULT 0")];
        add_columns(connection, "tournaments", OWNED_VERSION, &columns, "")?;
    }
    if version < AUDIT_LEASED_VERSION {
        // Audits published before leases: leased as if just published.
        let columns = [("published_at", "INTEGER"), ("publications", "INTEGER NOT NULL DEFAULT 0")];
        let lease_published =
            "UPDATE audits SET published_at = unixepoch(), publications = 1 WHERE state = 'published';";
        add_columns(connection, "audits", AUDIT_LEASED_VERSION, &columns, lease_published)?;
    }
    if version < PUBLIC_BOTS_VERSION {
        // Bots from before: private, as their owners left them.
        add_columns(connection, "bots", PUBLIC_BOTS_VERSION, &[("public", "INTEGER NOT NULL DEFAULT 0")], "")?;
    }
    if version < PUBLISHED_TIME_VERSION {
        add_job_columns(connection, PUBLISHED_TIME_VERSION, &[("published_ms", "INTEGER")], "")?;
    }
    if version < FAILURE_FLAG_VERSION {
        let flag_failures = "UPDATE jobs SET failure = 1 WHERE state = 'failed' OR EXISTS (
            SELECT 1 FROM result_seats s WHERE s.job_id = jobs.job_id AND s.status != 'ok');";
        add_job_columns(connection, FAILURE_FLAG_VERSION, &[("failure", "INTEGER NOT NULL DEFAULT 0")], flag_failures)?;
    }
    connection.execute_batch(AFTER_MIGRATIONS)?;
    Ok(())
}

/// [`add_columns`] to `jobs`.
fn add_job_columns(
    connection: &Connection,
    version: i64,
    columns: &[(&str, &str)],
    then: &str,
) -> rusqlite::Result<()> {
    add_columns(connection, "jobs", version, columns, then)
}

/// Brings the ledger to `version` in one transaction: adds `columns` (name, type) to
/// `table` unless they are there (a ledger made by this build has them from [`SCHEMA`];
/// they come together, so the first one tells), then runs the statements `then`.
fn add_columns(
    connection: &Connection,
    table: &str,
    version: i64,
    columns: &[(&str, &str)],
    then: &str,
) -> rusqlite::Result<()> {
    let present =
        connection.prepare("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2")?.exists([table, columns[0].0])?;
    let add: String = if present {
        String::new()
    } else {
        columns.iter().map(|(name, kind)| format!("ALTER TABLE {table} ADD COLUMN {name} {kind}; ")).collect()
    };
    connection.execute_batch(&format!("BEGIN; {add}{then} PRAGMA user_version = {version}; COMMIT;"))
}
