#!/bin/sh
# A live terminal dashboard built from `runnel sub` and server-side operator chains:
#   load    cpu.*  (pattern) mapped to "host load" strings, batched once a second with
#           bufferWithTime, so the terminal redraws at most about once a second per batch
#   alerts  cpu.*  filtered server-side to load > 0.9
#   errors  logs.app filtered server-side to level "error"
# Usage: examples/dashboard/dashboard.sh   (with examples/dashboard/feed.sh running; Ctrl-C
# quits, and every `runnel sub` removes its subscription on the way out)
set -eu
. "$(dirname "$0")/runnel-bin.sh"

"$RUNNEL" ping >/dev/null || exit 1

{
    "$RUNNEL" sub 'cpu.*' --map '"load " + $subject + " " + str(.load)' \
        --ops '[{"op":"bufferWithTime","seconds":1}]' &
    "$RUNNEL" sub 'cpu.*' --filter '.load > 0.9' \
        --map '"alert " + .host + " at " + str(round(.load * 100)) + "%"' &
    "$RUNNEL" sub logs.app --filter '.level == "error"' --map '"error " + .msg' &
    wait
} | awk '
    # Every input line is one JSON string, or an array of them (the load batches). The
    # strings hold no quotes or commas, so splitting on the JSON punctuation is enough.
    function remember(list, text,   i) {
        for (i = 5; i > 1; i--) list[i] = list[i - 1]
        list[1] = text
    }
    function bar(value,   n, s) {
        n = int(value * 40 + 0.5); s = ""
        while (n-- > 0) s = s "#"
        return s
    }
    # Redraws in place: home the cursor, end every line by clearing what was left of the
    # previous frame (\033[K), then clear below (\033[J). No full-screen clear, so no flicker.
    function line(text) { printf "%s\033[K\n", text }
    function render(   host, i) {
        printf "\033[H"
        line(sprintf("runnel dashboard   (batches: %d, alerts: %d, errors: %d)   Ctrl-C quits", batches, alerts, errors))
        line("")
        line(sprintf("%-12s %5s", "HOST", "LOAD"))
        for (i = 1; i <= nhosts; i++) {
            host = order[i]
            line(sprintf("%-12s %5.2f  %s%s", host, load[host], (load[host] > 0.9 ? "!" : " "), bar(load[host])))
        }
        line("")
        line("recent alerts (load > 0.9, filtered by the server):")
        for (i = 1; i <= 5; i++) if (alert[i] != "") line("  " alert[i])
        line("")
        line("recent errors (logs.app, level == \"error\"):")
        for (i = 1; i <= 5; i++) if (error[i] != "") line("  " error[i])
        printf "\033[J"
        fflush()
    }
    {
        gsub(/^\[|\]$/, "")
        n = split($0, items, /","/)
        for (k = 1; k <= n; k++) {
            item = items[k]
            gsub(/"/, "", item)
            split(item, word, " ")
            if (word[1] == "load") {
                host = word[2]; sub(/^cpu\./, "", host)
                if (!(host in load)) order[++nhosts] = host
                load[host] = word[3] + 0
            } else if (word[1] == "alert") {
                alerts++; remember(alert, substr(item, 7))
            } else if (word[1] == "error") {
                errors++; remember(error, substr(item, 7))
            }
        }
        if (n > 1 || word[1] == "load") batches++
        render()
    }
    BEGIN { printf "\033[2J"; render() }
'
