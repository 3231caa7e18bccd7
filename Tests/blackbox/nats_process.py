"""A nats-server process of its own for what runs runneld as a cluster (test_cluster.py, through
conftest.py's `nats` fixture; test_dashboard.py; scripts/cluster-crash-harness.py): Debian's
`nats-server` (2.9 or later; NATS_SERVER names another) with JetStream, on free loopback ports
and a store directory of its own, started again on the same ports and directory after a stop or
a kill, and read through its monitoring endpoint (`/healthz`, `/connz`). Its log goes to a file
whose last lines every failure shows."""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

# How long a starting server may take to answer /healthz with 200 (JetStream recovering a big
# store takes a while; an empty one is ready in well under a second).
STARTUP_SECONDS = 15

BINARY = os.environ.get("NATS_SERVER", "nats-server")


class NatsServer:
    """`nats-server -a 127.0.0.1 -p PORT -m MONITOR_PORT -js -sd STORE_DIR`, plus `arguments`
    (credentials such as `["--auth", TOKEN]`, `-DV` for a trace...). The first start lets the
    server pick free ports (`-1`) and reads them from its log, so nothing can take them between
    a probe and the start; every later `start()` reuses them and the store directory, as a
    restarted server would; `port` and `monitor_port` fix them from the first start instead.
    `jetstream=False` leaves JetStream off. Started by the constructor unless `start=False`; as
    a context manager it is stopped (killed, if it will not stop) and its directory removed on
    the way out."""

    def __init__(self, arguments=(), jetstream=True, directory=None, start=True, port=None, monitor_port=None):
        self.directory = directory or tempfile.mkdtemp(prefix="nats-test-")
        self.store_dir = os.path.join(self.directory, "store")
        self.log_path = os.path.join(self.directory, "nats-server.log")
        self.arguments = list(arguments)
        self.jetstream = jetstream
        self.port, self.monitor_port = port, monitor_port
        self.process = None
        if start:
            try:
                self.start()
            except BaseException:
                if directory is None:  # the error carries the log's tail
                    shutil.rmtree(self.directory, ignore_errors=True)
                raise

    @property
    def url(self):
        """The URL clients connect to (runneld's `cluster_nats`)."""
        return f"nats://127.0.0.1:{self.port}"

    @property
    def pid(self):
        return self.process.pid if self.process else None

    @property
    def monitor_url(self):
        return f"http://127.0.0.1:{self.monitor_port}"

    def start(self):
        """Starts the server (again) and returns once /healthz answers 200; raises with the log's
        tail when it exits first or is not ready within STARTUP_SECONDS."""
        assert not self.running(), "nats-server is already running"
        command = [BINARY, "-a", "127.0.0.1", "-p", str(self.port or -1), "-m", str(self.monitor_port or -1)]
        if self.jetstream:
            command += ["-js", "-sd", self.store_dir]
        command += self.arguments
        log_start = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        with open(self.log_path, "a") as log:
            log.write(f"--- {' '.join(command)}\n")
            log.flush()
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            self._wait_until_ready(log_start)
        except BaseException:
            self.kill()  # not ready, or the wait was cut short (SIGTERM, a timeout): not left running
            raise
        return self

    def _wait_until_ready(self, log_start):
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"nats-server exited with status {self.process.returncode}:\n{self.log_tail()}")
            if self.port is None or self.monitor_port is None:
                self._read_ports(log_start)
            if self.monitor_port is not None and self.port is not None and self.healthz() == 200:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"nats-server was not ready within {STARTUP_SECONDS} s:\n{self.log_tail()}")
            time.sleep(0.05)

    def _read_ports(self, offset):
        with open(self.log_path) as log:
            log.seek(offset)
            text = log.read()
        client = re.search(r"Listening for client connections on 127\.0\.0\.1:(\d+)", text)
        monitor = re.search(r"Starting http monitor on 127\.0\.0\.1:(\d+)", text)
        self.port = self.port or (int(client.group(1)) if client else None)
        self.monitor_port = self.monitor_port or (int(monitor.group(1)) if monitor else None)

    def running(self):
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout=30):
        """SIGTERM, and waits for the exit (killed after `timeout` s, and the timeout raised):
        the server closes its clients' connections and flushes JetStream. Returns the status
        (nats-server 2.9 exits with 1 on SIGTERM)."""
        if not self.running():
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def kill(self):
        """SIGKILL, and waits: the connections drop without a word, as when a machine dies."""
        if self.running():
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def close(self):
        """Stops it and removes its directory (store and log)."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        self.close()

    def log_tail(self, lines=30):
        try:
            with open(self.log_path, errors="replace") as log:
                return "".join(log.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def _get(self, path, timeout=5):
        """(status, body) of GET `path` on the monitoring port; status 0 when nothing answers."""
        try:
            with urllib.request.urlopen(self.monitor_url + path, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return 0, b""

    def healthz(self):
        """The status of GET /healthz (200 when ready), 0 when nothing answers."""
        return self._get("/healthz")[0]

    def monitor(self, path):
        """The parsed JSON of GET `path` on the monitoring port (`/varz`, `/jsz?streams=1`...)."""
        status, body = self._get(path)
        assert status == 200, f"GET {path} on nats-server's monitor: status {status}\n{self.log_tail()}"
        return json.loads(body)

    def connz(self):
        """/connz?subs=1: `connections`, each with `name` (the client's) and `subscriptions_list`
        (its subjects; absent when it has none)."""
        return self.monitor("/connz?subs=1&limit=1024")

    def subscriptions(self, name):
        """The subjects subscribed by the one open connection called `name` (a list; a subject
        twice when subscribed twice); AssertionError unless exactly one connection has that
        name."""
        connections = [c for c in self.connz()["connections"] if c.get("name") == name]
        assert len(connections) == 1, (
            f"{len(connections)} connections named {name!r}; open: "
            f"{[c.get('name') for c in self.connz()['connections']]}")
        return connections[0].get("subscriptions_list", [])


def subject_matches(pattern, subject):
    """Whether the NATS subscription `pattern` (tokens, `*`, a final `>`) receives `subject`."""
    pattern_tokens, tokens = pattern.split("."), subject.split(".")
    for index, token in enumerate(pattern_tokens):
        if token == ">":
            return len(tokens) > index
        if index >= len(tokens) or (token != "*" and token != tokens[index]):
            return False
    return len(tokens) == len(pattern_tokens)
