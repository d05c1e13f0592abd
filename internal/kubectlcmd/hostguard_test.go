package kubectlcmd

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHostGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	loopback := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8089}
	podIP := &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 8089}
	cases := map[string]struct {
		addr  net.Addr
		extra []string
		host  string
		want  int
	}{
		"loopback by IP":              {addr: loopback, host: "127.0.0.1:8089", want: http.StatusOK},
		"localhost":                   {addr: loopback, host: "localhost:8089", want: http.StatusOK},
		"localhost, other port (ssh)": {addr: loopback, host: "LocalHost:9000", want: http.StatusOK},
		"IPv6 loopback":               {addr: loopback, host: "[::1]:8089", want: http.StatusOK},
		"a foreign name":              {addr: loopback, host: "evil.example:8089", want: http.StatusMisdirectedRequest},
		"a foreign name, no port":     {addr: loopback, host: "evil.example", want: http.StatusMisdirectedRequest},
		"localhost as a subdomain":    {addr: loopback, host: "localhost.evil.example:8089", want: http.StatusMisdirectedRequest},
		"the listen IP":               {addr: podIP, host: "10.1.2.3:8089", want: http.StatusOK},
		"another IP than the listen":  {addr: podIP, host: "10.9.9.9:8089", want: http.StatusMisdirectedRequest},
		"an allowed name":             {addr: podIP, extra: []string{"Fabric.Example.com"}, host: "fabric.example.com.:8089", want: http.StatusOK},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g, err := newHostGuard(tc.addr, tc.extra, ok)
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Host = tc.host
			rec := httptest.NewRecorder()
			g.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("Host %q: %d %q, want %d", tc.host, rec.Code, rec.Body.String(), tc.want)
			}
		})
	}
}

func TestWarnBeyondLoopback(t *testing.T) {
	cases := map[string]struct {
		addr net.Addr
		warn bool
	}{
		"127.0.0.1":     {&net.TCPAddr{IP: net.ParseIP("127.0.0.1")}, false},
		"::1":           {&net.TCPAddr{IP: net.ParseIP("::1")}, false},
		"all (0.0.0.0)": {&net.TCPAddr{IP: net.ParseIP("0.0.0.0")}, true},
		"all (::)":      {&net.TCPAddr{IP: net.IPv6unspecified}, true},
		"a pod IP":      {&net.TCPAddr{IP: net.ParseIP("10.1.2.3")}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			warnBeyondLoopback(&b, tc.addr)
			if (b.Len() > 0) != tc.warn {
				t.Errorf("warning %q, want one: %v", b.String(), tc.warn)
			}
		})
	}
}
