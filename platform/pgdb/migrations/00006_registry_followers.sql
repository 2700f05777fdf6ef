-- +goose Up
-- The index revision each replica serves (its active and shadow models
-- are the ones that revision names), so that a load answers once the
-- whole fleet serves the new model. seen_at is refreshed at every
-- catch-up (at least every 2 s); a replica not seen for a few seconds is
-- not waited for.
CREATE TABLE registry_followers (
    replica_id text PRIMARY KEY,
    revision   bigint NOT NULL,
    seen_at    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE registry_followers;
