-- The schema shared by PostgreSQL and SQLite. {{ID}} and {{BLOB}} are the
-- only words that differ; sqlstore replaces them before running the file.
-- Times are microseconds since the Unix epoch (BIGINT), so both dialects
-- compare them the same way and one clock decides expiry.

CREATE TABLE nodes (
    name         TEXT PRIMARY KEY,
    token_hash   {{BLOB}} NOT NULL UNIQUE,
    created_us   BIGINT NOT NULL,
    last_seen_us BIGINT NOT NULL
);

CREATE TABLE groups (
    id         {{ID}},
    name       TEXT NOT NULL UNIQUE,
    ordered    BOOLEAN NOT NULL,
    range_size BIGINT NOT NULL,
    chunk_size BIGINT NOT NULL
);

-- One row per group and lane that has ranges: the lane lease of ordered
-- groups, progress counters and snapshot metadata of every group.
CREATE TABLE lanes (
    group_id    BIGINT NOT NULL REFERENCES groups (id),
    lane        TEXT NOT NULL CHECK (lane IN ('history', 'tail')),
    token       BIGINT NOT NULL DEFAULT 0,
    node        TEXT,
    expires_us  BIGINT,
    headers     BIGINT NOT NULL DEFAULT 0,
    ranges_done BIGINT NOT NULL DEFAULT 0,
    snap_next   BIGINT,
    snap_size   BIGINT,
    snap_token  BIGINT, -- the lane grant that stored the snapshot: it names the snapshot's file
    PRIMARY KEY (group_id, lane)
);

CREATE TABLE ranges (
    id         {{ID}},
    group_id   BIGINT NOT NULL REFERENCES groups (id),
    lane       TEXT NOT NULL CHECK (lane IN ('history', 'tail')),
    lane_rank  INTEGER NOT NULL, -- 0 for tail, 1 for history: the grant order
    ordered    BOOLEAN NOT NULL, -- the group's flag, copied so the grant index can use it
    start_n    BIGINT NOT NULL,
    end_n      BIGINT NOT NULL,
    next_n     BIGINT NOT NULL,
    capture    BOOLEAN NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('pending', 'leased', 'done', 'failed')),
    attempts   INTEGER NOT NULL DEFAULT 0,
    headers    BIGINT NOT NULL DEFAULT 0,
    reason     TEXT NOT NULL DEFAULT '',
    token      BIGINT NOT NULL DEFAULT 0,
    node       TEXT,
    lane_token BIGINT NOT NULL DEFAULT 0, -- the lane grant an ordered range was leased under
    expires_us BIGINT,                     -- heartbeats write only this column: it is in no index
    CHECK (start_n <= end_n)
);

-- Grants of unordered ranges walk this index in order.
CREATE INDEX ranges_grant ON ranges (lane_rank, start_n) WHERE state IN ('pending', 'leased') AND NOT ordered;
-- Lanes find their head range, and range add checks overlaps, with this one.
-- The prefetcher and the admin listing find ranges by state with this one.
CREATE INDEX ranges_state ON ranges (state, lane_rank, start_n);
CREATE INDEX ranges_group ON ranges (group_id, lane, start_n);
CREATE INDEX ranges_node ON ranges (node) WHERE node IS NOT NULL;

-- One row per stored batch: the node detail pages through these.
CREATE TABLE batches (
    id       {{ID}},
    range_id BIGINT NOT NULL REFERENCES ranges (id),
    node     TEXT NOT NULL,
    from_n   BIGINT NOT NULL,
    to_n     BIGINT NOT NULL,
    headers  BIGINT NOT NULL,
    items    BIGINT NOT NULL,
    at_us    BIGINT NOT NULL
);
CREATE INDEX batches_node ON batches (node, id);

-- The results feed. xid orders items by the transaction that stored them on
-- PostgreSQL (0 on SQLite, whose single writer stores in id order).
CREATE TABLE items (
    id       {{ID}},
    xid      BIGINT NOT NULL,
    group_id BIGINT NOT NULL,
    range_id BIGINT NOT NULL,
    from_n   BIGINT NOT NULL,
    to_n     BIGINT NOT NULL,
    key      TEXT NOT NULL,
    value    TEXT NOT NULL
);
CREATE INDEX items_feed ON items (xid, id);
CREATE INDEX items_group_feed ON items (group_id, xid, id);
