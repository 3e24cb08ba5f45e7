-- What was sent today, by kind (/status, the dashboard): the sent items by when they went.

CREATE INDEX outbox_sent ON outbox (updated_at, chat_key) WHERE state = 'sent';
