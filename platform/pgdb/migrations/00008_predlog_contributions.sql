-- +goose Up
-- The T2 and Q contributions of a logged prediction, when its reply
-- carried them or a limit was exceeded, as the blob
-- predlog.EncodeContributions writes (at most a few kB); NULL otherwise.
-- A record's footprint counts them.
ALTER TABLE predlog_records ADD COLUMN contributions bytea;

-- +goose Down
ALTER TABLE predlog_records DROP COLUMN contributions;
