-- +goose Up
-- Training jobs (package trainer/jobs/pgjobs): one record per job, never
-- removed (a list cursor names a job and must outlive a restart).
--
-- record is the job's JSON exactly as the embedded store (jobfiles) writes
-- it, kept as bytes rather than jsonb: jsonb refuses the \u0000 an
-- operator's notes may hold and rewrites the text it is given. status and
-- updated_at repeat what a fleet needs to query without decoding records.
--
-- lease_owner, lease_until and attempts are reserved for the runner's
-- lease (a replica claiming a queued job, renewing the claim, and the
-- retries after a replica died holding one). Nothing reads or writes them
-- yet; Save leaves them as they are.
CREATE TABLE training_jobs (
    job_id      text PRIMARY KEY,
    status      text NOT NULL,
    record      bytea NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    lease_owner text,
    lease_until timestamptz,
    attempts    integer NOT NULL DEFAULT 0
);

-- The saved data sets of queued jobs (jobs.UploadSpool): one row per job
-- with the size, and the bytes in chunks (of 1 MiB, the last shorter), so
-- that a data set of hundreds of MB is written and read one chunk at a
-- time. A data set is written in one transaction: whole or not at all.
CREATE TABLE training_job_uploads (
    job_id     text PRIMARY KEY,
    size       bigint NOT NULL CHECK (size >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE training_job_upload_chunks (
    job_id text NOT NULL REFERENCES training_job_uploads (job_id) ON DELETE CASCADE,
    seq    integer NOT NULL CHECK (seq >= 0),
    data   bytea NOT NULL,
    PRIMARY KEY (job_id, seq)
);
-- Encoded data sets compress poorly: store the chunks out of line without
-- spending CPU on trying.
ALTER TABLE training_job_upload_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- +goose Down
DROP TABLE training_job_upload_chunks;
DROP TABLE training_job_uploads;
DROP TABLE training_jobs;
