# zcprof needs root (or CAP_BPF + CAP_PERFMON) to load its BPF programs.
# Machines that are root already (ours, CI) have no sudo: the privileged
# targets re-run themselves under sudo only when not started as root.

GO        ?= go
BIN       := bin/zcprof
VERSION   := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
PRIVILEGED := run test bench vmtest

.PHONY: all build run test bench vmtest generate check-generated vmlinux deps-bpf clean vendor-chartjs

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/zcprof

ifneq ($(shell id -u),0)
$(PRIVILEGED):
	sudo -E env "PATH=$(PATH)" $(MAKE) $@
else

# The main job on its built-in default.
run: build
	./$(BIN) run

# Every test, BPF ones included: they fail rather than skip (never silently
# skipped), since this target always runs as root. One package at a time
# (-p 1): the BPF tests measure CPU time and count bytes exactly, and a
# package's transfers and sessions running beside another's perturbed both
# (the stale-namespace race; once, deferred-copy bytes short on loopback
# and veth, cause not established).
test:
	ZCPROF_REQUIRE_BPF=1 $(GO) test -p 1 -count=1 -timeout 30m ./...

# Overhead and speed, as ratios measured side by side in one run.
bench: build
	ZCPROF_REQUIRE_BPF=1 $(GO) test -count=1 -run '^$$' -bench . -benchtime 1x -timeout 60m ./...

# The BPF tests on Debian's 6.1 and 6.12 kernels under qemu, where fentry
# and kprobes work (docs/vmtest.md); regenerates docs/tested-kernels.md.
# KERNELS="6.1" for one.
vmtest:
	.ci/vmtest $(KERNELS)
endif

# Rebuild the BPF objects and their Go loaders (committed, so that go build
# needs no clang).
generate: deps-bpf
	cd bpf && $(GO) generate ./...

# CI: the committed objects must match the C sources.
check-generated: generate
	git diff --exit-code --stat -- bpf/ || { echo "bpf/: generated files are stale: run make generate and commit" >&2; exit 1; }

# Regenerate bpf/vmlinux.h from the running kernel's BTF.
vmlinux: deps-bpf
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > bpf/vmlinux.h

deps-bpf:
	@command -v clang >/dev/null && command -v bpftool >/dev/null && test -f /usr/include/bpf/bpf_helpers.h || \
		{ [ "$$(id -u)" = 0 ] || SUDO=sudo; $$SUDO apt-get update -qq && \
		  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq clang llvm libbpf-dev bpftool; }

clean:
	rm -rf bin

# The HTML report's plotting library: a committed copy of Chart.js's
# minified UMD build (go:embed), refreshed from the npm registry here so
# that `go build` needs neither network nor node.
CHARTJS_VERSION := 4.6.1
vendor-chartjs:
	tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent chart.js@$(CHARTJS_VERSION) >/dev/null && \
	tar xzf chart.js-$(CHARTJS_VERSION).tgz && \
	cp package/dist/chart.umd.min.js $(CURDIR)/profiler/report/html/chart.umd.min.js && \
	cp package/LICENSE.md $(CURDIR)/profiler/report/html/chart.js.LICENSE.md && rm -rf $$tmp
