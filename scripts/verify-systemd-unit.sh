#!/bin/sh
# Checks systemd/runneld.service with `systemd-analyze verify`.
#
# verify insists that ExecStart's binary exists, and /usr/local/bin/runneld usually does not on
# a build machine. So the check runs on a copy of the unit, in a temporary directory, whose
# /usr/local/bin is replaced by the directory of a built runneld (RUNNELD_BIN_DIR, default
# .build/release, else .build/debug). Nothing else in the unit is changed, and the copy keeps
# the name runneld.service, so every directive is checked as installed.
#
# Usage: scripts/verify-systemd-unit.sh     (exit 0 when verify reports nothing)
set -eu
cd "$(dirname "$0")/.."

bin_dir=${RUNNELD_BIN_DIR:-}
if [ -z "$bin_dir" ]; then
    for candidate in .build/release .build/debug; do
        if [ -x "$candidate/runneld" ]; then bin_dir=$candidate; break; fi
    done
fi
if [ -z "$bin_dir" ] || [ ! -x "$bin_dir/runneld" ]; then
    echo "verify-systemd-unit: no built runneld; run 'swift build --product runneld' first (or set RUNNELD_BIN_DIR)" >&2
    exit 1
fi
bin_dir=$(cd "$bin_dir" && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
sed "s|/usr/local/bin/|$bin_dir/|g" systemd/runneld.service > "$work/runneld.service"

# verify prints problems on stderr and may still exit 0 for some of them: fail on any output.
if ! output=$(systemd-analyze verify "$work/runneld.service" 2>&1); then
    printf '%s\n' "$output" >&2
    echo "verify-systemd-unit: FAILED" >&2
    exit 1
fi
if [ -n "$output" ]; then
    printf '%s\n' "$output" >&2
    echo "verify-systemd-unit: FAILED (warnings)" >&2
    exit 1
fi
echo "verify-systemd-unit: systemd/runneld.service OK (ExecStart checked against $bin_dir/runneld)"
