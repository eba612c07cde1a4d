-- Range planning: a group's plan and cursors, and the provider's
-- watermarks at the last poll. Only the planner writes a row, never the
-- lease path.
CREATE TABLE plans (
    group_id     BIGINT PRIMARY KEY REFERENCES groups (id),
    tail         BOOLEAN NOT NULL,
    history      BOOLEAN NOT NULL,
    history_back BIGINT NOT NULL,
    margin       BIGINT NOT NULL,
    low          BIGINT,  -- NULL until the first poll
    high         BIGINT,
    polled_us    BIGINT,
    tail_next    BIGINT,  -- the first article the tail has not planned
    history_next BIGINT,  -- the first article history has not planned
    history_end  BIGINT   -- the last article history plans: one before the tail's start
);

-- Repair ranges re-fetch missing articles; they are granted like unordered
-- ranges and never count in a lane's order.
ALTER TABLE ranges ADD COLUMN repair BOOLEAN NOT NULL DEFAULT FALSE;

-- Articles a worker found absent from their chunk, and what became of them.
CREATE TABLE missing (
    group_id BIGINT NOT NULL REFERENCES groups (id),
    number   BIGINT NOT NULL,
    lane     TEXT NOT NULL,
    state    TEXT NOT NULL CHECK (state IN ('waiting', 'repairing', 'repaired', 'lost')),
    tries    INTEGER NOT NULL DEFAULT 0,
    range_id BIGINT,          -- the repair range while repairing
    due_us   BIGINT NOT NULL, -- not fetched again before
    PRIMARY KEY (group_id, number)
);
CREATE INDEX missing_state ON missing (state, group_id, number);
CREATE INDEX missing_range ON missing (range_id) WHERE range_id IS NOT NULL;
