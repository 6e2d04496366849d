# zcprof needs root (or CAP_BPF + CAP_PERFMON) to load its BPF programs.
# Machines that are root already (ours, CI) have no sudo: the privileged
# targets re-run themselves under sudo only when not started as root.

GO        ?= go
BIN       := bin/zcprof
VERSION   := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
PRIVILEGED := run test bench soak vmtest

.PHONY: all build run test bench soak vmtest generate proto check-generated vmlinux deps-bpf deps-proto deps-test deps-bench clean vendor-chartjs

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
# Then the agent's request decoder and validator, fuzzed briefly (the
# corpus in workload/remote/testdata/fuzz seeds it).
test: deps-test
	ZCPROF_REQUIRE_BPF=1 $(GO) test -p 1 -count=1 -timeout 30m ./...
	$(GO) test -run '^$$' -fuzz FuzzRequest -fuzztime 10s ./workload/remote/

# Overhead and speed, as ratios measured side by side in one run
# (BenchmarkProbeEffect compares zcprof with perf and bpftrace).
bench: build deps-test deps-bench
	ZCPROF_REQUIRE_BPF=1 $(GO) test -count=1 -run '^$$' -bench . -benchtime 1x -timeout 60m ./...

# Churn soak: zcprof profile -a --metrics for SOAK (a Go duration) with ~100
# short processes a second and a late busy process checked against its own
# CPU clock in the report and in /metrics; prints zcprof's peak RSS and its
# time from Ctrl-C to exit (make bench runs it for 2 minutes).
SOAK ?= 1h
soak: build deps-test
	ZCPROF_REQUIRE_BPF=1 ZCPROF_SOAK=$(SOAK) $(GO) test -count=1 -run '^$$' -bench '^BenchmarkSoak$$' -benchtime 1x -timeout 0 ./cmd/zcprof/

# The BPF tests on Debian's 6.1 and 6.12 kernels under qemu, where fentry
# and kprobes work, and on 6.12 PREEMPT_RT the tests of what RT changes
# (docs/vmtest.md); regenerates docs/tested-kernels.md. KERNELS="6.1" for one.
vmtest:
	.ci/vmtest $(KERNELS)
endif

# Rebuild the BPF objects and their Go loaders, and the control protocol's
# Go code (all committed, so that go build needs neither clang nor protoc).
generate: deps-bpf proto
	cd bpf && $(GO) generate ./...

# The `zcprof serve` control protocol: protoc from Debian, its Go plugins
# at pinned versions built from the module proxy.
PROTOC_GEN_GO      := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
PROTO_BIN          := $(CURDIR)/bin/proto
proto: deps-proto
	cd workload/remote && PATH="$(PROTO_BIN):$$PATH" protoc --go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative pb/agent.proto

deps-proto:
	@command -v protoc >/dev/null || $(call apt-install,protobuf-compiler)
	GOBIN=$(PROTO_BIN) $(GO) install $(PROTOC_GEN_GO)
	GOBIN=$(PROTO_BIN) $(GO) install $(PROTOC_GEN_GO_GRPC)

# CI: the committed objects must match the C sources, and the protocol's
# Go code its .proto.
check-generated: generate
	git diff --exit-code --stat -- bpf/ workload/remote/pb/ || { echo "generated files are stale: run make generate and commit" >&2; exit 1; }

# Regenerate bpf/vmlinux.h from the running kernel's BTF.
vmlinux: deps-bpf
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > bpf/vmlinux.h

# apt-install installs the Debian packages named by the shell word $(1),
# refreshing the package lists only when the install needs it (a fresh
# machine has none). APT_GET="echo apt-get" shows what would be installed.
APT_GET ?= apt-get
define apt-install
{ [ "$$(id -u)" = 0 ] || SUDO=sudo; export DEBIAN_FRONTEND=noninteractive; \
  echo "installing:$(1)" >&2; \
  $$SUDO $(APT_GET) install -y -qq --no-install-recommends $(1) >/dev/null || \
  { $$SUDO $(APT_GET) update -qq && $$SUDO $(APT_GET) install -y -qq --no-install-recommends $(1) >/dev/null; }; }
endef

deps-bpf:
	@command -v clang >/dev/null && command -v bpftool >/dev/null && test -f /usr/include/bpf/bpf_helpers.h || \
		$(call apt-install,clang llvm libbpf-dev bpftool)

# What the tests run besides zcprof, as command=Debian package: chromium
# renders the HTML reports (headless), ip builds the netns topologies,
# script gives the progress tests a terminal, iperf3 is the benchmark's
# reference, ethtool turns a veth's scatter-gather off and nsenter enters
# the namespaces of the two-host tests. A test without its tool fails under make test (RequireTool).
TEST_TOOLS := chromium=chromium ip=iproute2 script=bsdutils iperf3=iperf3 ethtool=ethtool nsenter=util-linux

deps-test:
	@missing=; for t in $(TEST_TOOLS); do command -v $${t%%=*} >/dev/null || missing="$$missing $${t#*=}"; done; \
	[ -z "$$missing" ] || $(call apt-install,$$missing)

# What make bench measures zcprof against.
deps-bench:
	@command -v bpftrace >/dev/null && command -v perf >/dev/null || \
		$(call apt-install,bpftrace linux-perf)

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
