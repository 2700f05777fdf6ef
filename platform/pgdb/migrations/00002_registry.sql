-- +goose Up
-- The model registry (registry/pgstore): the index, committed whole with
-- a compare-and-swap on its revision, and the model artifacts, stored in
-- chunks so that no statement carries a whole model file.

-- Revisions come from a sequence, never from the row: a sequence never
-- hands out a number twice, so a revision cannot repeat even if an
-- operator deletes the row and the registry starts over.
CREATE SEQUENCE registry_index_revision;

-- The index: at most one row (singleton), replaced by each commit.
-- models and removing are JSON in store.Entry's and store.Removal's own
-- encoding, kept as json (not jsonb) so that they read back byte for
-- byte as committed.
CREATE TABLE registry_index (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    revision     bigint NOT NULL,
    active       text NOT NULL,
    shadow       text NOT NULL,
    models       json NOT NULL,
    removing     json NOT NULL,
    committed_at timestamptz NOT NULL DEFAULT now()
);

CREATE SEQUENCE registry_artifact_ids;

-- One row per artifact put. A quarantined artifact keeps its row (and
-- its chunks), with when and why it was set aside and the sidecar it had;
-- the name is then free for a new artifact, so names are unique only
-- among the artifacts in service. size_bytes and sha256 are what Put
-- measured; Open and Delete check the chunks themselves.
CREATE TABLE registry_artifacts (
    id                  bigint PRIMARY KEY DEFAULT nextval('registry_artifact_ids'),
    name                text NOT NULL,
    size_bytes          bigint NOT NULL CHECK (size_bytes >= 0),
    sha256              text NOT NULL,
    stored_at           timestamptz NOT NULL DEFAULT now(),
    quarantined_at      timestamptz,
    quarantine_reason   text,
    quarantined_sidecar bytea
);
ALTER SEQUENCE registry_artifact_ids OWNED BY registry_artifacts.id;
CREATE UNIQUE INDEX registry_artifacts_in_service ON registry_artifacts (name) WHERE quarantined_at IS NULL;

-- An artifact's content, in order of seq. Put writes the chunks before
-- the artifact's row, in the same transaction, so the foreign key is
-- checked at commit.
CREATE TABLE registry_artifact_chunks (
    artifact_id bigint NOT NULL REFERENCES registry_artifacts (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    seq         integer NOT NULL CHECK (seq >= 0),
    data        bytea NOT NULL,
    PRIMARY KEY (artifact_id, seq)
);

-- The sidecars of .joblib artifacts in service: written before their
-- artifact, so keyed by name alone.
CREATE TABLE registry_sidecars (
    name      text PRIMARY KEY,
    data      bytea NOT NULL,
    stored_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE registry_sidecars;
DROP TABLE registry_artifact_chunks;
DROP TABLE registry_artifacts;
DROP TABLE registry_index;
DROP SEQUENCE registry_index_revision;
