-- Search over release names, and the users of the Newznab API with their
-- daily counts. Lines after "-- dialect: postgres" or "-- dialect: sqlite"
-- run on that backend only, up to the next "-- dialect:" line ("all":
-- both again).

-- The Newznab category (release.Categorize), the TV episode
-- (release.ParseEpisode; NULL for a release that is no episode) and the
-- downloads through the API of each release. search_words is
-- the name's release.SearchWords joined by spaces (only words short
-- enough to search for, and at most a few hundred): what the search
-- index holds. NULL marks a release stored before this migration, which Open
-- fills in (releases_unindexed finds them).
ALTER TABLE releases ADD COLUMN category INTEGER NOT NULL DEFAULT 0;
ALTER TABLE releases ADD COLUMN season INTEGER;
ALTER TABLE releases ADD COLUMN episode INTEGER;
ALTER TABLE releases ADD COLUMN episode_daily BOOLEAN;
ALTER TABLE releases ADD COLUMN grabs BIGINT NOT NULL DEFAULT 0;
ALTER TABLE releases ADD COLUMN search_words TEXT;
CREATE INDEX releases_unindexed ON releases (id) WHERE search_words IS NULL;
-- A search without words reads the releases newest first, and filters
-- them as it goes; one by category (the feeds RSS readers poll) or by
-- season and episode (a TV search) reads those releases newest first,
-- or, for a parent category (5000: 5000 to 5999), that range of them,
-- so a filter that matches nothing reads next to nothing.
CREATE INDEX releases_posted ON releases (posted_us, id);
CREATE INDEX releases_category ON releases (category, posted_us, id);
CREATE INDEX releases_episode ON releases (season, episode, posted_us, id);

-- dialect: postgres
-- The words, each one lexeme as it is: the index is built from the
-- words split at the spaces, and a search asks for quoted lexemes, so
-- PostgreSQL's parser, whose notion of a letter is the database's locale
-- and not Go's (a word of a script newer than the locale would be
-- dropped), never sees them. fastupdate off: GIN's pending list of
-- recent entries is read whole by every search (3.5 MB after a million
-- releases, a third of a short search's time), while writing each
-- release's few words into the index at once costs the builder little.
CREATE INDEX releases_search ON releases USING GIN (array_to_tsvector(string_to_array(search_words, ' '))) WITH (fastupdate = off);

-- dialect: sqlite
-- FTS5 keyed by the release id (its rowid). The words are lower case
-- letters and digits already; unicode61 splits them at the spaces only,
-- and keeps their diacritics, so "café" and "cafe" stay two words. The
-- triggers keep one entry per release: a release's words change only if
-- its name does.
CREATE VIRTUAL TABLE release_search USING fts5(words, tokenize = 'unicode61 remove_diacritics 0');
CREATE TRIGGER releases_search_insert AFTER INSERT ON releases WHEN new.search_words IS NOT NULL
BEGIN
    INSERT INTO release_search (rowid, words) VALUES (new.id, new.search_words);
END;
CREATE TRIGGER releases_search_update AFTER UPDATE OF search_words ON releases
    WHEN old.search_words IS NOT new.search_words
BEGIN
    DELETE FROM release_search WHERE rowid = old.id;
    INSERT INTO release_search (rowid, words) VALUES (new.id, COALESCE(new.search_words, ''));
END;
CREATE TRIGGER releases_search_delete AFTER DELETE ON releases
BEGIN
    DELETE FROM release_search WHERE rowid = old.id;
END;

-- dialect: all
-- A user of the Newznab API: its key is kept only as HashKey's hex
-- SHA-256. The limits are per UTC day; 0: none.
CREATE TABLE api_users (
    name          TEXT PRIMARY KEY,
    key_hash      TEXT NOT NULL UNIQUE,
    request_limit BIGINT NOT NULL,
    grab_limit    BIGINT NOT NULL,
    suspended     BOOLEAN NOT NULL DEFAULT FALSE,
    created_us    BIGINT NOT NULL
);

-- A user's requests and grabs on one UTC day (YYYY-MM-DD).
CREATE TABLE api_usage (
    user_name TEXT NOT NULL REFERENCES api_users (name) ON DELETE CASCADE,
    day       TEXT NOT NULL,
    requests  BIGINT NOT NULL DEFAULT 0,
    grabs     BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (user_name, day)
);
