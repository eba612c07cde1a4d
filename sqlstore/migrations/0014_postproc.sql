-- Post-processing (package postproc): each release's state (0 pending,
-- 1 done, 2 failed for good), its tries, why the last failed, and when it
-- is due (a pending release is leased by moving it into the future); what
-- it found: the Newznab password attr, the NFO, its IMDb and TheTVDB
-- ids, the bodies it read; and whether it renamed the release, which the
-- builder then leaves named. Every release already stored is pending.
ALTER TABLE releases ADD COLUMN pp_state SMALLINT NOT NULL DEFAULT 0;
ALTER TABLE releases ADD COLUMN pp_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE releases ADD COLUMN pp_reason TEXT;
ALTER TABLE releases ADD COLUMN pp_next_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE releases ADD COLUMN pp_bodies INTEGER NOT NULL DEFAULT 0;
ALTER TABLE releases ADD COLUMN renamed BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE releases ADD COLUMN password SMALLINT NOT NULL DEFAULT 0;
ALTER TABLE releases ADD COLUMN nfo TEXT;
ALTER TABLE releases ADD COLUMN imdb TEXT;
ALTER TABLE releases ADD COLUMN tvdb TEXT;
CREATE INDEX releases_pp_pending ON releases (pp_next_us, id) WHERE pp_state = 0;
CREATE INDEX releases_pp_failed ON releases (id) WHERE pp_state = 2;
