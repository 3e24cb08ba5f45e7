-- Initiative: promises to come back later, quiet periods, and why a batch was started
-- when no message started it. Times are unix seconds (UTC) as REAL.

-- A batch nobody's message started: 'remind' or 'followup' (a later item fell due) or
-- 'opener' (the chat had gone quiet). NULL for a batch of waiting messages.
ALTER TABLE batches ADD COLUMN occasion TEXT
    CHECK (occasion IS NULL OR occasion IN ('remind', 'followup', 'opener'));

-- Openers of a chat by time: the cap per chat day, "never two in a row", the dashboard.
CREATE INDEX batches_openers ON batches (chat_key, created_at) WHERE occasion = 'opener';

-- A later item of a reply plan: kept until it falls due, then run once as an initiative
-- batch. pending → running (handed to the pipeline) → done (its batch closed, in the same
-- transaction that queued its replies), or cancelled (/later cancel, the dashboard) or
-- dropped (stale after downtime, quiet, its platform gone). A crash leaves 'running' rows:
-- nothing of them was queued, so they are pending again at the next start.
CREATE TABLE later_items (
    id           INTEGER PRIMARY KEY,  -- the id /later shows and /later cancel takes
    chat_key     TEXT    NOT NULL,     -- the chat (a forum topic: that topic) it goes back to
    platform     TEXT    NOT NULL,     -- the chat key's platform: only running ones are due
    batch_id     INTEGER NOT NULL REFERENCES batches (id),  -- the batch whose plan made it
    asker_id     TEXT,                 -- the chatter it was promised to (may cancel it)
    asker_name   TEXT,
    kind         TEXT    NOT NULL CHECK (kind IN ('remind', 'followup')),
    note         TEXT    NOT NULL,
    due_at       REAL    NOT NULL,
    state        TEXT    NOT NULL DEFAULT 'pending'
                 CHECK (state IN ('pending', 'running', 'done', 'cancelled', 'dropped')),
    run_batch_id INTEGER REFERENCES batches (id),  -- the initiative batch that ran it
    reason       TEXT,                 -- why it was dropped
    created_at   REAL    NOT NULL,
    updated_at   REAL    NOT NULL,
    cancelled_by TEXT                  -- "telegram:42", "web": who cancelled it
);

-- The one wake-up: the next pending item, and those due now, in due order.
CREATE INDEX later_items_pending ON later_items (due_at) WHERE state = 'pending';
-- /later and the dashboard: a chat's pending items; the per-chat cap.
CREATE INDEX later_items_by_chat ON later_items (chat_key, state, due_at);
-- Closing an initiative batch marks its item done.
CREATE INDEX later_items_running ON later_items (run_batch_id) WHERE state = 'running';

-- /quiet: a chat pauses openers and follow-ups until ends_at, or until /quiet off
-- (ended_at). Every row stays: the dashboard shows a chat's quiet periods.
CREATE TABLE quiet_periods (
    id        INTEGER PRIMARY KEY,
    chat_key  TEXT NOT NULL,
    starts_at REAL NOT NULL,
    ends_at   REAL NOT NULL,
    set_by    TEXT NOT NULL,
    ended_at  REAL,              -- /quiet off
    ended_by  TEXT
);

CREATE INDEX quiet_periods_by_chat ON quiet_periods (chat_key, ends_at);
