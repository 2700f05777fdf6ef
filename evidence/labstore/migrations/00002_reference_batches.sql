-- Version 2 of the lab store's database: the reference batches people
-- marked as good (package evidence/batches), curated evidence like the
-- lab's results and kept with them. marked_at is Unix nanoseconds (UTC);
-- marked_by the token's name, '' without authentication. SQLite compares
-- the ids by their bytes, the order References lists them in.

-- +goose Up
CREATE TABLE reference_batches (
	batch_id  TEXT    NOT NULL PRIMARY KEY,
	marked_at INTEGER NOT NULL,
	marked_by TEXT    NOT NULL
);

-- +goose Down
DROP TABLE reference_batches;
