package placement

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseContract(t *testing.T) {
	cases := map[string]struct {
		ann     map[string]string
		want    Contract
		wantErr string
	}{
		"none: defaults": {want: DefaultContract()},
		"Volcano's annotations: hard, tier 1 is s0": {
			ann:  map[string]string{"volcano.sh/network-topology-mode": "hard", "volcano.sh/network-topology-highest-tier": "1"},
			want: Contract{Mode: ModeHard, HighestTier: TierS0},
		},
		"Volcano's annotations: tier 2 is s1, higher is cluster": {
			ann:  map[string]string{"volcano.sh/network-topology-mode": "soft", "volcano.sh/network-topology-highest-tier": "3"},
			want: Contract{Mode: ModeSoft, HighestTier: TierCluster},
		},
		"Volcano's hard mode admits max-wait": {
			ann:  map[string]string{"volcano.sh/network-topology-mode": "hard", "volcano.sh/network-topology-highest-tier": "2", "rdmatopo.io/max-wait": "5m"},
			want: Contract{Mode: ModeHard, HighestTier: TierS1, MaxWait: 5 * time.Minute},
		},
		"ours win over Volcano's and the override is noted": {
			ann: map[string]string{"volcano.sh/network-topology-mode": "soft", "rdmatopo.io/mode": "hard",
				"volcano.sh/network-topology-highest-tier": "2", "rdmatopo.io/highest-tier": "s0"},
			want: Contract{Mode: ModeHard, HighestTier: TierS0, Overridden: []string{
				`volcano.sh/network-topology-mode="soft" (rdmatopo.io/mode="hard" wins)`,
				`volcano.sh/network-topology-highest-tier="2" (rdmatopo.io/highest-tier="s0" wins)`}},
		},
		"agreeing aliases are no override": {
			ann:  map[string]string{"volcano.sh/network-topology-mode": "hard", "rdmatopo.io/mode": "hard", "volcano.sh/network-topology-highest-tier": "1", "rdmatopo.io/highest-tier": "s0"},
			want: Contract{Mode: ModeHard, HighestTier: TierS0},
		},
		"Volcano's tier not a number": {
			ann:     map[string]string{"volcano.sh/network-topology-highest-tier": "s0"},
			want:    Contract{Mode: ModeHard, HighestTier: TierCluster},
			wantErr: `annotation volcano.sh/network-topology-highest-tier: "s0" is not a tier (want an integer of 0 or more: 1 is s0, 2 is s1, higher is cluster)`,
		},
		"Volcano's mode misspelt": {
			ann:     map[string]string{"volcano.sh/network-topology-mode": "strict"},
			want:    Contract{Mode: ModeHard, HighestTier: TierCluster},
			wantErr: `annotation volcano.sh/network-topology-mode: "strict" is not a mode (want hard or soft)`,
		},
		"hard s0": {
			ann:  map[string]string{"rdmatopo.io/mode": "hard", "rdmatopo.io/highest-tier": "s0"},
			want: Contract{Mode: ModeHard, HighestTier: TierS0},
		},
		"hard with max-wait": {
			ann:  map[string]string{"rdmatopo.io/mode": "hard", "rdmatopo.io/max-wait": "10m"},
			want: Contract{Mode: ModeHard, HighestTier: TierS1, MaxWait: 10 * time.Minute},
		},
		"scheduler keys are known": {
			ann:  map[string]string{"rdmatopo.io/placement": "{}", "rdmatopo.io/waiting-since": "2026-01-01T00:00:00Z", "other.io/x": "y"},
			want: DefaultContract(),
		},
		"upper-case mode": {
			ann:     map[string]string{"rdmatopo.io/mode": "HARD"},
			want:    DefaultContract(),
			wantErr: `annotation rdmatopo.io/mode: "HARD" is not a mode (want hard or soft)`,
		},
		"spaces around a tier": {
			ann:     map[string]string{"rdmatopo.io/highest-tier": " s0"},
			want:    DefaultContract(),
			wantErr: `annotation rdmatopo.io/highest-tier: " s0" is not a tier (want node, s0, s1 or cluster)`,
		},
		"empty tier": {
			ann:     map[string]string{"rdmatopo.io/highest-tier": ""},
			want:    DefaultContract(),
			wantErr: `annotation rdmatopo.io/highest-tier: "" is not a tier (want node, s0, s1 or cluster)`,
		},
		"misspelt key": {
			ann:     map[string]string{"rdmatopo.io/Mode": "hard"},
			want:    DefaultContract(),
			wantErr: "annotation rdmatopo.io/Mode: unknown key (the job contract has rdmatopo.io/mode, rdmatopo.io/highest-tier, rdmatopo.io/max-wait, rdmatopo.io/segment-size and rdmatopo.io/segment-tier)",
		},
		"bad duration": {
			ann:     map[string]string{"rdmatopo.io/mode": "hard", "rdmatopo.io/max-wait": "ten minutes"},
			want:    Contract{Mode: ModeHard, HighestTier: TierS1},
			wantErr: `annotation rdmatopo.io/max-wait: "ten minutes" is not a duration (e.g. 30s, 10m, 1h30m)`,
		},
		"negative duration": {
			ann:     map[string]string{"rdmatopo.io/mode": "hard", "rdmatopo.io/max-wait": "-1m"},
			want:    Contract{Mode: ModeHard, HighestTier: TierS1},
			wantErr: `annotation rdmatopo.io/max-wait: "-1m" must be positive`,
		},
		"max-wait on a soft gang": {
			ann:     map[string]string{"rdmatopo.io/max-wait": "1m"},
			want:    DefaultContract(),
			wantErr: "annotation rdmatopo.io/max-wait: needs rdmatopo.io/mode: hard (a soft gang never waits for its tier)",
		},
		"segments of 4 under one S0": {
			ann:  map[string]string{"rdmatopo.io/segment-size": "4", "rdmatopo.io/segment-tier": "s0"},
			want: Contract{Mode: ModeSoft, HighestTier: TierS1, Segment: Segment{Size: 4, Tier: TierS0}},
		},
		"segment size without a tier": {
			ann:     map[string]string{"rdmatopo.io/segment-size": "4"},
			want:    DefaultContract(),
			wantErr: "annotation rdmatopo.io/segment-size: needs rdmatopo.io/segment-tier (node, s0 or s1)",
		},
		"segment tier without a size": {
			ann:     map[string]string{"rdmatopo.io/segment-tier": "node"},
			want:    DefaultContract(),
			wantErr: "annotation rdmatopo.io/segment-tier: needs rdmatopo.io/segment-size",
		},
		"segment size zero": {
			ann:     map[string]string{"rdmatopo.io/segment-size": "0", "rdmatopo.io/segment-tier": "s0"},
			want:    DefaultContract(),
			wantErr: `annotation rdmatopo.io/segment-size: "0" is not a segment size (want a positive integer)`,
		},
		"segment tier cluster": {
			ann:     map[string]string{"rdmatopo.io/segment-size": "2", "rdmatopo.io/segment-tier": "cluster"},
			want:    DefaultContract(),
			wantErr: `annotation rdmatopo.io/segment-tier: "cluster" is not a segment tier (want node, s0 or s1)`,
		},
		"two problems, sorted by key": {
			ann:     map[string]string{"rdmatopo.io/mode": "strict", "rdmatopo.io/highest-tier": "spine"},
			want:    DefaultContract(),
			wantErr: `annotation rdmatopo.io/highest-tier: "spine" is not a tier (want node, s0, s1 or cluster); annotation rdmatopo.io/mode: "strict" is not a mode (want hard or soft)`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseContract(tc.ann)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("contract (-want,+got):\n%s", diff)
			}
			checkContractError(t, err, tc.wantErr)
		})
	}
}

// checkContractError checks that err wraps ErrInvalidContract with the
// message want after its prefix, or is nil when want is empty.
func checkContractError(t *testing.T, err error, want string) {
	t.Helper()
	got := ""
	if err != nil {
		if !errors.Is(err, ErrInvalidContract) {
			t.Errorf("error %v does not wrap ErrInvalidContract", err)
		}
		got = err.Error()[len(ErrInvalidContract.Error())+2:]
	}
	if got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}
