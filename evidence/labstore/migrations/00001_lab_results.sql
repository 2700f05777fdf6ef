-- Version 1 of the lab result store (schema_version 1 before goose).
-- One row per lab_sample_id. Times of spectra are Unix nanoseconds (UTC),
-- as in the prediction log; sampled_at is RFC 3339 text as the lab gave
-- it (it is kept, never queried). Absent values are NULL. The partial
-- index serves Range: matched results by spectrum time, then id.

-- +goose Up
CREATE TABLE lab_results (
	lab_sample_id TEXT    NOT NULL PRIMARY KEY,
	batch_id      TEXT    NOT NULL,
	scan_seq      INTEGER,
	sampled_at    TEXT,
	epa REAL, dha REAL, dpa REAL,
	matched       INTEGER NOT NULL,
	prediction_id BLOB,
	spectrum_ts   INTEGER,
	reason        TEXT    NOT NULL,
	CHECK (matched IN (0, 1)),
	CHECK (matched = 0 OR (prediction_id IS NOT NULL AND spectrum_ts IS NOT NULL))
);
CREATE INDEX lab_results_spectrum ON lab_results (spectrum_ts, lab_sample_id) WHERE matched = 1;

-- +goose Down
DROP TABLE lab_results;
