-- Backfill to a date: a plan's history reaches back to the first article
-- posted on or after history_since_us (microseconds since 1970; 0: none,
-- the plan counts articles with history_back instead). history_from is
-- the article a date search found for it, and history_from_us that
-- article's Date (NULL when every article was older); both are NULL until
-- the search ran, and again after a reset or a new date.
ALTER TABLE plans ADD COLUMN history_since_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE plans ADD COLUMN history_from BIGINT;
ALTER TABLE plans ADD COLUMN history_from_us BIGINT;
