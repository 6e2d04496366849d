package kernel

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

const sampleConfig = `#
# Automatically generated file; DO NOT EDIT.
# Linux/x86 6.18.44 Kernel Configuration
#
CONFIG_CC_VERSION_TEXT="gcc (GCC) 15.3.0"
CONFIG_TICK_CPU_ACCOUNTING=y
# CONFIG_IRQ_TIME_ACCOUNTING is not set
CONFIG_HZ_250=y
CONFIG_HZ=250
# CONFIG_KPROBES is not set
CONFIG_FUNCTION_TRACER=y
CONFIG_NET_SCH_FQ=m
`

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestParseKernelConfig(t *testing.T) {
	for name, input := range map[string][]byte{
		"plain": []byte(sampleConfig),
		"gzip":  gz(t, sampleConfig), // /proc/config.gz
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := parseKernelConfig(bytes.NewReader(input))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"CONFIG_HZ":                  "250",
				"CONFIG_IRQ_TIME_ACCOUNTING": "n",
				"CONFIG_KPROBES":             "n",
				"CONFIG_TICK_CPU_ACCOUNTING": "y",
				"CONFIG_FUNCTION_TRACER":     "y",
				"CONFIG_NET_SCH_FQ":          "m",
				"CONFIG_CC_VERSION_TEXT":     `"gcc (GCC) 15.3.0"`,
			}
			for k, v := range want {
				if cfg[k] != v {
					t.Errorf("%s = %q, want %q", k, cfg[k], v)
				}
			}
			if got := ConfigHZ(cfg); got != 250 {
				t.Errorf("ConfigHZ = %d, want 250", got)
			}
			if ConfigEnabled(cfg, "CONFIG_IRQ_TIME_ACCOUNTING") || ConfigEnabled(cfg, "CONFIG_KPROBES") {
				t.Error("unset options read as enabled")
			}
			if !ConfigEnabled(cfg, "CONFIG_NET_SCH_FQ") || !ConfigEnabled(cfg, "CONFIG_TICK_CPU_ACCOUNTING") {
				t.Error("y/m options read as disabled")
			}
		})
	}
}

func TestParseKernelConfigBadGzip(t *testing.T) {
	if _, err := parseKernelConfig(strings.NewReader("\x1f\x8bnot gzip")); err == nil {
		t.Fatal("want an error for a corrupt gzip header")
	}
}
