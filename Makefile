# The two commands a new user needs: `make demo` and `make test`. Both install what is missing.
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build release test demo bench clean

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

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

demo: release
	bench/demo.sh

bench: release
	bench/engine.sh

clean:
	rm -rf .build
