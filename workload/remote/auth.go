package remote

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"time"
)

// nonceLen is the length of both sides' challenges.
const nonceLen = 32

// AuthFailDelay is how long the agent waits before it answers a wrong
// proof (and holds its one session slot meanwhile): a guesser gets one try
// a second.
const AuthFailDelay = time.Second

// minTokenLen: a token shorter than this is refused when it is read.
const minTokenLen = 16

func nonce() ([]byte, error) {
	b := make([]byte, nonceLen)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("random nonce: %w", err)
	}
	return b, nil
}

// proof is the challenge-response over the token: an HMAC-SHA256 keyed by
// the token over who proves it and both nonces in a fixed order, so that a
// proof is never valid for the other direction nor for another session.
// The token itself never crosses the connection.
func proof(token []byte, who string, server, client []byte) []byte {
	m := hmac.New(sha256.New, token)
	m.Write([]byte("zcprof-auth-v1\x00" + who + "\x00"))
	m.Write(server)
	m.Write(client)
	return m.Sum(nil)
}

// validProof compares in constant time.
func validProof(token []byte, who string, server, client, got []byte) bool {
	return hmac.Equal(proof(token, who, server, client), got)
}

const (
	byClient = "client"
	byAgent  = "agent"
)

// ReadToken reads a token file: its first line, trimmed, at least
// minTokenLen bytes.
func ReadToken(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--token-file: %w", err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	line = bytes.TrimSpace(line)
	if len(line) < minTokenLen {
		return nil, fmt.Errorf("--token-file %s: the token must be at least %d bytes (e.g. openssl rand -hex 32 > %s)", path, minTokenLen, path)
	}
	return line, nil
}

var errAuth = errors.New("authentication failed: wrong token")
