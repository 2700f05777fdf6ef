-- +goose Up
-- The lab's HPLC results (package evidence/labstore/pglab), one row per
-- lab_sample_id, as the embedded store (evidence/labstore) keeps them.
--
-- lab_sample_id sorts in byte order (COLLATE "C"): Range orders ties by
-- it, and must order them as the other stores do, whatever the database's
-- locale. sampled_at is RFC 3339 text as the lab gave it (the offset and
-- nanoseconds kept; never queried). spectrum_unix_ns is the matched
-- spectrum's time in Unix nanoseconds, as the prediction log records it:
-- a timestamptz would round it to microseconds. Absent values are NULL.
-- The partial index serves Range: matched results by spectrum time, then
-- id.
CREATE TABLE lab_results (
    lab_sample_id    text COLLATE "C" PRIMARY KEY,
    batch_id         text NOT NULL,
    scan_seq         bigint,
    sampled_at       text,
    epa              double precision,
    dha              double precision,
    dpa              double precision,
    matched          boolean NOT NULL,
    prediction_id    uuid,
    spectrum_unix_ns bigint,
    reason           text NOT NULL,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (NOT matched OR (prediction_id IS NOT NULL AND spectrum_unix_ns IS NOT NULL))
);
CREATE INDEX lab_results_spectrum ON lab_results (spectrum_unix_ns, lab_sample_id) WHERE matched;

-- +goose Down
DROP TABLE lab_results;
