-- A feed item's value (a binary's JSON, with its parts) is often over
-- the 2 kB at which PostgreSQL compresses a value as it stores it. Its
-- default, pglz, cost about a fifth of the server's CPU under the bench's
-- 1,000-worker load; lz4 compresses the same values several times faster.
-- Servers built without lz4 (and those before PostgreSQL 14) keep pglz.
-- Values stored before this migration stay as they are; both read back
-- alike.
-- dialect: postgres
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        EXECUTE 'ALTER TABLE items ALTER COLUMN value SET COMPRESSION lz4';
    END IF;
END
$$;
