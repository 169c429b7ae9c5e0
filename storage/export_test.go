package storage

// SetLabelSlot sets the size of s's label slots, so that a test fills
// them with a few writes.
func SetLabelSlot(s *CounterStore, size int) {
	if l := s.seam.tallies.labels; l != nil {
		l.slot = size
	}
}
