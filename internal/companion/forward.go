package companion

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Forwarder sends a bind's AdmissionReview to the owner's webhook.
type Forwarder struct {
	// Client posts the reviews (NewForwardClient).
	Client *http.Client
	// Timeout bounds one forward, well under the webhook's own timeout.
	Timeout time.Duration
	// From is this replica's identity, sent in ForwardedHeader.
	From string
}

// Forward posts the request to https://address/bind and returns the
// owner's answer.
func (f *Forwarder) Forward(ctx context.Context, address string, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		return nil, err
	}
	if f.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.Timeout)
		defer cancel()
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+address+"/bind", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(ForwardedHeader, f.From)
	resp, err := f.Client.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("owner %s: %s: %s", address, resp.Status, bytes.TrimSpace(data))
	}
	out := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("owner %s: not an AdmissionReview: %w", address, err)
	}
	if out.Response == nil || out.Response.UID != req.UID {
		return nil, fmt.Errorf("owner %s: the answer is not for request %s", address, req.UID)
	}
	return out.Response, nil
}

// NewForwardClient is an HTTPS client that trusts exactly the serving
// certificate this replica serves (own): the replicas share one key pair
// (one Secret), and a peer proves in the TLS handshake that it holds that
// key. The owner is reached at its pod address, which the certificate,
// issued for the Service's name, does not name; so the chain is not
// checked against CAs and names but the peer's certificate is compared
// with the replica's own, byte for byte (and must be within its validity).
func NewForwardClient(own func() (*tls.Certificate, error)) *http.Client {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verified by VerifyConnection below: the peer must present this
		// replica's own certificate.
		InsecureSkipVerify: true, //nolint:gosec // pinned to the shared serving certificate
		VerifyConnection: func(cs tls.ConnectionState) error {
			return pinned(own, cs)
		},
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     cfg,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}}
}

// pinned checks that the peer presented the replica's own certificate,
// now valid.
func pinned(own func() (*tls.Certificate, error), cs tls.ConnectionState) error {
	cert, err := own()
	if err != nil {
		return err
	}
	if cert == nil || len(cert.Certificate) == 0 || len(cs.PeerCertificates) == 0 {
		return errors.New("no certificate to compare")
	}
	peer := cs.PeerCertificates[0]
	if !bytes.Equal(peer.Raw, cert.Certificate[0]) {
		return errors.New("the peer's certificate is not this replica's serving certificate")
	}
	if now := time.Now(); now.Before(peer.NotBefore) || now.After(peer.NotAfter) {
		return fmt.Errorf("the serving certificate is valid only from %s to %s", peer.NotBefore, peer.NotAfter)
	}
	return nil
}
