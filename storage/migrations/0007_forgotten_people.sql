-- What was forgotten on request stays forgotten. The nightly summary of the day someone
-- says /forgetme still reads what they wrote before it, and a forgotten fact may be
-- learned again in the same words; so learning checks what was forgotten.

-- A person forgotten in a chat (their /forgetme, or "forget this person" on the
-- dashboard): nothing about them is learned there from chat days up to through_day.
CREATE TABLE forgotten_people (
    chat_key     TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    through_day  TEXT NOT NULL
                 CHECK (through_day GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
    forgotten_at REAL NOT NULL,
    forgotten_by TEXT NOT NULL,
    PRIMARY KEY (chat_key, user_id)
) WITHOUT ROWID;

-- A fact forgotten on request (not crowded out by the nightly job) is found by its words.
CREATE INDEX person_facts_by_words ON person_facts (chat_key, user_id, normalised);
