package webhookcert

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	ca, err := Write(dir, "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatalf("serving pair: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("the returned CA is not PEM")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving certificate does not verify for 127.0.0.1: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "example.com"}); err == nil {
		t.Error("serving certificate verifies for example.com")
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil || string(onDisk) != string(ca) {
		t.Errorf("%s: %v, differs from the returned CA", CAFile, err)
	}
	for _, f := range []string{CertFile, KeyFile, CAFile} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v", f, err, fi.Mode())
		}
	}
	// A second CA does not verify the first pair.
	other, err := Write(filepath.Join(t.TempDir(), "other"), "other-ca")
	if err != nil {
		t.Fatal(err)
	}
	otherPool := x509.NewCertPool()
	otherPool.AppendCertsFromPEM(other)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: otherPool, DNSName: "127.0.0.1"}); err == nil {
		t.Error("serving certificate verifies against another CA")
	}
	// An unwritable directory is an error, not a panic.
	if _, err := Write(filepath.Join(dir, CertFile, "sub"), "x"); err == nil {
		t.Error("Write under a file succeeded")
	}
}
