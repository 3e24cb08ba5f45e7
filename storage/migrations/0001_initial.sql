-- Messages, batches and the outbox.
-- Times are unix seconds (UTC) as REAL; chat keys are "platform:kind:id" text.

CREATE TABLE batches (
    id          INTEGER PRIMARY KEY,
    chat_key    TEXT    NOT NULL,
    state       TEXT    NOT NULL DEFAULT 'open'
                CHECK (state IN ('open', 'answered', 'silent', 'skipped', 'failed', 'abandoned')),
    created_at  REAL    NOT NULL,
    finished_at REAL,
    error       TEXT
);

-- unsaid_replies: the newest answered batch of a chat before a given one.
CREATE INDEX batches_by_chat ON batches (chat_key, state, id);
-- abandon_open_batches at start-up.
CREATE INDEX batches_open ON batches (id) WHERE state = 'open';
-- /status: failed batches in the last hour.
CREATE INDEX batches_failed ON batches (finished_at) WHERE state = 'failed';

CREATE TABLE messages (
    id            INTEGER PRIMARY KEY,
    chat_key      TEXT    NOT NULL,
    message_id    TEXT    NOT NULL,  -- the platform's id, unique within the chat
    sender_id     TEXT    NOT NULL,
    sender_name   TEXT    NOT NULL,
    text          TEXT    NOT NULL,
    sent_at       REAL    NOT NULL,  -- the platform's own timestamp: decides the chat day
    received_at   REAL    NOT NULL,
    from_bot      INTEGER NOT NULL DEFAULT 0 CHECK (from_bot IN (0, 1)),
    addresses_bot INTEGER NOT NULL DEFAULT 0 CHECK (addresses_bot IN (0, 1)),
    reply_to_id   TEXT,
    batch_id      INTEGER REFERENCES batches (id),  -- NULL while the message waits
    UNIQUE (chat_key, message_id)
);

-- open_batch and waiting_counts: the messages no batch has taken yet.
CREATE INDEX messages_waiting ON messages (chat_key, id) WHERE batch_id IS NULL AND from_bot = 0;
-- recent_history and the nightly job: a chat's messages in time order.
CREATE INDEX messages_by_time ON messages (chat_key, sent_at);
-- abandon_open_batches: the messages of a batch.
CREATE INDEX messages_by_batch ON messages (batch_id) WHERE batch_id IS NOT NULL;

CREATE TABLE outbox (
    id                  INTEGER PRIMARY KEY,
    chat_key            TEXT    NOT NULL,
    batch_id            INTEGER NOT NULL REFERENCES batches (id),
    seq                 INTEGER NOT NULL,  -- order within the batch, from 0
    content             TEXT    NOT NULL,
    reply_to            TEXT,              -- platform id of the message to quote
    due_at              REAL    NOT NULL,
    state               TEXT    NOT NULL DEFAULT 'scheduled'
                        CHECK (state IN ('scheduled', 'sending', 'sent', 'cancelled', 'dropped')),
    platform_message_id TEXT,
    reason              TEXT,              -- why a reply was dropped
    updated_at          REAL    NOT NULL,
    UNIQUE (batch_id, seq)
);

-- next_scheduled, cancel/drop_scheduled, scheduled_count: the replies still to send.
CREATE INDEX outbox_scheduled ON outbox (chat_key, due_at, batch_id, seq)
    WHERE state = 'scheduled';
-- recover_outbox: replies caught mid-send by a crash.
CREATE INDEX outbox_sending ON outbox (id) WHERE state = 'sending';
