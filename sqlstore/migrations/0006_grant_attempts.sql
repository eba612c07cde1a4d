-- Grants take the ranges with the fewest attempts first (grantOrder in
-- ranges.go): a range reported corrupt goes behind every healthy one, so a
-- chunk that keeps failing no longer takes every grant until its range
-- fails. The grant index leads with attempts, so a grant still walks it in
-- order and stops at the first rows it can lock. Heartbeats and batches do
-- not write attempts (only a corrupt report and a retry do), so their
-- updates stay HOT.
DROP INDEX ranges_grant;
CREATE INDEX ranges_grant ON ranges (attempts, lane_rank, start_n) WHERE state IN ('pending', 'leased') AND NOT ordered;
