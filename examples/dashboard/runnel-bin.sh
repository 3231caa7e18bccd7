# Sourced by dashboard.sh and feed.sh: sets RUNNEL to the runnel binary to use.
# $RUNNEL if set, else `runnel` on PATH, else this checkout's release or debug build.
if [ -z "${RUNNEL:-}" ]; then
    root=$(cd "$(dirname "$0")/../.." && pwd)
    if command -v runnel >/dev/null 2>&1; then RUNNEL=runnel
    elif [ -x "$root/.build/release/runnel" ]; then RUNNEL=$root/.build/release/runnel
    elif [ -x "$root/.build/debug/runnel" ]; then RUNNEL=$root/.build/debug/runnel
    else
        echo "no runnel binary: build it (swift build --product runnel) or set RUNNEL" >&2
        exit 1
    fi
fi
