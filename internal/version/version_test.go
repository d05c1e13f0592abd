package version

import (
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	cases := []struct {
		name             string
		version, commit  string
		wantVer, wantSHA string
	}{
		{name: "unset", wantVer: "dev"},
		{name: "set at link time", version: "v1.2.3", commit: "abc123", wantVer: "v1.2.3", wantSHA: "abc123"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			Version, GitCommit = tc.version, tc.commit
			t.Cleanup(func() { Version, GitCommit = "", "" })
			got := Get()
			if got.Version != tc.wantVer {
				t.Errorf("Version = %q, want %q", got.Version, tc.wantVer)
			}
			if tc.wantSHA != "" && got.GitCommit != tc.wantSHA {
				t.Errorf("GitCommit = %q, want %q", got.GitCommit, tc.wantSHA)
			}
			if got.GitCommit == "" {
				t.Error("GitCommit is empty")
			}
			if !strings.HasPrefix(got.Volcano, "v1.10.") {
				t.Errorf("Volcano = %q, want the v1.10 release", got.Volcano)
			}
			if !strings.HasPrefix(got.Go, "go") {
				t.Errorf("Go = %q", got.Go)
			}
		})
	}
}
