package coalesce

// Pending is how many increments wait in s's queue.
func Pending(s *Store) int { return s.c.q.Len() }
