// Package htmltest renders zcprof HTML reports in headless Chromium
// (Debian's chromium package) for the tests: every chart must have drawn
// into its chart area, the page must report no script error, and a
// screenshot must not be blank.
package htmltest

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/zcprof/zcprof/profiler/testenv"
)

// Status is what the page's self-check writes into #zc-status.
type Status struct {
	Charts []struct {
		ID     string `json:"id"`
		Inked  int    `json:"inked"`
		Pixels int    `json:"pixels"`
	} `json:"charts"`
	Errors []string `json:"errors"`
}

// chromium finds the browser (make deps-test installs Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	return testenv.RequireTool(t, "chromium", "chromium-browser", "google-chrome")
}

func browse(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Root needs --no-sandbox; a private profile dir keeps runs apart.
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000"}
	cmd := exec.CommandContext(ctx, chromium(t), append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes()
}

var statusRe = regexp.MustCompile(`<pre id="zc-status"[^>]*data-done="1"[^>]*>([^<]*)</pre>`)

// Check loads file in headless Chromium and fails the test unless every
// chart drew into at least 1% of its chart area, there were no script
// errors, and a screenshot of the page is not blank. It returns the
// page's status.
func Check(t *testing.T, file string, wantCharts int) Status {
	t.Helper()
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	dom := browse(t, "--dump-dom", "file://"+abs)
	m := statusRe.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the page did not finish drawing (no #zc-status):\n%.2000s", dom)
	}
	var st Status
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &st); err != nil {
		t.Fatalf("status %q: %v", m[1], err)
	}
	if len(st.Errors) > 0 {
		t.Errorf("script errors: %v", st.Errors)
	}
	if len(st.Charts) < wantCharts {
		t.Errorf("%d charts drawn, want at least %d", len(st.Charts), wantCharts)
	}
	for _, c := range st.Charts {
		if c.Pixels == 0 || c.Inked*100 < c.Pixels {
			t.Errorf("chart %s: %d of %d pixels of its area drawn", c.ID, c.Inked, c.Pixels)
		}
	}
	shot := filepath.Join(t.TempDir(), "page.png")
	browse(t, "--window-size=1280,2400", "--screenshot="+shot, "file://"+abs)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if frac := nonWhite(img); frac < 0.01 {
		t.Errorf("screenshot is %.1f%% non-white: blank page", 100*frac)
	}
	return st
}

func nonWhite(img image.Image) float64 {
	b := img.Bounds()
	n, total := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			total++
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				n++
			}
		}
	}
	return float64(n) / float64(total)
}
