#!/usr/bin/env bash
# Builds and runs examples/library-user against this checkout's Runnel as a versioned
# dependency: a git repository of the committed tree (HEAD) in a temporary folder, tagged
# 1.2.0 there, named by a file:// URL. Debug and release builds, each run once and its output
# compared with what the library promises. The checkout's own tags are not touched.
#
# The package's second program, ClientUser, is README.md's Swift client example exactly as
# written there (the first ```swift block after "## Clients", copied in here), run against a
# runneld of this checkout on 127.0.0.1:7455: the example must publish, receive its value back
# through the subscription's stages and end.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
runneld_pid=""
cleanup() {
    [ -n "$runneld_pid" ] && kill "$runneld_pid" 2>/dev/null && wait "$runneld_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
git clone --quiet --no-local . "$work/runnel"
git -C "$work/runnel" -c user.name=ci -c user.email=ci@localhost tag 1.2.0
cp -R examples/library-user "$work/user"
mkdir -p "$work/user/Sources/ClientUser"
awk '/^## Clients/ { clients = 1 } clients && /^```swift$/ { inblock = 1; next }
     inblock && /^```/ { exit } inblock { print }' README.md >"$work/user/Sources/ClientUser/main.swift"
grep -q RunnelClient.connect "$work/user/Sources/ClientUser/main.swift" || {
    echo "README.md has no Swift client example under ## Clients" >&2
    exit 1
}

swift build --product runneld
.build/debug/runneld --listen 127.0.0.1:7455 --http-listen "" >"$work/runneld.log" 2>&1 &
runneld_pid=$!
for _ in $(seq 1 50); do grep -q "listening on 127.0.0.1:7455" "$work/runneld.log" && break; sleep 0.1; done
grep -q "listening on 127.0.0.1:7455" "$work/runneld.log" || { cat "$work/runneld.log"; exit 1; }

expected='filter+map: [20, 40, 60]
replayed: ["v2", "v3"]
throttled before: []
throttled after: [3]'
for configuration in debug release; do
    RUNNEL_GIT_URL="file://$work/runnel" swift build --package-path "$work/user" -c "$configuration" -v \
        >"$work/build-$configuration.log" 2>&1 || { tail -n 50 "$work/build-$configuration.log" >&2; exit 1; }
    # A package using the library and the client keeps Swift's exclusivity checks (#46).
    if grep -q -- '-enforce-exclusivity=unchecked' "$work/build-$configuration.log"; then
        echo "library-user ($configuration): a target it builds has -enforce-exclusivity=unchecked" >&2
        exit 1
    fi
    output=$("$work/user/.build/$configuration/LibraryUser")
    if [[ $output != "$expected" ]]; then
        printf 'library-user (%s) printed:\n%s\nexpected:\n%s\n' "$configuration" "$output" "$expected" >&2
        exit 1
    fi
    echo "library-user ($configuration): ok"
    # The README's example: the value it published, through its filter and map ("a"), from "cpu".
    output=$(timeout 30 "$work/user/.build/$configuration/ClientUser")
    if [[ $output != *'"a"'* || $output != *cpu* ]]; then
        printf "README's Swift client example (%s) printed:\n%s\n" "$configuration" "$output" >&2
        exit 1
    fi
    echo "README's Swift client example ($configuration): ok"
done
