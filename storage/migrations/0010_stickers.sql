-- Stickers: each collection (a chat key, or "global:<platform>") keeps the stickers people
-- sent, once each (by the platform's unique key: Telegram's file_unique_id, a QQ sticker's
-- content hash), with what sends it again (a Telegram file_id; a QQ file under
-- <data_dir>/stickers/). A banned sticker stays, so it is never collected again.

CREATE TABLE stickers (
    id                INTEGER PRIMARY KEY,  -- offered and sent as "s<id>"
    collection        TEXT    NOT NULL,
    platform          TEXT    NOT NULL,
    unique_key        TEXT    NOT NULL,
    file_ref          TEXT    NOT NULL,
    caption           TEXT    NOT NULL,
    captioned_by_note INTEGER NOT NULL DEFAULT 0,  -- the model's own words about it
    seen_chat_key     TEXT    NOT NULL,  -- where it was last seen, by which message:
    seen_message_id   TEXT    NOT NULL,  -- a note on that message becomes its caption
    times_seen        INTEGER NOT NULL DEFAULT 1,
    times_sent        INTEGER NOT NULL DEFAULT 0,
    first_seen_at     REAL    NOT NULL,
    last_used_at      REAL    NOT NULL,  -- seen or sent, whichever is later
    banned            INTEGER NOT NULL DEFAULT 0,
    banned_at         REAL,
    banned_by         TEXT,
    UNIQUE (collection, unique_key)
);

-- The prompt's offer and the eviction of the least recently used, per collection.
CREATE INDEX stickers_by_use ON stickers (collection, banned, last_used_at);
