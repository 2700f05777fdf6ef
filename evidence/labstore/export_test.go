package labstore

// SetMaxResults lowers s's bound on stored results, so that a test can
// reach it.
func SetMaxResults(s *SQLite, n int64) { s.maxResults = n }
