package kernel

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ReadConfig finds the running kernel's config: /proc/config.gz
// (CONFIG_IKCONFIG_PROC), else /boot/config-<release>.
func ReadConfig(release string) (map[string]string, string, error) {
	for _, path := range []string{"/proc/config.gz", "/boot/config-" + release} {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		cfg, err := parseKernelConfig(f)
		f.Close()
		if err != nil {
			return nil, path, fmt.Errorf("%s: %w", path, err)
		}
		return cfg, path, nil
	}
	return nil, "", fmt.Errorf("no /proc/config.gz or /boot/config-%s", release)
}

// parseKernelConfig reads a .config, gzip-compressed or plain, into
// option -> value. "# CONFIG_X is not set" becomes "n"; quotes are kept.
func parseKernelConfig(r io.Reader) (map[string]string, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	cfg := map[string]string{}
	sc := bufio.NewScanner(br)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if name, ok := strings.CutPrefix(line, "# "); ok {
			if name, ok := strings.CutSuffix(name, " is not set"); ok && strings.HasPrefix(name, "CONFIG_") {
				cfg[name] = "n"
			}
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "CONFIG_") {
			cfg[k] = v
		}
	}
	return cfg, sc.Err()
}

// ConfigEnabled reports whether a bool/tristate option is built in or a module.
func ConfigEnabled(cfg map[string]string, name string) bool {
	v := cfg[name]
	return v == "y" || v == "m"
}

// ConfigHZ returns CONFIG_HZ, or 0 when unknown.
func ConfigHZ(cfg map[string]string) int {
	hz, _ := strconv.Atoi(cfg["CONFIG_HZ"])
	return hz
}
