package postgres

// LockNamespace lets the tests find a session's advisory lock.
func (db *DB) LockNamespace() int64 { return db.lockNS }
