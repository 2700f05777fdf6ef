-- +goose Up
-- The shadow comparison each replica has made, posted every second, so
-- that GET /model/shadow on any replica shows the fleet's: counts add
-- across replicas, means combine weighted by them.
CREATE TABLE shadow_comparisons (
    replica_id text PRIMARY KEY,
    version    text NOT NULL,
    comparison jsonb NOT NULL,
    posted_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE shadow_comparisons;
