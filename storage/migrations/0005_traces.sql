-- Traces: how each batch was answered, for /trace and `pacebot trace`.
-- The record is the JSON of bot.trace.Trace; each reply's fate is read from the outbox
-- when a trace is shown, so it is never stale.

CREATE TABLE traces (
    id         INTEGER PRIMARY KEY,
    chat_key   TEXT    NOT NULL,
    batch_id   INTEGER NOT NULL UNIQUE REFERENCES batches (id),
    created_at REAL    NOT NULL,
    record     TEXT    NOT NULL CHECK (json_valid(record))
);

-- The newest traces of a chat, and trimming to memory.trace_keep.
CREATE INDEX traces_by_chat ON traces (chat_key, id);
