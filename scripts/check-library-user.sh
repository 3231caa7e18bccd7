#!/usr/bin/env bash
# Builds and runs examples/library-user against this checkout's Runnel as a versioned
# dependency: a git repository of the committed tree (HEAD) in a temporary folder, tagged
# 1.2.0 there, named by a file:// URL. Debug and release builds, each run once and its output
# compared with what the library promises. The checkout's own tags are not touched.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone --quiet --no-local . "$work/runnel"
git -C "$work/runnel" -c user.name=ci -c user.email=ci@localhost tag 1.2.0
cp -R examples/library-user "$work/user"
expected='filter+map: [20, 40, 60]
replayed: ["v2", "v3"]
throttled before: []
throttled after: [3]'
for configuration in debug release; do
    RUNNEL_GIT_URL="file://$work/runnel" swift build --package-path "$work/user" -c "$configuration"
    output=$("$work/user/.build/$configuration/LibraryUser")
    if [[ $output != "$expected" ]]; then
        printf 'library-user (%s) printed:\n%s\nexpected:\n%s\n' "$configuration" "$output" "$expected" >&2
        exit 1
    fi
    echo "library-user ($configuration): ok"
done
