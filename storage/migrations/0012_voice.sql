-- Voice: a message keeps a reference to its voice note, fetched only to be heard, and
-- what was heard in it; the outbox keeps the kind each item went out as, since a voice
-- item's words go out as text when they cannot be spoken.

-- JSON {"ref", "placeholder", "duration_s", "url", "size_bytes"}: a Telegram file_id or a
-- QQ record's file (never a URL that holds a secret), how the text shows the note until
-- it is heard, its length as the platform says, a QQ record's URL. NULL: no voice note.
ALTER TABLE messages ADD COLUMN voice TEXT CHECK (voice IS NULL OR json_valid(voice));
-- What was heard: NULL while it is not heard yet, '' when it never will be (a failure,
-- a note too long); the message's text then holds it where the placeholder stood.
ALTER TABLE messages ADD COLUMN transcript TEXT;
-- After a restart: the waiting messages whose voice note is still to be heard.
CREATE INDEX messages_unheard ON messages (id)
    WHERE voice IS NOT NULL AND transcript IS NULL AND batch_id IS NULL;

-- The kind an item went out as; NULL for rows from before, which went out as their kind.
ALTER TABLE outbox ADD COLUMN sent_as TEXT
    CHECK (sent_as IS NULL OR sent_as IN ('content', 'react', 'sticker', 'voice'));
