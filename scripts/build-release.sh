#!/bin/sh
# The release build of the two executables, exactly as the Dockerfile runs it (and as
# scripts/docker-build-check.sh runs it outside Docker). The Swift runtime is linked
# statically, so the runtime image needs only libc, libstdc++, libuv1, libsqlite3, zlib1g,
# libhttp-parser2.9 and libssl3 (libcrypto, and libssl for TLS).
# SWIFT selects the swift driver (default `swift`).
set -eu
${SWIFT:-swift} build -c release --static-swift-stdlib --product runneld
${SWIFT:-swift} build -c release --static-swift-stdlib --product runnel
