-- Memory: each chat's prompt stack of day summaries and the knowledge index over them.
-- Times are unix seconds (UTC) as REAL; chat days are ISO dates ("2026-03-05") as TEXT.

CREATE TABLE prompt_history (
    id                 INTEGER PRIMARY KEY,  -- push order
    chat_key           TEXT    NOT NULL,
    summary_date       TEXT    NOT NULL
                       CHECK (summary_date GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
    added_prompt       TEXT    NOT NULL,  -- the text this summary adds to the persona
    full_prompt_before TEXT    NOT NULL,
    full_prompt_after  TEXT    NOT NULL,
    created_at         REAL    NOT NULL,
    is_deleted         INTEGER NOT NULL DEFAULT 0 CHECK (is_deleted IN (0, 1)),  -- popped
    deleted_at         REAL,
    deleted_by         TEXT,
    -- The chat's pop counter when this row was popped: orders pops even when two share a
    -- timestamp, so restore always brings back the last one.
    pop_seq            INTEGER,
    restored_at        REAL,              -- when a pop of this row was last undone
    CHECK ((is_deleted = 0 AND deleted_at IS NULL AND deleted_by IS NULL AND pop_seq IS NULL)
        OR (is_deleted = 1 AND deleted_at IS NOT NULL AND deleted_by IS NOT NULL
            AND pop_seq IS NOT NULL))
);

-- At most one live summary per chat day, also under a double run or a crash mid-run,
-- also serves summaries_on and has_summary for live rows.
CREATE UNIQUE INDEX prompt_history_live_day ON prompt_history (chat_key, summary_date)
    WHERE is_deleted = 0;
-- live_summaries, pop_summary and restore_summary: a chat's live stack in push order.
CREATE INDEX prompt_history_live ON prompt_history (chat_key, id) WHERE is_deleted = 0;
-- has_summary with popped rows included.
CREATE INDEX prompt_history_by_day ON prompt_history (chat_key, summary_date);
-- pop_summary and restore_summary: a chat's popped rows, last pop first.
CREATE INDEX prompt_history_popped ON prompt_history (chat_key, pop_seq) WHERE is_deleted = 1;

CREATE TABLE knowledge_index (
    id                INTEGER PRIMARY KEY,  -- also the rowid in knowledge_fts
    prompt_history_id INTEGER NOT NULL UNIQUE REFERENCES prompt_history (id),
    chat_key          TEXT    NOT NULL,
    summary_date      TEXT    NOT NULL,
    summary           TEXT    NOT NULL,
    topics            TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(topics)),  -- JSON lists
    key_points        TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(key_points)),
    keywords          TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(keywords)),
    message_count     INTEGER NOT NULL DEFAULT 0,  -- chatter messages summarised
    is_deleted        INTEGER NOT NULL DEFAULT 0 CHECK (is_deleted IN (0, 1)),  -- hidden
    -- The words of summary, topics, key points and keywords as storage/search.py cuts them
    -- (jieba for Chinese), lower-cased and space-separated: what knowledge_fts indexes.
    search_text       TEXT    NOT NULL
);

-- The substring fallback of search_summaries: a chat's live rows, newest first.
CREATE INDEX knowledge_index_live ON knowledge_index (chat_key, id) WHERE is_deleted = 0;

-- The words are cut in Python, so unicode61 only has to split on the spaces. The chat key
-- is indexed too, so a search reads only its own chat's rows however many chats there are
-- (queries still compare knowledge_index.chat_key exactly). Popped rows stay indexed:
-- queries join knowledge_index and keep is_deleted = 0.
CREATE VIRTUAL TABLE knowledge_fts USING fts5 (
    search_text,
    chat_key,
    content = 'knowledge_index',
    content_rowid = 'id',
    tokenize = 'unicode61'
);

CREATE TRIGGER knowledge_index_ai AFTER INSERT ON knowledge_index BEGIN
    INSERT INTO knowledge_fts (rowid, search_text, chat_key)
        VALUES (new.id, new.search_text, new.chat_key);
END;

CREATE TRIGGER knowledge_index_ad AFTER DELETE ON knowledge_index BEGIN
    INSERT INTO knowledge_fts (knowledge_fts, rowid, search_text, chat_key)
        VALUES ('delete', old.id, old.search_text, old.chat_key);
END;

CREATE TRIGGER knowledge_index_au AFTER UPDATE OF search_text, chat_key ON knowledge_index BEGIN
    INSERT INTO knowledge_fts (knowledge_fts, rowid, search_text, chat_key)
        VALUES ('delete', old.id, old.search_text, old.chat_key);
    INSERT INTO knowledge_fts (rowid, search_text, chat_key)
        VALUES (new.id, new.search_text, new.chat_key);
END;

-- chats_active_between (the nightly job): which chats had chatters talking in a time range,
-- without reading every chat's messages.
CREATE INDEX messages_chatter_by_time ON messages (sent_at, chat_key) WHERE from_bot = 0;
