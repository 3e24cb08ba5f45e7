-- People memory: what the nightly summary learned about each person, per (chat, person),
-- and an audit row for every change to a fact (learned, forgotten, crowded out).
-- Times are unix seconds (UTC) as REAL; chat days are ISO dates ("2026-03-05") as TEXT.

CREATE TABLE person_facts (
    id          INTEGER PRIMARY KEY,  -- the fact id /facts shows and /forget takes
    chat_key    TEXT    NOT NULL,     -- a fact never leaves the chat it was learned in
    user_id     TEXT    NOT NULL,     -- the platform's sender id
    user_name   TEXT    NOT NULL,     -- the display name the person wrote under that day
    fact        TEXT    NOT NULL,
    normalised  TEXT    NOT NULL,     -- case and width folded, no whitespace: the same fact once
    source_day  TEXT    NOT NULL
                CHECK (source_day GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
    created_at  REAL    NOT NULL,
    is_deleted  INTEGER NOT NULL DEFAULT 0 CHECK (is_deleted IN (0, 1)),
    deleted_at  REAL,
    deleted_by  TEXT,
    CHECK ((is_deleted = 0 AND deleted_at IS NULL AND deleted_by IS NULL)
        OR (is_deleted = 1 AND deleted_at IS NOT NULL AND deleted_by IS NOT NULL))
);

-- The same live fact is stored once per (chat, person).
CREATE UNIQUE INDEX person_facts_live_unique ON person_facts (chat_key, user_id, normalised)
    WHERE is_deleted = 0;
-- A person's live facts, newest first; /people counts them per person.
CREATE INDEX person_facts_live ON person_facts (chat_key, user_id, id) WHERE is_deleted = 0;

CREATE TABLE fact_audit (
    id       INTEGER PRIMARY KEY,
    fact_id  INTEGER NOT NULL REFERENCES person_facts (id),
    chat_key TEXT    NOT NULL,
    action   TEXT    NOT NULL CHECK (action IN ('learned', 'forgotten', 'crowded_out')),
    done_by  TEXT    NOT NULL,  -- "nightly", "telegram:123" (an admin or the person), "web"
    done_at  REAL    NOT NULL
);

CREATE INDEX fact_audit_by_fact ON fact_audit (fact_id, id);
