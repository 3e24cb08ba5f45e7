-- Semantic recall: one vector per memory row and embeddings model.
-- A row to embed is (kind, row id, chat, text): kind 'summary' is a prompt_history row;
-- storage/vectors.py names each kind's table. Vectors are float32, little-endian, scaled
-- to unit length, so a dot product is their cosine.

CREATE TABLE embeddings (
    id         INTEGER PRIMARY KEY,
    kind       TEXT    NOT NULL,          -- 'summary'; later kinds (facts) add no column
    row_id     INTEGER NOT NULL,          -- the id of the row in its kind's table
    chat_key   TEXT    NOT NULL,          -- the row's chat: a search reads only its own
    model      TEXT    NOT NULL,          -- vectors of different models are never compared
    dims       INTEGER NOT NULL CHECK (dims > 0),
    vector     BLOB    NOT NULL CHECK (length(vector) = 4 * dims),
    created_at REAL    NOT NULL,
    UNIQUE (kind, row_id, model)
);

-- similar_summaries: one chat's vectors of one kind and model.
CREATE INDEX embeddings_by_chat ON embeddings (chat_key, kind, model);
