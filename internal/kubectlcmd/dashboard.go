package kubectlcmd

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

//go:embed dashboard.html
var dashboardHTML string

var dashboardPage = template.Must(template.New("dashboard").Parse(dashboardHTML))

// DefaultListen is the dashboard's default address: loopback only, on a port
// other than the scheduler's metrics (:8080).
const DefaultListen = "127.0.0.1:8090"

func newDashboardCommand(o *Options) *cobra.Command {
	var listen string
	var allowHosts []string
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "dashboard [--listen 127.0.0.1:8090]",
		Short: "Serve a live fabric page: the map of the cluster, each job in its colour, pending gangs with their reasons",
		Long: "dashboard serves a read-only page that redraws the live fabric map every --interval.\n" +
			"Endpoints: / (the page), /api/state.json (jobs, topology and the SVG), /api/map.svg, /healthz.\n" +
			"Only requests whose Host header is localhost, a loopback address, the listen address or an --allow-host\n" +
			"name are answered (421 otherwise), and listening beyond loopback prints a warning: the page is not authenticated.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if interval < time.Second {
				return Usagef("--interval must be at least 1s")
			}
			if _, err := o.Clients(); err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			guard, err := newHostGuard(ln.Addr(), allowHosts,
				NewDashboard(func(ctx context.Context) (*State, error) { return buildState(ctx, o) }, interval))
			if err != nil {
				ln.Close()
				return err
			}
			srv := &http.Server{Handler: guard, ReadHeaderTimeout: 10 * time.Second}
			warnBeyondLoopback(o.stderr, ln.Addr())
			fmt.Fprintf(o.stdout, "Serving the fabric dashboard on http://%s/ (read-only; Ctrl-C stops)\n", ln.Addr())
			ctx := cmd.Context()
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			select {
			case <-ctx.Done():
				shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(shut)
				return nil
			case err := <-done:
				if errors.Is(err, http.ErrServerClosed) {
					return nil
				}
				return err
			}
		},
	}
	cmd.Flags().StringVar(&listen, "listen", DefaultListen, "address to serve on (loopback by default: the page has no authentication)")
	cmd.Flags().StringSliceVar(&allowHosts, "allow-host", nil, "further host names the page may be opened under (localhost, loopback and the listen address always may; other Host headers get 421)")
	cmd.Flags().DurationVar(&interval, "interval", 3*time.Second, "how often the page refreshes")
	return cmd
}

// NewDashboard returns the dashboard's handler. read computes the live
// state; a state younger than a third of the refresh interval is served
// again rather than read anew, so many open pages cost one read.
func NewDashboard(read func(context.Context) (*State, error), interval time.Duration) http.Handler {
	d := &dashboard{read: read, interval: interval, maxAge: interval / 3}
	mux := http.NewServeMux()
	mux.HandleFunc("/", d.page)
	mux.HandleFunc("/api/state.json", d.stateJSON)
	mux.HandleFunc("/api/map.svg", d.mapSVG)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return readOnly(mux)
}

// readOnly refuses every method but GET and HEAD.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

type dashboard struct {
	read     func(context.Context) (*State, error)
	interval time.Duration
	maxAge   time.Duration

	mu   sync.Mutex
	last *State
	at   time.Time
}

// state returns a fresh enough state.
func (d *dashboard) state(ctx context.Context) (*State, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last != nil && time.Since(d.at) < d.maxAge {
		return d.last, nil
	}
	ctx, cancel := context.WithTimeout(ctx, LiveTimeout)
	defer cancel()
	st, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	d.last, d.at = st, time.Now()
	return st, nil
}

func (d *dashboard) page(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = dashboardPage.Execute(w, struct{ IntervalMillis int64 }{d.interval.Milliseconds()})
}

func (d *dashboard) stateJSON(w http.ResponseWriter, r *http.Request) {
	st, err := d.state(r.Context())
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}

func (d *dashboard) mapSVG(w http.ResponseWriter, r *http.Request) {
	st, err := d.state(r.Context())
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	_, _ = w.Write([]byte(st.SVG))
}
