# The two commands a new user needs: `make demo` and `make test`. Both install what is missing.
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps test-deps build release test demo bench clean

# liburing-dev is the only system package the build needs; install it when its header is absent.
deps:
	@if [ ! -f /usr/include/liburing.h ]; then \
		echo "make: installing liburing-dev (needed for the io_uring backend)"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq liburing-dev; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# Test-only tools: iperf3 (an unmodified UDP application through a forward rule), socat
# (its TCP control channel beside the relay) and ffmpeg (a real RTP sender with RTCP on port + 1,
# through an "rtcp": "pair" session). Installed when missing; tests say so if absent.
test-deps:
	@if ! command -v iperf3 >/dev/null || ! command -v socat >/dev/null || ! command -v ffmpeg >/dev/null; then \
		echo "make: installing iperf3, socat and ffmpeg for the end-to-end tests"; \
		($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends iperf3 socat ffmpeg) || \
			echo "make: could not install iperf3/socat/ffmpeg; the tests that need them will say they were skipped"; \
	fi

test: deps test-deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

demo: release
	bench/demo.sh

# The engine benchmark: a forwarder per backend at fixed rates, side by side (bench/README.md).
bench: release
	.build/release/engine-bench --rates 50000,200000 --seconds 2 --repeats 3 --out bench/results/engine.md

clean:
	rm -rf .build
