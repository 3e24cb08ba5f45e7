-- Chats an admin switched off (/bot off, the dashboard): their messages are neither stored
-- nor answered until someone switches them on again. One row per chat ever switched.
CREATE TABLE chat_switches (
    chat_key TEXT PRIMARY KEY,
    off INTEGER NOT NULL CHECK (off IN (0, 1)),
    by TEXT NOT NULL,
    at REAL NOT NULL
);
