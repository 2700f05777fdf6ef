package pglab

// SetMaxResults lowers s's bound on stored results, so that a test can
// reach it.
func SetMaxResults(s *Store, n int64) { s.maxResults = n }
