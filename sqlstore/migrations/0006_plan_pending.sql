-- The last GROUP reply of a group that planning held back, in part or
-- whole, until a later poll confirms it: a low above the trusted one, an
-- empty group's reply (low > high), or a high that jumps past the store's
-- bound. Both are NULL when the last reply was trusted whole. low and high
-- stay the watermarks trusted so far: the ones planning and expiry use.
ALTER TABLE plans ADD COLUMN pending_low BIGINT;
ALTER TABLE plans ADD COLUMN pending_high BIGINT;
