# The two commands a new user needs: `make demo` and `make test`. Both install what is missing.
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps test-deps bench-deps build release reference test demo bench profile compare-instructions fuzz test-asan test-tsan clean

# The build needs two system libraries: liburing-dev (the io_uring backend) and libssl-dev
# (libcrypto for STUN/TURN credentials, libssl for TURN over TLS). Each is installed when its header is absent.
# libbpf-dev too, for the kernel fast path (below).
# A C compiler builds the reference forwarder (bench/reference), in make bench/demo and in a test.
deps:
	@if [ ! -f /usr/include/liburing.h ]; then \
		echo "make: installing liburing-dev (needed for the io_uring backend)"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq liburing-dev; \
	fi
	@if [ ! -f /usr/include/openssl/hmac.h ] || [ ! -f /usr/include/openssl/ssl.h ]; then \
		echo "make: installing libssl-dev (libcrypto for TURN credentials, libssl for TURN over TLS)"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libssl-dev; \
	fi
	@if ! command -v cc >/dev/null; then \
		echo "make: installing gcc (builds the C reference forwarder)"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq gcc; \
	fi
	@# The kernel fast path (FastPath): libbpf loads its BPF program, which the toolchain's clang
	@# compiles during swift build against libbpf's BPF headers (bpf_helpers.h).
	@if [ ! -f /usr/include/bpf/libbpf.h ] || [ ! -f /usr/include/bpf/bpf_helpers.h ]; then \
		echo "make: installing libbpf-dev (the kernel fast path's loader and BPF headers)"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libbpf-dev; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# Test-only tools: iperf3 (an unmodified UDP application through a forward rule), socat (its
# TCP control channel beside the relay), ffmpeg (a real RTP sender with RTCP on port + 1,
# through an "rtcp": "pair" session), systemd-analyze (checks the unit), coturn
# (turnserver, turnutils_uclient, turnutils_peer: the TURN interop tests and
# bench/turn-bench.sh), tshark (reads the DF bit of relayed datagrams on loopback:
# TurnDontFragmentTests), PyYAML (checks the deploy files), promtool (Debian ships it in the
# prometheus package, which also installs the server: checks deploy/prometheus's rules),
# readelf (binutils: the libraries the container's run stage must install), openssl (the
# TLS tests make their certificates with it and talk to its s_client and s_server), chromium
# (a real browser's TURN client across a fleet: BrowserFleetTests), curl (that check reads
# the relays' stats inside their namespace) and fail2ban (fail2ban-regex checks deploy/fail2ban's
# filter against the relay's own lines, fail2ban-client loads its jail: Fail2banFilterTests). Installed when
# missing; when that fails, make stops here and says why: under `make test` a missing tool is an
# error, never a skip.
TEST_TOOLS := iperf3:iperf3 socat:socat ffmpeg:ffmpeg systemd-analyze:systemd \
	turnserver:coturn turnutils_uclient:coturn turnutils_peer:coturn tshark:tshark \
	promtool:prometheus readelf:binutils openssl:openssl chromium:chromium curl:curl \
	fail2ban-regex:fail2ban fail2ban-client:fail2ban
# kubernetes-validate checks deploy/kubernetes against the API schemas, which it ships (no
# network at test time). From PyPI, pinned, in a virtualenv under .build: Debian's Python
# refuses pip installs (PEP 668), and a pinned version keeps the schemas the same everywhere.
# KubernetesManifestTests looks there first, then on PATH.
KUBERNETES_VALIDATE := kubernetes-validate==1.37.0
# aioice (the ICE library under aiortc): a third TURN client beside ours and coturn's
# (AioiceTurnTests), pinned in the same virtualenv.
AIOICE := aioice==0.10.1
TEST_VENV := .build/test-tools
test-deps:
	@missing=""; \
	for pair in $(TEST_TOOLS); do \
		command -v $${pair%%:*} >/dev/null || case " $$missing " in \
			*" $${pair#*:} "*) ;; *) missing="$$missing $${pair#*:}";; esac; \
	done; \
	python3 -c 'import yaml' 2>/dev/null || missing="$$missing python3-yaml"; \
	if [ -n "$$missing" ]; then \
		echo "make: installing$$missing for the tests"; \
		{ $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; } || \
			{ echo "make: ERROR: could not install$$missing; the tests need them (apt-get install$$missing)" >&2; exit 1; }; \
	fi; \
	for pair in $(TEST_TOOLS); do \
		command -v $${pair%%:*} >/dev/null || { echo "make: ERROR: $${pair%%:*} still missing after installing $${pair#*:}" >&2; exit 1; }; \
	done; \
	python3 -c 'import yaml' || { echo "make: ERROR: PyYAML still missing after installing python3-yaml" >&2; exit 1; }

	@if [ ! -x $(TEST_VENV)/bin/kubernetes-validate ]; then \
		echo "make: installing $(KUBERNETES_VALIDATE) into $(TEST_VENV) for the Kubernetes manifest checks"; \
		python3 -c 'import ensurepip' 2>/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq python3-venv; }; \
		{ python3 -m venv $(TEST_VENV) && $(TEST_VENV)/bin/pip install --quiet $(KUBERNETES_VALIDATE); } || \
			{ echo "make: ERROR: could not install $(KUBERNETES_VALIDATE) (python3 -m venv $(TEST_VENV) && $(TEST_VENV)/bin/pip install $(KUBERNETES_VALIDATE))" >&2; exit 1; }; \
	fi
	@if ! $(TEST_VENV)/bin/python -c 'import aioice' 2>/dev/null; then \
		echo "make: installing $(AIOICE) into $(TEST_VENV) for the aioice TURN interop test"; \
		$(TEST_VENV)/bin/pip install --quiet $(AIOICE) || \
			{ echo "make: ERROR: could not install $(AIOICE) ($(TEST_VENV)/bin/pip install $(AIOICE))" >&2; exit 1; }; \
	fi

	@# ip and ethtool: GROVethTests builds a veth pair between two network namespaces with GRO on;
	@# KernelTCPMarkingTests (bench/ecn-tcp-vxlan.sh) runs iperf3 over VXLAN between namespaces.
	@if ! command -v ip >/dev/null || ! command -v ethtool >/dev/null; then \
		echo "make: installing iproute2 and ethtool for the GRO test through veth"; \
		($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq iproute2 ethtool) || \
			{ echo "make: ERROR: could not install iproute2/ethtool; GROVethTests needs them" >&2; exit 1; }; \
	fi

	@# bpftool: FastPathTests list the BPF programs loaded when one of theirs is meant to be gone.
	@if ! command -v bpftool >/dev/null; then \
		echo "make: installing bpftool for the fast path tests"; \
		($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq bpftool) || \
			{ echo "make: ERROR: could not install bpftool; FastPathTests need it (apt-get install bpftool)" >&2; exit 1; }; \
	fi

