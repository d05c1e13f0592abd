package companion

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// certReloader serves a key pair read from files and re-read when they
// change (a Secret mounted as a volume is updated in place).
type certReloader struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time
}

// loadCert reads the key pair once, to fail early on a bad one.
func loadCert(certFile, keyFile string) (*certReloader, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("the webhook needs --tls-cert-file and --tls-private-key-file")
	}
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	if _, err := r.get(nil); err != nil {
		return nil, err
	}
	return r, nil
}

// get implements tls.Config.GetCertificate.
func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	st, err := os.Stat(r.certFile)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && r.cert != nil && !st.ModTime().After(r.modTime) {
		return r.cert, nil
	}
	cert, lerr := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if lerr != nil {
		if r.cert != nil {
			return r.cert, nil
		}
		return nil, fmt.Errorf("webhook key pair %s, %s: %w", r.certFile, r.keyFile, lerr)
	}
	r.cert = &cert
	if err == nil {
		r.modTime = st.ModTime()
	}
	return r.cert, nil
}
