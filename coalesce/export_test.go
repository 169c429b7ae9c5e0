package coalesce

// Pending is how many increments wait in s's queue.
func Pending(s *Store) int {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return len(s.c.pending)
}
