package harness

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WaitHTTP polls url until it answers 200, the process exits or timeout
// passes. token, when set, is sent as a bearer token.
func WaitHTTP(ctx context.Context, p *Process, client *http.Client, url, token string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		if err := p.Alive(); err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s within %s: %s", p.Name, url, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// InsecureHTTP is a client for the components' self-signed endpoints on
// loopback.
func InsecureHTTP() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

// EtcdSpec says how to run etcd.
type EtcdSpec struct {
	// Binary is etcd's path; DataDir its data directory.
	Binary, DataDir string
	// ExtraArgs are added to the command line.
	ExtraArgs []string
	// Timeout bounds the wait for /health.
	Timeout time.Duration
}

// StartEtcd starts a single-member etcd on two free loopback ports, without
// fsync (the data need not survive a power cut), and waits until it is
// healthy. It returns the process and the client URL.
func (g *Group) StartEtcd(ctx context.Context, spec EtcdSpec) (*Process, string, error) {
	ports, err := FreePorts(2)
	if err != nil {
		return nil, "", err
	}
	client, peer := "http://"+HostPort(ports[0]), "http://"+HostPort(ports[1])
	p, err := g.Start(Spec{Name: "etcd", Path: spec.Binary, Args: append([]string{
		"--name=default",
		"--data-dir=" + spec.DataDir,
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer,
		"--unsafe-no-fsync",
		"--log-level=warn",
	}, spec.ExtraArgs...)})
	if err != nil {
		return nil, "", err
	}
	return p, client, WaitHTTP(ctx, p, http.DefaultClient, client+"/health", "", spec.Timeout)
}

// User is an identity of the API server's static token file.
type User struct {
	Name, UID string
	// Groups are the user's groups; Token its bearer token (RandomToken).
	Groups []string
	Token  string
}

// APIServerSpec says how to run kube-apiserver.
type APIServerSpec struct {
	// Binary is kube-apiserver's path; CertDir receives its serving
	// certificate, the ServiceAccount keys, the token file and the
	// kubeconfigs.
	Binary, CertDir string
	// EtcdURL is etcd's client URL.
	EtcdURL string
	// Users are the token file's identities; the first one must be allowed
	// to read /readyz (system:masters), it is used to wait for readiness.
	Users []User
	// ExtraArgs are added to the command line.
	ExtraArgs []string
	// Timeout bounds the wait for /readyz.
	Timeout time.Duration
}

// APIServer is a running kube-apiserver.
type APIServer struct {
	*Process
	// URL is https://127.0.0.1:<port>.
	URL     string
	certDir string
}

// StartAPIServer starts kube-apiserver on a free loopback port with RBAC,
// the spec's token users, a fresh ServiceAccount signing key, and without
// the ServiceAccount and TaintNodesByCondition admission plugins (no
// controller creates ServiceAccounts here, and none would lift the
// not-ready taint put on every new Node), then waits for /readyz.
func (g *Group) StartAPIServer(ctx context.Context, spec APIServerSpec) (*APIServer, error) {
	if len(spec.Users) == 0 {
		return nil, fmt.Errorf("kube-apiserver: no users")
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	keyFile, pubFile, err := writeServiceAccountKeys(spec.CertDir)
	if err != nil {
		return nil, err
	}
	tokens := filepath.Join(spec.CertDir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(tokenFile(spec.Users)), 0o600); err != nil {
		return nil, err
	}
	p, err := g.Start(Spec{Name: "kube-apiserver", Path: spec.Binary, Args: append([]string{
		"--etcd-servers=" + spec.EtcdURL,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(spec.CertDir, "apiserver"),
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + pubFile,
		"--service-account-signing-key-file=" + keyFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--profiling=false",
	}, spec.ExtraArgs...)})
	if err != nil {
		return nil, err
	}
	a := &APIServer{Process: p, URL: "https://" + HostPort(port), certDir: spec.CertDir}
	return a, WaitHTTP(ctx, p, InsecureHTTP(), a.URL+"/readyz", spec.Users[0].Token, spec.Timeout)
}

// Kubeconfig writes <certDir>/<name>.kubeconfig for user and returns its
// path.
func (a *APIServer) Kubeconfig(name string, user User) (string, error) {
	path := filepath.Join(a.certDir, name+".kubeconfig")
	return path, WriteKubeconfig(path, a.URL, user.Name, user.Token)
}

// tokenFile is the token file's text: token,user,uid[,"group,..."] lines.
func tokenFile(users []User) string {
	var b strings.Builder
	for _, u := range users {
		fmt.Fprintf(&b, "%s,%s,%s", u.Token, u.Name, u.UID)
		if len(u.Groups) > 0 {
			fmt.Fprintf(&b, ",%q", strings.Join(u.Groups, ","))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// writeServiceAccountKeys writes the key pair the API server signs and
// verifies ServiceAccount tokens with.
func writeServiceAccountKeys(dir string) (keyFile, pubFile string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	keyFile, pubFile = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	return keyFile, pubFile, os.WriteFile(pubFile, pubPEM, 0o644)
}

// WriteKubeconfig writes a kubeconfig for a token user. The API server's
// certificate is self-signed and it listens on loopback only, so the
// certificate is not verified.
func WriteKubeconfig(path, server, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
}

// RandomToken returns a fresh bearer token.
func RandomToken() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// ModuleDir returns the directory of a module in the module cache, as seen
// from the module rooted at dir, downloading it if needed.
func ModuleDir(ctx context.Context, dir, module string) (string, error) {
	for range 2 {
		cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", module)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go list -m %s in %s: %v: %s", module, dir, err, out)
		}
		if d := strings.TrimSpace(string(out)); d != "" {
			return d, nil
		}
		dl := exec.CommandContext(ctx, "go", "mod", "download", module)
		dl.Dir, dl.Env = dir, cmd.Env
		if out, err := dl.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go mod download %s in %s: %v: %s", module, dir, err, out)
		}
	}
	return "", fmt.Errorf("module %s has no directory as seen from %s", module, dir)
}

// VCScheduler is a vc-scheduler to start: rdmatopo's or stock Volcano's.
type VCScheduler struct {
	// Name names the process; Binary is its path.
	Name, Binary string
	// Kubeconfig is what it connects with; Conf its --scheduler-conf.
	Kubeconfig, Conf string
	// LeaderElection are leader-election flags; without any it runs with
	// --leader-elect=false.
	LeaderElection []string
	// Verbosity is klog's -v.
	Verbosity int
	// ExtraArgs and Env are added to its command line and environment.
	ExtraArgs, Env []string
	// Timeout bounds the wait for /healthz.
	Timeout time.Duration
}

// StartVCScheduler starts a vc-scheduler as scheduler "volcano" with its
// health and metrics endpoints on free loopback ports, and waits for its
// /healthz (a standby replica serves it too). It returns the process and
// the metrics endpoint's address (host:port; net/http/pprof is served
// there as well).
func (g *Group) StartVCScheduler(ctx context.Context, s VCScheduler) (*Process, string, error) {
	ports, err := FreePorts(2)
	if err != nil {
		return nil, "", err
	}
	health, metrics := HostPort(ports[0]), HostPort(ports[1])
	args := []string{
		"--kubeconfig=" + s.Kubeconfig,
		"--scheduler-conf=" + s.Conf,
		"--scheduler-name=volcano",
	}
	if len(s.LeaderElection) == 0 {
		args = append(args, "--leader-elect=false")
	} else {
		args = append(args, s.LeaderElection...)
	}
	args = append(args,
		"--enable-healthz=true",
		"--healthz-address="+health,
		"--enable-metrics=true",
		"--listen-address="+metrics,
		"--logtostderr",
		fmt.Sprintf("-v=%d", s.Verbosity),
	)
	p, err := g.Start(Spec{Name: s.Name, Path: s.Binary, Args: append(args, s.ExtraArgs...), Env: s.Env})
	if err != nil {
		return nil, "", err
	}
	return p, metrics, WaitHTTP(ctx, p, http.DefaultClient, "http://"+health+"/healthz", "", s.Timeout)
}
