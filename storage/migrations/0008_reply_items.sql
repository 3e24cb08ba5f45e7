-- Reply items: an outbox row is one item of a reply plan, of one kind: a text
-- ('content'), a reaction ('react': content is the emoji, reply_to the message it lands
-- on), a sticker ('sticker': content is its id in the chat's collection) or a voice note
-- ('voice': content is the text to speak). Rows from before are texts.

ALTER TABLE outbox ADD COLUMN kind TEXT NOT NULL DEFAULT 'content'
    CHECK (kind IN ('content', 'react', 'sticker', 'voice'));
