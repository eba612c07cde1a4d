-- The highest id a removed row of a table had (group rm). SQLite gives a
-- new row the largest id in its table + 1, so a group removed from the top
-- of the table would hand its id to the next group added, while a running
-- coordinator still knows the id as the removed group's. On SQLite a new
-- group's id is above both; PostgreSQL never hands an id out twice.
CREATE TABLE id_floors (
    tbl  TEXT PRIMARY KEY,
    high BIGINT NOT NULL
);
