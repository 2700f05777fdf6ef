-- +goose Up
-- The reference batches people marked as good (package evidence/batches;
-- the store is evidence/labstore/pglab's References), as the embedded
-- store keeps them in the lab store's database. batch_id sorts in byte
-- order (COLLATE "C"), the order References lists them in whatever the
-- database's locale. marked_at is Unix nanoseconds (UTC), as the
-- prediction log keeps times; marked_by the token's name, '' without
-- authentication.
CREATE TABLE reference_batches (
    batch_id  text COLLATE "C" PRIMARY KEY,
    marked_at bigint NOT NULL,
    marked_by text   NOT NULL
);

-- GET /batches lists the log's batch ids in byte order, a page at a
-- time after the previous page's last id (pglog's Batches): this index
-- of the active records' ids in that collation finds a page's ids
-- without reading the batches before it. The role is in the key so that
-- the query need not visit the rows.
CREATE INDEX predlog_records_batch_c ON predlog_records (batch_id COLLATE "C", role);

-- +goose Down
DROP INDEX predlog_records_batch_c;
DROP TABLE reference_batches;
