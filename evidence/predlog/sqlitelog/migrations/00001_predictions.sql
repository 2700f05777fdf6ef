-- Version 1 of the prediction log (schema_version 1 before goose).
-- Times are Unix nanoseconds (UTC). Optional numbers and unknown analytes
-- are NULL. The indexes serve the queries of the issue: ts for time ranges,
-- age retention and the oldest-first trim; (batch_id, ts) for a batch's
-- export and the nearest prediction to a lab sample; (batch_id, scan_seq)
-- for a lab sample named by its scan; (model_version, ts) for a model's
-- performance; prediction_id for the active + shadow + rescore records of
-- one spectrum. Each index includes the rowid, the keyset tiebreaker.

-- +goose Up
CREATE TABLE axes (
	id     INTEGER PRIMARY KEY,
	digest BLOB NOT NULL UNIQUE,
	data   BLOB NOT NULL
);
CREATE TABLE predictions (
	id             INTEGER PRIMARY KEY,
	prediction_id  BLOB    NOT NULL,
	ts             INTEGER NOT NULL,
	model_version  TEXT    NOT NULL,
	role           INTEGER NOT NULL,
	epa REAL, dha REAL, dpa REAL,
	epa_conf REAL, dha_conf REAL, dpa_conf REAL,
	reduced_t2     REAL,
	reduced_q      REAL,
	batch_id       TEXT,
	port           TEXT,
	column_index   REAL,
	scan_seq       REAL,
	channel        REAL,
	integration_ms REAL,
	axis_id        INTEGER,
	spectrum       BLOB
);
CREATE INDEX predictions_ts ON predictions (ts);
CREATE INDEX predictions_batch_ts ON predictions (batch_id, ts);
CREATE INDEX predictions_batch_seq ON predictions (batch_id, scan_seq);
CREATE INDEX predictions_model_ts ON predictions (model_version, ts);
CREATE INDEX predictions_prediction ON predictions (prediction_id);

-- +goose Down
DROP TABLE predictions;
DROP TABLE axes;
