#!/usr/bin/env bash
# Checks the README as a newcomer would use it: starts runneld with the README's first command
# (`make run`), then runs every ```sh block of README.md against it. A comment line in a block
# that starts with `# {` or `# [` (a JSON line), or `#> ` (any text), is output the block must
# print, as one whole line, in that order. Blocks fenced as ```text are shown, not run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.build/release:$PATH"

log=$(mktemp)
cleanup() {
    if [ -n "${server_pid:-}" ]; then
        pkill -KILL -f '.build/release/runneld --config config/runneld.toml' 2>/dev/null || true
        kill "$server_pid" 2>/dev/null || true
    fi
    rm -f "$log"
}
trap cleanup EXIT

echo "check-readme: starting runneld with 'make run'"
make run >"$log" 2>&1 &
server_pid=$!
for _ in $(seq 1 900); do
    grep -q "listening on 127.0.0.1:7455" "$log" && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$log"; echo "check-readme: make run exited"; exit 1; }
    sleep 1
done
grep -q "listening on 127.0.0.1:7455" "$log" || { cat "$log"; echo "check-readme: runneld never listened"; exit 1; }

# Split README.md's ```sh blocks into files.
blocks=$(mktemp -d)
awk -v dir="$blocks" '
    /^```sh$/ { n++; file = sprintf("%s/%03d.sh", dir, n); inblock = 1; next }
    /^```/ { inblock = 0; next }
    inblock { print > file }
' README.md

failed=0
count=0
for block in "$blocks"/*.sh; do
    count=$((count + 1))
    out=$(timeout 60 bash -e "$block" 2>&1) || { echo "check-readme: block $(basename "$block") failed:"; cat "$block"; echo "$out"; failed=1; continue; }
    # Every expected line must appear, in order.
    rest="$out"
    while IFS= read -r expected; do
        # `#> ` marks any text (a line that starts with `# ` too), `# ` a JSON line.
        case $expected in
        '#> '*) expected="${expected#\#> }" ;;
        *) expected="${expected#\# }" ;;
        esac
        if ! grep -qxF -- "$expected" <<<"$rest"; then
            echo "check-readme: block $(basename "$block") did not print: $expected"
            echo "--- block:"; cat "$block"; echo "--- output:"; echo "$out"
            failed=1
            break
        fi
        rest=$(awk -v line="$expected" 'found { print } $0 == line && !found { found = 1 }' <<<"$rest")
    done < <(grep -E '^(# [\[{]|#> )' "$block" || true)
done
rm -rf "$blocks"

# SIGTERM to runneld itself (make is only its parent), as systemd or Ctrl-C would send it.
pkill -TERM -f '.build/release/runneld --config config/runneld.toml'
status=0
wait "$server_pid" || status=$?
server_pid=""
# make reports the child's status; runneld itself must have stopped cleanly.
grep -q "runneld stopped status=0" "$log" || { cat "$log"; echo "check-readme: runneld did not stop cleanly ($status)"; failed=1; }

if [ "$failed" = 0 ]; then
    echo "check-readme: $count README blocks passed"
else
    exit 1
fi
