package companion

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// fakeOwnership is an Ownership with fixed answers.
type fakeOwnership struct {
	answering bool
	why       string
	leader    string
	self      bool
}

func (o fakeOwnership) Answering() (bool, string) { return o.answering, o.why }
func (o fakeOwnership) Leader() (string, bool)    { return o.leader, o.self }

// selfSigned is a fresh serving key pair, not the one httptest serves.
func selfSigned(t *testing.T) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"other"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestWebhookForwardsToOwner: a replica that does not own the book sends
// an RDMA bind to the owner's webhook over TLS pinned to the replica's own
// serving certificate and returns the owner's choice; it lets the bind
// through unassisted, counted by reason, when the owner is unknown,
// unreachable, presents another certificate, or is itself in its takeover,
// and a forwarded bind is never forwarded again.
func TestWebhookForwardsToOwner(t *testing.T) {
	n1, c1 := providerNode("n1", "p", "a", "b")
	cluster := &fakeCluster{f: topology.Build(testConfig, []*corev1.Node{n1}, []*v1alpha1.CustomNodeResource{c1})}
	owner := newTestWebhook(cluster)
	owner.Owner = fakeOwnership{answering: true}
	srv := httptest.NewUnstartedServer(owner)
	srv.StartTLS()
	defer srv.Close()
	served := func() (*tls.Certificate, error) { return &srv.TLS.Certificates[0], nil }
	other := selfSigned(t)
	ownerAddr := strings.TrimPrefix(srv.URL, "https://")
	closed := httptest.NewUnstartedServer(owner)
	closedAddr := closed.Listener.Addr().String()
	closed.Listener.Close()

	tests := map[string]struct {
		ownership fakeOwnership
		own       func() (*tls.Certificate, error)
		forwarded bool
		wantNICs  bool
		reason    string // of the unassisted answer; "" when forwarded
	}{
		"forwarded to the owner": {ownership: fakeOwnership{why: ReasonNotOwner, leader: ownerAddr}, own: served, wantNICs: true},
		"no owner":               {ownership: fakeOwnership{why: ReasonNotOwner}, own: served, reason: ReasonNoOwner},
		"owner unreachable":      {ownership: fakeOwnership{why: ReasonNotOwner, leader: closedAddr}, own: served, reason: ReasonOwnerUnreachable},
		"owner's certificate":    {ownership: fakeOwnership{why: ReasonNotOwner, leader: ownerAddr}, own: func() (*tls.Certificate, error) { return other, nil }, reason: ReasonOwnerUnreachable},
		"itself taking over":     {ownership: fakeOwnership{why: ReasonHandover, leader: "127.0.0.1:1", self: true}, own: served, reason: ReasonHandover},
		"a forwarded bind":       {ownership: fakeOwnership{why: ReasonNotOwner, leader: ownerAddr}, own: served, forwarded: true, reason: ReasonNotOwner},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := gangPod("w-"+strings.ReplaceAll(name, " ", "-"), "g")
			cluster.pods = append(cluster.pods, pod)
			w := newTestWebhook(cluster)
			w.Owner = tc.ownership
			fw := &Forwarder{Client: NewForwardClient(tc.own), Timeout: 2 * time.Second, From: "b@127.0.0.1:2"}
			calls := 0
			w.Forward = func(ctx context.Context, addr string, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
				calls++
				return fw.Forward(ctx, addr, req)
			}
			admit := func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
				return w.admit(ctx, req, tc.forwarded)
			}
			resp, got := bindWith(t, admit, pod, "n1", nil)
			if !resp.Allowed || (got[ledger.AnnotationNICs] != "") != tc.wantNICs {
				t.Errorf("allowed %v, annotations %v; want allowed, NICs %v", resp.Allowed, got, tc.wantNICs)
			}
			if tc.forwarded && calls != 0 {
				t.Errorf("a forwarded bind was forwarded again")
			}
			if tc.reason == "" {
				if n := testutilValue(w.Metrics.Forwarded); n != 1 {
					t.Errorf("forwarded %v, want 1", n)
				}
				return
			}
			if n := testutilValue(w.Metrics.UnassistedAnswers.WithLabelValues(tc.reason)); n != 1 {
				t.Errorf("unassisted answers (%s) %v, want 1", tc.reason, n)
			}
		})
	}
	if n := testutilValue(owner.Metrics.Binds.WithLabelValues(ResultAssisted)); n != 1 {
		t.Errorf("the owner answered %v binds, want 1", n)
	}
}
