-- When a chunk claim's owner first took it, in microseconds: a claim is
-- renewed before each retry of its fetch, so its expiry alone no longer
-- tells how long the fetch has run (coordinator status --stuck). A renewal
-- by the same owner of a chunk it has not fetched keeps it. NULL for the
-- claims taken before this column.
ALTER TABLE chunk_claims ADD COLUMN since_us BIGINT;
