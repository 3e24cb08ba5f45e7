-- What the LLM calls cost, and the group gate's hourly budget.

-- Tokens per chat, chat day and kind of call, as the provider reported them (or counted
-- offline when it did not: estimated_calls says how many calls that was).
CREATE TABLE llm_usage (
    day               TEXT    NOT NULL,  -- the chat day the calls were made on, YYYY-MM-DD
    chat_key          TEXT    NOT NULL,
    kind              TEXT    NOT NULL,  -- "reply", "splitter", "summary", ...
    calls             INTEGER NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    estimated_calls   INTEGER NOT NULL,
    PRIMARY KEY (day, chat_key, kind)
) WITHOUT ROWID;

-- pacebot cost --chat: one chat's days.
CREATE INDEX llm_usage_by_chat ON llm_usage (chat_key, day);

-- The unaddressed group batches the gate let through to the LLM, by group (a forum's
-- topics count together): "at most unaddressed_calls_per_hour in any hour".
CREATE TABLE unaddressed_calls (
    room_key TEXT NOT NULL,
    at       REAL NOT NULL
);

CREATE INDEX unaddressed_calls_by_room ON unaddressed_calls (room_key, at);
