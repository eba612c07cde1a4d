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

-- The size of each provider's budget: written by the first take, and
-- changed only by a take while no slot of the provider is held, so that
-- coordinators told different sizes never share one account as the
-- larger (a take with another size fails while a slot is held).
CREATE TABLE conn_budgets (
    provider TEXT NOT NULL PRIMARY KEY,
    size     INTEGER NOT NULL
);

-- The holders that wanted a slot of a provider's budget and found every
-- slot held, and when they last did (by the database's clock): a take that
-- finds the budget full writes it, a take that succeeds deletes it. The
-- holders of a budget read it to share the slots fairly (package
-- connlease): one that holds more than its share gives slots back while
-- another that wants one holds less.
CREATE TABLE conn_wants (
    provider TEXT NOT NULL,
    holder   TEXT NOT NULL,
    at_us    BIGINT NOT NULL,
    PRIMARY KEY (provider, holder)
);
