-- Releases built from the results feed (package release), and the cursor
-- of each feed consumer. Only the release builder writes these tables, one
-- transaction per page of the feed, never the lease or batch path.

-- How far each consumer has read the results feed. PutReleases moves it
-- in the transaction that writes what the page made, from the cursor the
-- page was read from, so each item is consumed exactly once.
CREATE TABLE feed_cursors (
    consumer TEXT PRIMARY KEY,
    feed_after TEXT NOT NULL, -- the feed cursor to read from
    items    BIGINT NOT NULL DEFAULT 0,  -- items consumed
    at_us    BIGINT NOT NULL
);

-- One row per release: a poster's files of one set, posted within the
-- builder's window. The totals follow its files.
CREATE TABLE releases (
    id             {{ID}},
    set_key        TEXT NOT NULL,  -- release.SetKey(poster, set name)
    name           TEXT NOT NULL,
    poster         TEXT NOT NULL,
    group_names    TEXT NOT NULL, -- JSON array
    posted_us      BIGINT NOT NULL, -- the earliest file's date
    last_us        BIGINT NOT NULL, -- the latest file's date
    files_seen     INTEGER NOT NULL,
    files_complete INTEGER NOT NULL,
    files_expected INTEGER NOT NULL,
    parts_seen     BIGINT NOT NULL,
    parts_expected BIGINT NOT NULL,
    bytes          BIGINT NOT NULL,
    complete       BOOLEAN NOT NULL,
    updated_us     BIGINT NOT NULL
);
-- The builder finds the releases a new file may join with this one.
CREATE INDEX releases_set ON releases (set_key, posted_us);

-- The groups of each release, for listing a group's releases in id order.
CREATE TABLE release_groups (
    group_name TEXT NOT NULL,
    release_id BIGINT NOT NULL REFERENCES releases (id),
    PRIMARY KEY (group_name, release_id)
);

-- One row per binary: its key, its release, and the File (groups, date,
-- totals, the ids of the feed items it was merged from) as JSON. Its parts
-- stay in those items (read back by id), so a page's files are not written
-- twice; a File that names no items keeps its parts here.
CREATE TABLE release_files (
    key        TEXT PRIMARY KEY,
    release_id BIGINT NOT NULL REFERENCES releases (id),
    value      TEXT NOT NULL
);
CREATE INDEX release_files_release ON release_files (release_id);
