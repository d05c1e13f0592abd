package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "help lists both commands", args: []string{"--help"}, wantCode: 0, wantStdout: "soak"},
		{name: "no command is help", args: nil, wantCode: 0, wantStdout: "bench"},
		{name: "bench reports its bad flags", args: []string{"bench", "--no-such-flag"}, wantCode: exitUsage, wantStderr: "no-such-flag"},
		{name: "soak reports its bad flags", args: []string{"soak", "--no-such-flag"}, wantCode: exitUsage, wantStderr: "no-such-flag"},
		{name: "soak validates its values", args: []string{"soak", "--nodes", "0"}, wantCode: exitUsage, wantStderr: "rdmatopo-dev soak: nodes"},
		{name: "unknown command", args: []string{"simulate"}, wantCode: exitUsage, wantStderr: `unknown command "simulate"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			require.Equal(t, tc.wantCode, code, "stderr: %s", stderr.String())
			require.Contains(t, stdout.String(), tc.wantStdout)
			require.Contains(t, stderr.String(), tc.wantStderr)
		})
	}
}
