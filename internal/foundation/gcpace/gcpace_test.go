package gcpace

import (
	"context"
	"os"
	"runtime/debug"
	"testing"
)

// The heap may grow by gcHeadroom between collections while little is
// live, and by what is live (Go's default) once that is more.
func TestGCPercentLetsTheHeapGrowByTheHeadroomAtLeast(t *testing.T) {
	for _, tt := range []struct {
		name   string
		marked uint64
		want   int
	}{
		{"nothing marked yet", 0, gcMaxPercent},
		{"a little", 1 << 20, gcMaxPercent},
		{"the service's tables", 9 << 20, 350},
		{"half the headroom", gcHeadroom / 2, 200},
		{"the headroom", gcHeadroom, 100},
		{"more", 4 * gcHeadroom, 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := gcPercentFor(tt.marked); got != tt.want {
				t.Fatalf("gcPercentFor(%d) = %d, want %d", tt.marked, got, tt.want)
			}
		})
	}
}

// GOGC from the environment is Go's to apply: Pace leaves it alone.
func TestPaceGCLeavesGOGCFromTheEnvironmentAlone(t *testing.T) {
	const before = 123 // no step of gcPercentFor
	for _, tt := range []struct {
		name string
		env  *string
		want int
	}{
		{"GOGC unset", nil, 0}, // paced: one of gcPercentFor's
		{"GOGC set", ptr("100"), before},
		{"GOGC set empty", ptr(""), before},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old, had := os.LookupEnv("GOGC")
			t.Cleanup(func() {
				if had {
					os.Setenv("GOGC", old)
				} else {
					os.Unsetenv("GOGC")
				}
			})
			if tt.env == nil {
				os.Unsetenv("GOGC")
			} else {
				os.Setenv("GOGC", *tt.env)
			}
			prev := debug.SetGCPercent(before)
			t.Cleanup(func() { debug.SetGCPercent(prev) })
			ctx, cancel := context.WithCancel(context.Background())
			Pace(ctx)
			cancel()
			got := debug.SetGCPercent(before)
			paced := got != before && got >= 100 && got <= gcMaxPercent && got%50 == 0
			if tt.env == nil && !paced || tt.env != nil && got != tt.want {
				t.Fatalf("GOGC after Pace = %d, want %d", got, tt.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }
