package memo

import "testing"

// A memory answers what it was told, holds at most its bound, and starts
// over when full.
func TestAMemoryHoldsItsBoundAndStartsOver(t *testing.T) {
	tests := []struct {
		name    string
		puts    []int
		wantLen int
		known   []int
		unknown []int
	}{
		{"under the bound", []int{1, 2}, 2, []int{1, 2}, []int{3}},
		{"at the bound", []int{1, 2, 3}, 3, []int{1, 2, 3}, nil},
		{"past the bound it starts over", []int{1, 2, 3, 4}, 1, []int{4}, []int{1, 2, 3}},
		{"a key again replaces its value without growing", []int{1, 1, 1}, 1, []int{1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New[int, int](3)
			for _, k := range tt.puts {
				m.Put(k, k*10)
			}
			if m.Len() != tt.wantLen {
				t.Fatalf("Len = %d, want %d", m.Len(), tt.wantLen)
			}
			for _, k := range tt.known {
				if v, ok := m.Get(k); !ok || v != k*10 {
					t.Fatalf("Get(%d) = %d, %v; want %d", k, v, ok, k*10)
				}
			}
			for _, k := range tt.unknown {
				if _, ok := m.Get(k); ok {
					t.Fatalf("Get(%d) found a value it should have forgotten", k)
				}
			}
		})
	}
}
