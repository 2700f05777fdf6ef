package race

import (
	"runtime/debug"
	"testing"
)

// TestEnabledMatchesTheBuild: the constant agrees with the build settings
// the go command recorded in the binary (-race=true when built with it).
func TestEnabledMatchesTheBuild(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("the binary carries no build information")
	}
	built := false
	for _, s := range info.Settings {
		if s.Key == "-race" {
			built = s.Value == "true"
		}
	}
	if Enabled != built {
		t.Fatalf("Enabled is %v in a binary built with -race=%v", Enabled, built)
	}
}
