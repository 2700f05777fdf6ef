package labstore

import "time"

// SetMaxResults lowers s's bound on stored results, so that a test can
// reach it.
func SetMaxResults(s *SQLite, n int64) { s.maxResults = n }

// SetBusyTimeout sets how long the stores opened after it wait for
// another process's transaction.
func SetBusyTimeout(d time.Duration) { busyTimeout = d }
