package postgres

import "time"

// LockNamespace lets the tests find a session's advisory lock.
func (db *DB) LockNamespace() int64 { return db.lockNS }

// SetWriteRetry sets how long a write whose connection was lost is retried.
func (db *DB) SetWriteRetry(d time.Duration) { db.retryFor = d }
