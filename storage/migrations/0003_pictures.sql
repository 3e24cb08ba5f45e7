-- Pictures: a message keeps references to its pictures, fetched only when a
-- batch is answered, and what the model saw in them, shown in later prompts instead.

-- JSON list of {"ref": ..., "placeholder": ...}: a Telegram file_id or a QQ image URL
-- (never a URL that holds a secret) and how the text shows the picture. NULL: none.
ALTER TABLE messages ADD COLUMN pictures TEXT CHECK (pictures IS NULL OR json_valid(pictures));
-- The model's words for the message's pictures (the reply's image_notes).
ALTER TABLE messages ADD COLUMN image_note TEXT;