# The suites, then a short pass of every fuzz target over its committed corpus (issue 38): a
# finding fails the run; `make fuzz` runs them longer.
test: deps test-deps
	$(SWIFT) build --build-tests
	MEDIARELAY_REQUIRE_TEST_TOOLS=1 $(SWIFT) test --skip-build
	$(MAKE) fuzz FUZZ_SECONDS=3

# Coverage-guided fuzzing of every parser (issue 38, Fuzz/README.md): each target runs for
# FUZZ_SECONDS on a copy of its seed corpus, one line per target, failing on a finding.
# FUZZ_TARGETS="FuzzSTUN FuzzJSON" runs some of them.
FUZZ_SECONDS ?= 180
fuzz: deps
	SWIFT=$(SWIFT) Fuzz/fuzz.sh $(FUZZ_SECONDS)

# The suites of the engine, the tables and workers, the HTTP server, and the codec and TLS
# session they use, under AddressSanitizer and ThreadSanitizer (issue 38), each in a build path
# of its own. LeakSanitizer is off: the build runs the BPF plugin's tool instrumented, whose
# buffers live to its exit, and XCTest keeps every test case (and all a test holds) alive to the
# process's exit, so each would show as a leak; the fuzz targets check each input for leaks.
SANITIZED_SUITES := DatagramEngineTests|RelayCoreTests|RelayHTTPTests|STUNTests|TLSTests
test-asan: deps
	ASAN_OPTIONS=detect_leaks=0 $(SWIFT) build --build-tests --sanitize=address --scratch-path .build/asan
	ASAN_OPTIONS=detect_leaks=0 $(SWIFT) test --skip-build --sanitize=address --scratch-path .build/asan --filter '$(SANITIZED_SUITES)'

# Tests/tsan.supp: ThreadSanitizer cannot see a contended Swift Mutex handed over (the file says
# why, line by line). A report left makes the run exit non-zero after the last test.
test-tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build/tsan
	TSAN_OPTIONS="suppressions=$(CURDIR)/Tests/tsan.supp" $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build/tsan \
		--filter '$(SANITIZED_SUITES)'

# The C reference forwarder (bench/reference/forwarder.c): what the engine is measured against,
# built with the system compiler at -O2, as a C program would be.
CC ?= cc
reference: deps
	@mkdir -p .build/reference
	$(CC) -O2 -Wall -Wextra -o .build/reference/forwarder bench/reference/forwarder.c -luring

demo: release reference
	bench/demo.sh

# The counting tools of bench/profile-forwarder.sh and bench/compare-instructions.sh: valgrind
# (callgrind: instructions per datagram) and strace (system calls by name).
bench-deps:
	@for tool in valgrind strace; do \
		command -v $$tool >/dev/null || { echo "make: installing $$tool (instruction and syscall counts)"; \
			{ $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $$tool; } || \
			{ echo "make: ERROR: could not install $$tool (apt-get install $$tool)" >&2; exit 1; }; }; \
	done

# The engine benchmark: a forwarder per backend at fixed rates, side by side (bench/README.md):
# the harness, the C reference and the relay executable (issue 20). A quick look by default
# (about 4 minutes). The figures in bench/README.md come from `make bench BENCH_SECONDS=1
# BENCH_REPEATS=16`, about 12 minutes: a median of 3 repeats moves by several percent on a
# shared 2-core machine.
BENCH_SECONDS ?= 2
BENCH_REPEATS ?= 3
bench: release reference
	.build/release/engine-bench --c-forwarder .build/reference/forwarder --rates 50000,200000 --seconds $(BENCH_SECONDS) --repeats $(BENCH_REPEATS) --out bench/results/engine.md

# Instructions and system calls per datagram, ours against the C reference and the relay
# executable against ours (bench/README.md).
profile: release reference bench-deps
	bench/profile-forwarder.sh

# Issue 8's check: the engine at OLD (before its restructuring) and NEW, in instructions, system
# calls and GSO sends per datagram under one harness (bench/compare-instructions.sh).
OLD ?= 2be9fa3
NEW ?= HEAD
compare-instructions: bench-deps
	$(SWIFT) build -c release --product engine-bench
	bench/compare-instructions.sh $(OLD) $(NEW)

clean:
	rm -rf .build
