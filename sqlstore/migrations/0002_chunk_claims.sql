-- Fetch claims per range and chunk, so coordinators that share a database
-- never fetch the same chunk twice.
CREATE TABLE chunk_claims (
    range_id   BIGINT NOT NULL REFERENCES ranges (id),
    from_n     BIGINT NOT NULL,
    to_n       BIGINT NOT NULL,
    owner      TEXT NOT NULL,
    expires_us BIGINT NOT NULL,
    fetched    BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (range_id, from_n)
);
