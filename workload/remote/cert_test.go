package remote

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Agents that start at the same moment with one config dir (make vmtest
// starts one per guest) each get the certificate, the same one, and leave
// no temporary file; the old fixed temporary name made one fail.
func TestAgentCertificateConcurrentFirstStart(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	const agents = 16
	fps := make([]string, agents)
	errs := make([]error, agents)
	var wg sync.WaitGroup
	for i := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, fps[i], errs[i] = AgentCertificate()
		}()
	}
	wg.Wait()
	for i := range agents {
		if errs[i] != nil || fps[i] != fps[0] {
			t.Errorf("agent %d: fingerprint %q (first %q), %v", i, fps[i], fps[0], errs[i])
		}
	}
	ents, err := os.ReadDir(filepath.Join(dir, "zcprof"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != agentCertFile {
		t.Errorf("config dir holds %v, want only %s", ents, agentCertFile)
	}
	if _, fp, err := AgentCertificate(); err != nil || fp != fps[0] {
		t.Errorf("after a restart: %q, %v; want %q", fp, err, fps[0])
	}
}
