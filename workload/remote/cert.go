package remote

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// configDir is zcprof's directory under the user's config dir
// ($XDG_CONFIG_HOME or ~/.config).
func configDir() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "zcprof"), nil
}

// agentCertFile holds the agent's key and self-signed certificate. It is
// made at the agent's first start and kept, so that a client that pinned
// the fingerprint on first use finds the same one after a restart.
const agentCertFile = "agent.pem"

// AgentCertificate loads the agent's certificate, making it on first use.
func AgentCertificate() (tls.Certificate, string, error) {
	dir, err := configDir()
	if err != nil {
		return tls.Certificate{}, "", err
	}
	path := filepath.Join(dir, agentCertFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if b, err = newCertificate(); err == nil {
			b, err = createOnce(path, b)
		}
	}
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("agent certificate %s: %w", path, err)
	}
	c, err := tls.X509KeyPair(b, b)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("agent certificate %s: %w", path, err)
	}
	return c, Fingerprint(c.Certificate[0]), nil
}

func newCertificate() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "zcprof serve on " + host},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(20, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})...), nil
}

// createOnce makes a private file holding b, complete or not at all, its
// directory made private, and returns what the file holds: b, or what
// another agent starting at the same moment wrote first (a hard link
// cannot replace a file, so both then serve the same certificate).
func createOnce(path string, b []byte) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if err = errors.Join(err, f.Close()); err != nil {
		return nil, err
	}
	if err := os.Link(f.Name(), path); errors.Is(err, os.ErrExist) {
		return os.ReadFile(path)
	} else if err != nil {
		return nil, err
	}
	return b, nil
}

// Fingerprint is the SHA-256 of a DER certificate, in hex.
func Fingerprint(der []byte) string {
	s := sha256.Sum256(der)
	return hex.EncodeToString(s[:])
}

// normFingerprint accepts hex with or without colons, any case.
func normFingerprint(s string) (string, error) {
	h := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(s), "sha256:"), ":", ""))
	if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("--fingerprint %q: want the agent's SHA-256 in hex (zcprof serve prints it)", s)
	}
	return h, nil
}

// knownAgentsFile lists the fingerprints pinned on first use, one
// "host:port sha256" a line.
const knownAgentsFile = "known_agents"

// pins is the client's store of agent fingerprints.
type pins struct{ path string }

func openPins() (pins, error) {
	dir, err := configDir()
	if err != nil {
		return pins{}, err
	}
	return pins{filepath.Join(dir, knownAgentsFile)}, nil
}

func (p pins) lookup(addr string) (string, error) {
	f, err := os.Open(p.path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if a, fp, ok := strings.Cut(strings.TrimSpace(sc.Text()), " "); ok && a == addr {
			return strings.TrimSpace(fp), nil
		}
	}
	return "", sc.Err()
}

func (p pins) add(addr, fp string) error {
	if err := os.MkdirAll(filepath.Dir(p.path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(p.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s %s\n", addr, fp)
	return errors.Join(err, f.Close())
}
