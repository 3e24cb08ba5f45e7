-- The knowledge index is cut without a dictionary (storage/search.py: Han runs into pairs
-- of characters, split at grammar words) instead of into jieba's words. Every stored row,
-- popped ones too, is cut again from its own summary, topics, key points and keywords, as
-- the nightly job cuts a new one; knowledge_index_au moves knowledge_fts along.
-- index_text() is storage.search.index_text, lent to the connection by storage/migrate.py.

UPDATE knowledge_index SET search_text = index_text(
    summary,
    (SELECT group_concat(value, char(10)) FROM json_each(topics)),
    (SELECT group_concat(value, char(10)) FROM json_each(key_points)),
    (SELECT group_concat(value, char(10)) FROM json_each(keywords))
);
