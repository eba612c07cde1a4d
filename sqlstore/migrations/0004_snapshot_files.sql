-- Each snapshot upload goes to a file of its own; the lane names the one
-- the fenced metadata update made current. NULL: a snapshot recorded
-- without a file name (the file is named after snap_next and snap_token).
ALTER TABLE lanes ADD COLUMN snap_file TEXT;
