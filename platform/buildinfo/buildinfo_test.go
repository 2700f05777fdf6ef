package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	base := Info{Version: "devel", GoVersion: "go0", Revision: Unknown}
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want Info
	}{
		{"nothing stamped", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, base},
		{"a release with its commit", debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Version: "v1.4.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0b4beba1"}, {Key: "vcs.modified", Value: "false"}}},
			Info{Version: "v1.4.0", GoVersion: "go1.25.1", Revision: "0b4beba1"}},
		{"a dirty tree", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: "0b4beba1"}}},
			Info{Version: "devel", GoVersion: "go0", Revision: "0b4beba1-dirty"}},
		{"modified without a revision", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}}, base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fromBuildInfo(&tc.bi, base); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestReadRunningBinary(t *testing.T) {
	got := Read()
	if got.GoVersion != runtime.Version() || got.Version == "" || got.Revision == "" {
		t.Errorf("Read() = %+v", got)
	}
}
