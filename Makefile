# Runnel: the two commands a newcomer needs, and the install path.
#   make run    install what is needed, build, start runneld on config/runneld.toml
#   make test   install what is needed, run the whole test suite
PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
UNITDIR ?= /etc/systemd/system
SWIFT ?= swift
SHELL := /bin/bash
APT_PACKAGES = libuv1-dev libsqlite3-dev libhttp-parser-dev libssl-dev zlib1g-dev libnats-dev pkg-config
# What the tests use besides: python3-pytest (pytest, which runs the black-box suites in
# Tests/blackbox, each check a test case of the Swift tests), promtool (Prometheus's linter of the
# /metrics format) and python3-httpx (the HTTP client of Tests/blackbox/test_http.py,
# test_websocket.py, test_permissions.py and test_backpressure.py), chromium and chromium-driver
# (the headless browser of test_dashboard.py), openssl (the command that makes test_tls.py's
# certificates and its s_client checks, and the client checklists' certificate), nodejs (Node,
# which runs Tests/blackbox/js-client-checks.mjs: 20 or later, with its WebSocket; Debian 12's own
# is 18, too old), node-typescript (tsc, which check-js runs over the dashboard's script and the
# JavaScript client), iproute2 (ss, whose byte counts show test_dashboard.py the page's compressed
# frames), nats-server (the NATS system test_cluster.py starts on loopback for its nodes; never as
# a system service); websockets and selenium come from PyPI (test-deps).
TEST_APT_PACKAGES = python3-pytest prometheus python3-httpx chromium chromium-driver openssl nodejs node-typescript iproute2 nats-server

.PHONY: deps test-deps apt-install build release run test lint check-js install uninstall clean

# Installs the system packages the build needs (Debian/Ubuntu; run as root or with sudo).
deps:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(APT_PACKAGES)"

test-deps: deps
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(TEST_APT_PACKAGES)"
	@# Debian's python3-httpx serves /usr/bin/python3; another python3 on PATH (pyenv, a venv)
	@# gets httpx from PyPI.
	@python3 -c 'import httpx' 2>/dev/null || python3 -m pip install --quiet httpx
	@# Likewise pytest: Debian's python3-pytest serves /usr/bin/python3, another python3 gets it from PyPI.
	@python3 -c 'import pytest' 2>/dev/null || python3 -m pip install --quiet pytest \
		|| python3 -m pip install --quiet --break-system-packages pytest
	@# Python's websockets (Tests/blackbox/test_websocket.py, test_permissions.py, test_backpressure.py,
	@# and the Python client's websocket extra in test_python_client.py) from PyPI: 13 or later has the
	@# client they use, and Debian 12 packages 10.4. A Debian python3 needs pip's --break-system-packages.
	@# The Python client itself (clients/python) is not installed: its tests import this checkout's.
	@python3 -c 'import websockets.sync.client' 2>/dev/null || python3 -m pip install --quiet 'websockets>=13' \
		|| python3 -m pip install --quiet --break-system-packages 'websockets>=13'
	@# PyJWT and cryptography (Tests/blackbox/test_jwt.py) sign the tokens and make the keys it checks with.
	@python3 -c 'import jwt, cryptography' 2>/dev/null || python3 -m pip install --quiet PyJWT cryptography \
		|| python3 -m pip install --quiet --break-system-packages PyJWT cryptography
	@# selenium (Tests/blackbox/test_dashboard.py) drives Debian's chromium through chromium-driver.
	@python3 -c 'import selenium.webdriver' 2>/dev/null || python3 -m pip install --quiet selenium \
		|| python3 -m pip install --quiet --break-system-packages selenium

apt-install:
	@missing=""; for p in $(PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# A module that imports another it does not list as a dependency fails to build (the layers of
# docs/architecture.md), not only one that would make a cycle.
LAYERS = --explicit-target-dependency-import-check error

build: deps
	$(SWIFT) build $(LAYERS)

# The same build the Dockerfile runs (static Swift runtime; only libuv is needed at run time).
release: deps
	SWIFT=$(SWIFT) scripts/build-release.sh

run: release
	./.build/release/runneld --config config/runneld.toml

# The whole suite with every runneld on one event loop, then the suites that start runneld
# again with four loops (RUNNEL_TEST_LOOPS, which the harnesses pass as --loops), but for the
# evaluation stall's timing bound, which is about the first loop's own work (CI runs it once
# more against the release build) and which four loops' threads on a two-core machine, beside
# the other suites, can push past its debug bound. The whole
# output is kept in .build/test-output.log; on a failure its failing lines are printed again
# at the end, since Swift Testing reports a failure where it happens, among hundreds of lines
# of tests running in parallel.
test: test-deps
	@mkdir -p .build
	@set -o pipefail; { RUNNEL_TEST_LOOPS=1 $(SWIFT) test $(LAYERS) 2>&1 && \
		echo "=== again, every runneld on four loops" && \
		RUNNEL_TEST_LOOPS=4 $(SWIFT) test $(LAYERS) --filter RunneldTests \
			--skip tenThousandDistinctMapsOnOneValueDoNotStallTheLoop 2>&1; } | tee .build/test-output.log || { \
		echo; echo "=== what failed (all of it in .build/test-output.log):"; \
		grep -aE -A 15 '✘ Test .*(recorded an issue|failed)|error:|Fatal error|Assertion failed' .build/test-output.log | tail -n 150; \
		exit 1; }

lint:
	$(SWIFT) format lint --strict --recursive --parallel Sources Tests bench Fuzz Plugins examples

# The dashboard's script and the JavaScript client type-checked from their JSDoc annotations
# (web/dashboard/tsconfig.json, clients/js/tsconfig.json: strict, DOM); then the client's
# hand-written declarations (clients/js/runnel.d.ts) compiled with a TypeScript program that uses
# them and compared, member by member, with the declarations tsc makes from the JSDoc (written to
# .build/js-types); a type error or a difference fails.
check-js: test-deps
	tsc -p web/dashboard
	tsc -p clients/js
	tsc -p clients/js --noEmit false --declaration --emitDeclarationOnly --outDir .build/js-types
	tsc -p clients/js/types-test

install: release
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(SYSCONFDIR)/runnel $(DESTDIR)$(UNITDIR)
	install -m 755 .build/release/runneld .build/release/runnel $(DESTDIR)$(PREFIX)/bin/
	[ -f $(DESTDIR)$(SYSCONFDIR)/runnel/runneld.toml ] || sed 's|^data_dir = "data"$$|data_dir = "/var/lib/runnel"|' config/runneld.toml > $(DESTDIR)$(SYSCONFDIR)/runnel/runneld.toml
	sed 's|/usr/local/bin|$(PREFIX)/bin|g' systemd/runneld.service > $(DESTDIR)$(UNITDIR)/runneld.service
	@echo "installed; enable with: systemctl daemon-reload && systemctl enable --now runneld"

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/runneld $(DESTDIR)$(PREFIX)/bin/runnel $(DESTDIR)$(UNITDIR)/runneld.service

clean:
	rm -rf .build .build-*
