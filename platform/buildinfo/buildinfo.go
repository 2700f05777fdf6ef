// Package buildinfo reads what the Go toolchain stamped into the binary:
// the module version, the Go version and the commit it was built from.
// The Makefile builds with -buildvcs=auto, so a binary built from a git
// checkout carries its commit without any -ldflags; a test binary, or
// one built outside a checkout, carries none.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Unknown stands for a value the binary does not carry.
const Unknown = "unknown"

// Info is the build's description.
type Info struct {
	// Version is the module version: a pseudo-version of the commit when
	// go build stamped one, else "devel" (go build reports "(devel)").
	Version string
	// GoVersion is the toolchain's version, e.g. "go1.25.1".
	GoVersion string
	// Revision is the commit (vcs.revision), with "-dirty" appended when
	// the tree had changes (vcs.modified); Unknown when not stamped.
	Revision string
}

// Read returns the running binary's build information. Go stamps the
// commit when it builds inside a git clone; it does not recognise a git
// worktree (whose .git is a file), whose builds read Unknown.
func Read() Info {
	info := Info{Version: "devel", GoVersion: runtime.Version(), Revision: Unknown}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	return fromBuildInfo(bi, info)
}

// fromBuildInfo fills info from bi, keeping info's values where bi has
// none.
func fromBuildInfo(bi *debug.BuildInfo, info Info) Info {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		info.Version = v
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if s.Value != "" {
				info.Revision = s.Value
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && info.Revision != Unknown {
		info.Revision += "-dirty"
	}
	return info
}
