package sandboxcatalog

import (
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
