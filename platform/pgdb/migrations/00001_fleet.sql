-- +goose Up
-- The replicas of a fleet: each writes its row at start and refreshes
-- heartbeat_at while it runs (GET /fleet).
CREATE TABLE fleet_replicas (
    replica_id     text PRIMARY KEY,
    host           text NOT NULL,
    addresses      jsonb NOT NULL DEFAULT '{}'::jsonb,
    version_served text NOT NULL DEFAULT '',
    shadow_version text NOT NULL DEFAULT '',
    ready          boolean NOT NULL DEFAULT false,
    started_at     timestamptz NOT NULL DEFAULT now(),
    heartbeat_at   timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE fleet_replicas;
