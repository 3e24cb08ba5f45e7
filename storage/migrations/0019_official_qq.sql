-- The official QQ bot (QQ Open Platform). Times are unix seconds (UTC) as REAL.

-- The message an outbox item answers, on a platform whose replies name it (a passive
-- reply's msg_id); NULL: the item answers nothing (a reminder, an opener).
ALTER TABLE outbox ADD COLUMN answers TEXT;

-- The msg_seq of each passive reply: unique per message answered (1, 2, ...), across
-- restarts. A message cannot be answered an hour after it was sent, so rows older than
-- that are pruned as new ones come.
CREATE TABLE reply_seqs (
    platform   TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    last_seq   INTEGER NOT NULL,
    created_at REAL    NOT NULL,
    PRIMARY KEY (platform, message_id)
);
CREATE INDEX reply_seqs_by_age ON reply_seqs (created_at);

-- Messages that answered nothing, per chat and calendar month: the platform allows a few.
CREATE TABLE proactive_sends (
    chat_key TEXT    NOT NULL,
    month    TEXT    NOT NULL,  -- "2026-11", in the platform's zone (+08:00)
    sent     INTEGER NOT NULL,
    PRIMARY KEY (chat_key, month)
);

-- The gateway session of a platform that can resume one after a restart: its id, the
-- sequence of the last event stored, and the bot's identity it was opened as.
CREATE TABLE gateway_sessions (
    platform   TEXT    PRIMARY KEY,
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    bot_id     TEXT    NOT NULL,
    bot_name   TEXT    NOT NULL,
    updated_at REAL    NOT NULL
);
