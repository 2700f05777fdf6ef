-- Version 2 of the prediction log: the T2 and Q contributions of a
-- prediction, when its reply carried them or a limit was exceeded, as
-- the blob predlog.EncodeContributions writes; NULL otherwise.

-- +goose Up
ALTER TABLE predictions ADD COLUMN contributions BLOB;

-- +goose Down
ALTER TABLE predictions DROP COLUMN contributions;
