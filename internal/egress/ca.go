package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"sync"
	"time"
)

const (
	caValidity   = 7 * 24 * time.Hour // a box's CA outlives any box run
	leafValidity = 24 * time.Hour
)

// certAuthority is the ephemeral per-box CA (ECDSA P-256). Its key never
// leaves host memory. It is name-constrained (RFC 5280 §4.2.1.10) to the
// secret hosts of the box, so even a leaked CA cannot vouch for other names.
type certAuthority struct {
	now     func() time.Time
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate // by host
}

func newCertAuthority(now func() time.Time, permitted []string) (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if len(permitted) == 0 {
		permitted = []string{"hermes.invalid"} // RFC 2606: matches nothing real
	}
	t := now()
	tmpl := &x509.Certificate{
		SerialNumber:                randomSerial(),
		Subject:                     pkix.Name{CommonName: "hermes box egress CA", Organization: []string{"hermes"}},
		NotBefore:                   t.Add(-time.Hour),
		NotAfter:                    t.Add(caValidity),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         permitted,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("egress: create box CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &certAuthority{
		now: now, cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leaves:  map[string]*tls.Certificate{},
	}, nil
}

func randomSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// leaf returns a cached certificate for host, minting a new one (valid
// leafValidity) when missing or within an hour of expiry.
func (ca *certAuthority) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	t := ca.now()
	if c, ok := ca.leaves[host]; ok && t.Add(time.Hour).Before(c.Leaf.NotAfter) {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    t.Add(-time.Hour),
		NotAfter:     t.Add(leafValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("egress: mint certificate for %s: %v", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key, Leaf: leaf}
	ca.leaves[host] = c
	return c, nil
}
