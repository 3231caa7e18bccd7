#!/usr/bin/env python3
"""A network that drops connections without a word, for the clients' keep-alive checks.

    Tests/blackbox/silent_network.py UPSTREAM_PORT

A TCP proxy on a free loopback port to 127.0.0.1:UPSTREAM_PORT; prints its port on a line of its
own once it listens. On SIGUSR1 the connections open at that moment lose everything, both ways,
without being closed: neither end hears of it, as when a network drops a connection. Connections
made after it are forwarded. Runs until SIGTERM (or its stdin closes). The Python, JavaScript and
Swift clients' checklists use it (docs/clients.md, item 12).
"""

import selectors
import signal
import socket
import sys
import threading


def main():
    upstream = int(sys.argv[1])
    era = [0]
    # Whatever mask the starting thread had (a test runner's may block signals), these arrive.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1, signal.SIGTERM})
    signal.signal(signal.SIGUSR1, lambda *_: era.__setitem__(0, era[0] + 1))
    listener = socket.create_server(("127.0.0.1", 0))
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    print(listener.getsockname()[1], flush=True)
    # The harness ending us by closing our stdin is as good as SIGTERM.
    threading.Thread(target=lambda: (sys.stdin.read(), signal.raise_signal(signal.SIGTERM)), daemon=True).start()
    while True:
        for key, _ in selector.select():
            if key.fileobj is listener:
                client, _ = listener.accept()
                server = socket.create_connection(("127.0.0.1", upstream))
                selector.register(client, selectors.EVENT_READ, (server, era[0]))
                selector.register(server, selectors.EVENT_READ, (client, era[0]))
                continue
            peer, born = key.data
            try:
                data = key.fileobj.recv(65536)
            except OSError:
                data = b""
            if not data:
                for end in (key.fileobj, peer):
                    if end.fileno() >= 0:
                        selector.unregister(end)
                        end.close()
                continue
            if born == era[0] and peer.fileno() >= 0:
                peer.sendall(data)


if __name__ == "__main__":
    main()
