package kubectlcmd

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// hostGuard answers only requests whose Host header names the server: a
// page reached under another name is refused with 421 Misdirected
// Request. This defeats DNS rebinding, where a web page the user visits
// points its own domain name at the dashboard's address and reads the
// cluster data through the user's browser: that request carries the
// attacker's name.
//
// Allowed are localhost, the loopback addresses, the IP the server listens
// on (every address of the machine when it listens on all of them), and
// the names in extra. The port is not checked, so that a tunnel to
// another local port (ssh -L) still works.
type hostGuard struct {
	allowed map[string]bool
	next    http.Handler
}

// newHostGuard guards next for a server listening on addr.
func newHostGuard(addr net.Addr, extra []string, next http.Handler) (*hostGuard, error) {
	g := &hostGuard{allowed: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}, next: next}
	for _, h := range extra {
		g.allowed[normalHost(h)] = true
	}
	ip := listenIP(addr)
	switch {
	case ip == nil:
	case ip.IsUnspecified():
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return nil, fmt.Errorf("list the machine's addresses for the Host check: %w", err)
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				g.allowed[n.IP.String()] = true
			}
		}
	default:
		g.allowed[ip.String()] = true
	}
	return g, nil
}

func (g *hostGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if !g.allowed[normalHost(host)] {
		http.Error(w, fmt.Sprintf("host %q is not this dashboard's address (use localhost or the listen address, or add it with --allow-host)", r.Host),
			http.StatusMisdirectedRequest)
		return
	}
	g.next.ServeHTTP(w, r)
}

// normalHost lowercases a host name, drops IPv6 brackets and a trailing
// dot, and writes IPs in their canonical form.
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}

// listenIP is the IP a listener is bound to (nil for a non-TCP address).
func listenIP(addr net.Addr) net.IP {
	if a, ok := addr.(*net.TCPAddr); ok {
		return a.IP
	}
	return nil
}

// warnBeyondLoopback tells the user, on w, when the dashboard can be
// reached from other machines: it serves cluster data without
// authentication.
func warnBeyondLoopback(w io.Writer, addr net.Addr) {
	if ip := listenIP(addr); ip != nil && !ip.IsLoopback() {
		fmt.Fprintf(w, "warning: the dashboard listens on %s, beyond loopback: anyone who can reach that address reads the cluster's nodes, jobs and pods without authentication (with your credentials). Prefer --listen 127.0.0.1:PORT and an ssh tunnel.\n", addr)
	}
}
