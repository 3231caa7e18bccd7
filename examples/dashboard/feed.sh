#!/bin/sh
# Publishes fake monitoring data so the dashboard has something to show:
#   cpu.HOST   {"host":"web1","load":0.42}   for four hosts, twice a second
#   logs.app   {"level":"info","msg":"..."}  a log line now and then, through ONE
#              `runnel pub logs.app` reading stdin (pipelined, as `tail -F | runnel pub` is)
# Usage: examples/dashboard/feed.sh      (stop with Ctrl-C; honours RUNNEL_SERVER/RUNNEL_TOKEN)
set -eu
. "$(dirname "$0")/runnel-bin.sh"

"$RUNNEL" ping >/dev/null || exit 1
# Stop the whole group (awk, the shell loop, the log publisher); reset the trap first so the
# shell's own signal does not run it again.
trap 'trap - INT TERM; kill 0' INT TERM

# awk makes the numbers (a random walk per host) and the log lines; the shell publishes.
awk 'BEGIN {
    srand(); split("web1 web2 db1 cache1", hosts, " ")
    for (i = 1; i <= 4; i++) load[i] = 0.2 + rand() * 0.5
    for (tick = 0; ; tick++) {
        for (i = 1; i <= 4; i++) {
            load[i] += (rand() - 0.5) * 0.25
            if (rand() < 0.03) load[i] = 0.95          # a spike now and then
            if (load[i] < 0.02) load[i] = 0.02
            if (load[i] > 1.0) load[i] = 0.6
            printf "cpu %s {\"host\":\"%s\",\"load\":%.2f}\n", hosts[i], hosts[i], load[i]
        }
        if (rand() < 0.5) {
            level = rand() < 0.2 ? "error" : "info"
            printf "log {\"level\":\"%s\",\"msg\":\"request %d handled in %d ms\"}\n", level, tick, int(rand() * 900)
        }
        fflush()
        system("sleep 0.5")
    }
}' | {
    # One long-lived publisher for the log stream; one short `runnel pub` per cpu sample.
    mkfifo_dir=$(mktemp -d)
    mkfifo "$mkfifo_dir/logs"
    "$RUNNEL" pub logs.app < "$mkfifo_dir/logs" &
    exec 3> "$mkfifo_dir/logs"
    rm -rf "$mkfifo_dir"
    while read -r kind rest; do
        case $kind in
            cpu) "$RUNNEL" pub "cpu.${rest%% *}" "${rest#* }" ;;
            log) printf '%s\n' "$rest" >&3 ;;
        esac
    done
}
