package labstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"ramanserve/platform/sqlschema"
)

// migrationFiles holds the store's goose migrations, NNNNN_name.sql:
// migration N takes the schema from version N-1 to N (version N of
// schema_version before goose). Append only: a released migration is
// never edited.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrate brings the schema up to the newest migration (package
// sqlschema); a file from a newer server is refused with ErrNewerSchema.
func migrate(ctx context.Context, db *sql.DB) error {
	migrations, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("labstore: %w", err)
	}
	err = sqlschema.Migrate(ctx, db, migrations, ErrNewerSchema)
	if err != nil && !errors.Is(err, ErrNewerSchema) { // which names the store
		return fmt.Errorf("labstore: %w", err)
	}
	return err
}
