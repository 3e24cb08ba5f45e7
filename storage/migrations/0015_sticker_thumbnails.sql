-- A picture that stands for a sticker the dashboard cannot draw (Telegram's thumbnail of an
-- animated or video sticker, by its file_id); '' = draw the sticker itself.
ALTER TABLE stickers ADD COLUMN thumb_ref TEXT NOT NULL DEFAULT '';
