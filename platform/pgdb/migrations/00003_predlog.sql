-- +goose Up
-- The prediction log (package evidence/predlog/pglog), written by every
-- replica of the fleet at once.

-- Wavenumber axes, stored once: a rig sends the same axis with every scan.
-- The key is the SHA-256 of data, so replicas that meet the same axis
-- agree on its key without asking each other. Axes are never deleted
-- (a handful per rig).
CREATE TABLE predlog_axes (
    digest bytea PRIMARY KEY,
    data   bytea NOT NULL
);

-- One row per logged prediction. ts is Unix nanoseconds (UTC), not
-- timestamptz, which keeps only microseconds: a record keeps its Time as
-- given, and page cursors are (ts, id). The identity's values come from
-- one sequence without a cache, so they are unique across replicas and
-- increase in the order each replica appends. Optional numbers, unknown
-- analytes and absent context are NULL. spectrum is plane-shuffled
-- little-endian float32 (see pglog's spectrum.go), which PostgreSQL's
-- own TOAST compression then shrinks; axis_digest names its
-- predlog_axes row (no foreign key: axes are never deleted, and COPY
-- would check it row by row). replica is who recorded it; footprint is
-- the store's estimate of the bytes the row takes, heap and index
-- entries, kept so that deletions can subtract it from predlog_usage.
CREATE TABLE predlog_records (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    prediction_id  uuid     NOT NULL,
    ts             bigint   NOT NULL,
    model_version  text     NOT NULL,
    role           smallint NOT NULL,
    epa            double precision,
    dha            double precision,
    dpa            double precision,
    epa_conf       double precision,
    dha_conf       double precision,
    dpa_conf       double precision,
    reduced_t2     double precision,
    reduced_q      double precision,
    batch_id       text,
    port           text,
    column_index   double precision,
    scan_seq       double precision,
    channel        double precision,
    integration_ms double precision,
    axis_digest    bytea,
    spectrum       bytea,
    replica        text     NOT NULL DEFAULT '',
    footprint      integer  NOT NULL
);

-- The indexes of the queries, each ending in id, the keyset tiebreaker:
-- (ts, id) for pages, time ranges, age retention and the oldest-first
-- trim; (batch_id, ts, id) for a batch's export and the nearest
-- prediction to a lab sample; (batch_id, scan_seq, id) for a lab sample
-- named by its scan; (model_version, ts, id) for one model's records;
-- prediction_id for the active, shadow and re-scoring records of one
-- spectrum.
CREATE INDEX predlog_records_ts ON predlog_records (ts, id);
CREATE INDEX predlog_records_batch_ts ON predlog_records (batch_id, ts, id);
CREATE INDEX predlog_records_batch_seq ON predlog_records (batch_id, scan_seq, id);
CREATE INDEX predlog_records_model_ts ON predlog_records (model_version, ts, id);
CREATE INDEX predlog_records_prediction ON predlog_records (prediction_id);

-- Retention deletes the oldest rows continuously under a size bound; the
-- space of deleted rows is reused only once vacuumed, so autovacuum runs
-- at 2 % of dead rows here rather than PostgreSQL's default 20 %.
ALTER TABLE predlog_records SET (autovacuum_vacuum_scale_factor = 0.02);

-- The sum of the footprints of the records stored, one row kept in the
-- transaction of every append and deletion: Size reads it instead of
-- scanning the table, since the relation sizes do not fall when rows are
-- deleted.
CREATE TABLE predlog_usage (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    records   bigint NOT NULL DEFAULT 0,
    bytes     bigint NOT NULL DEFAULT 0
);
INSERT INTO predlog_usage DEFAULT VALUES;

-- +goose Down
DROP TABLE predlog_usage;
DROP TABLE predlog_records;
DROP TABLE predlog_axes;
