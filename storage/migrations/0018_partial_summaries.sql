-- A summary of the current, unfinished chat day (/summary run or pacebot summarize of
-- today) is partial: once the day has ended, the nightly run summarises the whole day and
-- that summary takes the partial one's place in the stack (the same row). A popped
-- partial summary stays popped.
ALTER TABLE prompt_history ADD COLUMN partial INTEGER NOT NULL DEFAULT 0
    CHECK (partial IN (0, 1));
