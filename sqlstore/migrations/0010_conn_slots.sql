-- The connection slots of the providers' budgets (package connlease):
-- a row per slot, leased to a coordinator until expires_us. A row is kept
-- when its slot is given back (expires_us 0), so that token, which rises
-- with every take, keeps fencing the holders that held it before.
CREATE TABLE conn_slots (
    provider   TEXT NOT NULL,
    n          INTEGER NOT NULL,
    holder     TEXT NOT NULL,
    token      BIGINT NOT NULL,
    expires_us BIGINT NOT NULL,
    PRIMARY KEY (provider, n)
);
