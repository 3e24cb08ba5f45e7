-- The newest title each chat's messages gave (a Telegram group's title, a QQ group's
-- name), shown beside the chat's key on the dashboard. Private chats have none: their
-- chatter's newest name is read from the messages instead.

CREATE TABLE chat_titles (
    chat_key   TEXT PRIMARY KEY,
    title      TEXT NOT NULL,
    updated_at REAL NOT NULL  -- sent_at of the message that gave it
) WITHOUT ROWID;
