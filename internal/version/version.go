// Package version says what a binary is: rdmatopo's version and git
// commit, and the Volcano release it is built for. Version and GitCommit
// may be set at link time (-ldflags "-X
// github.com/rdmatopo/rdmatopo/internal/version.Version=v0.3.0"); without
// that, the commit comes from the Go build's VCS stamp.
package version

import (
	"runtime"
	"runtime/debug"
)

// VolcanoModule is the Volcano module rdmatopo is built against.
const VolcanoModule = "volcano.sh/volcano"

// VolcanoRelease is the Volcano release rdmatopo's scheduler is a drop-in
// for, used when the binary carries no module information.
const VolcanoRelease = "v1.10.0"

// Set at link time, or read from the build information.
var (
	// Version is rdmatopo's version ("dev" for an unreleased build).
	Version = ""
	// GitCommit is the commit the binary was built from.
	GitCommit = ""
)

// Info describes a build.
type Info struct {
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit"`
	// Volcano is the version of the Volcano module compiled in.
	Volcano string `json:"volcano"`
	Go      string `json:"go"`
}

// Get returns the build's information.
func Get() Info {
	info := Info{Version: Version, GitCommit: GitCommit, Volcano: VolcanoRelease, Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == VolcanoModule {
				info.Volcano = d.Version
				if d.Replace != nil && d.Replace.Version != "" {
					info.Volcano = d.Replace.Version
				}
			}
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.GitCommit == "" {
					info.GitCommit = s.Value
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && GitCommit == "" && info.GitCommit != "" {
			info.GitCommit += "-dirty"
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	if info.GitCommit == "" {
		info.GitCommit = "unknown"
	}
	return info
}
