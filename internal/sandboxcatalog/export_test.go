package sandboxcatalog

import (
	"context"
	"database/sql"
	"fmt"
)

// SetUserVersionForTest writes PRAGMA user_version of the catalog at path.
func SetUserVersionForTest(path string, v int) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(fmt.Sprintf("PRAGMA user_version = %d", v))
	return err
}

// SetVersionForTest writes the PostgreSQL catalog's schema version.
func (c *Postgres) SetVersionForTest(ctx context.Context, v int) error {
	_, err := c.pool.Exec(ctx, c.expand("UPDATE {schema}.sandbox_catalog_version SET version = $1"), v)
	return err
}
