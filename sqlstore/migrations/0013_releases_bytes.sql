-- A search by size (Newznab's minsize and maxsize) that matches few
-- releases reads them through this index and sorts them, rather than
-- every release newest first. The front door's searches, t=details and
-- the NZBs read through their own pool (sqlstore.Config.FrontConns).
CREATE INDEX releases_bytes ON releases (bytes, posted_us, id);
