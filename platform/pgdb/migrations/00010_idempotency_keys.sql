-- +goose Up
-- The idempotency keys of training uploads (package trainer/jobs/pgjobs,
-- jobs.KeyStore): one row per key, shared by every replica, so that a
-- retry reaching any replica finds the job the first request created.
-- The primary key makes a claim atomic across replicas: of two inserts
-- of one key, one wins. created_at is the claiming server's clock, the
-- one the TTL and the bound on the number of keys are measured in.
CREATE TABLE idempotency_keys (
    key          text PRIMARY KEY,
    request_hash text NOT NULL,
    job_id       text NOT NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
