package testenv

import (
	"context"
	"os/exec"
	"runtime/debug"
)

// GoCommand returns the go command a test runs (go build, go test of
// another module's package), with the build flags this test binary was
// built with (-race, -gcflags, -ldflags, -tags, -trimpath). go test has
// then compiled every package the command needs into the build cache
// already, and the command compiles only its main package and links.
// Built without -race, as they were, the service, countersctl and the
// client's examples compiled the whole service and the standard library
// a second time on an empty build cache, as a fresh machine and CI have:
// 250 of the cold run's CPU seconds.
func GoCommand(ctx context.Context, verb string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "go", append(append([]string{verb}, BuildFlags()...), args...)...)
}

// BuildFlags returns the flags that this binary was built with and that
// change what the compiler or linker makes, as its build information
// (which the go command records) says.
func BuildFlags() []string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	var flags []string
	for _, s := range info.Settings {
		switch s.Key {
		case "-race", "-msan", "-asan", "-trimpath":
			if s.Value == "true" {
				flags = append(flags, s.Key)
			}
		case "-gcflags", "-asmflags", "-ldflags", "-tags":
			flags = append(flags, s.Key+"="+s.Value)
		}
	}
	return flags
}
