-- The real names post-processing found for a release's files (a JSON
-- object from a file's key to its name in the release's PAR2 set,
-- matched by the MD5 of its first 16 KiB), which the files' reads show.
ALTER TABLE releases ADD COLUMN pp_files TEXT;
