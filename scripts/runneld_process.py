"""What the front door's test scripts (http-tests.py, websocket-tests.py, dashboard-tests.py, tls-tests.py) share: a
runneld process of their own on free loopback ports, a line-protocol client over TCP,
and a reader of GET /events streams."""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import httpx


class Daemon:
    """One runneld process with its own config file, on free loopback ports; or, to restart one,
    on given ports (`port`, `http_port`) in a given directory (`directory`, an earlier daemon's,
    which then has to be stopped with `keep_directory=True`). A config with `tls_listen` or `https_listen` on port 0
    gets the ports chosen as `tls_port` and `https_port` (None when off)."""

    def __init__(self, binary, toml, port=0, http_port=0, directory=None):
        self.directory = directory or tempfile.mkdtemp(prefix="runneld-test-")
        config = os.path.join(self.directory, "runneld.toml")
        with open(config, "w") as file:
            file.write(toml.replace("DATA_DIR", os.path.join(self.directory, "data")))
        self.process = subprocess.Popen(
            [binary, "--config", config, "--listen", f"127.0.0.1:{port}", "--http-listen", f"127.0.0.1:{http_port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log = []
        self.port = self.http_port = self.tls_port = self.https_port = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.port is None:
            line = self.process.stderr.readline()
            if not line:
                break
            self.log.append(line.rstrip())
            match = re.search(r"serving HTTP on 127\.0\.0\.1:(\d+)", line)
            if match:
                self.http_port = int(match.group(1))
            match = re.search(r"serving HTTPS on 127\.0\.0\.1:(\d+)", line)
            if match:
                self.https_port = int(match.group(1))
            match = re.search(r"listening with TLS on 127\.0\.0\.1:(\d+)", line)
            if match:
                self.tls_port = int(match.group(1))
            match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if match:
                self.port = int(match.group(1))
        if self.port is None or self.http_port is None:
            self.process.kill()
            raise RuntimeError("runneld did not start:\n" + "\n".join(self.log[-20:]))
        threading.Thread(target=self._drain, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.ws_url = f"ws://127.0.0.1:{self.http_port}/ws"
        self.https_url = f"https://127.0.0.1:{self.https_port}"

    def _drain(self):
        for line in self.process.stderr:
            self.log.append(line.rstrip())

    def alive(self):
        assert self.process.poll() is None, "runneld exited:\n" + "\n".join(self.log[-20:])

    def rss_bytes(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def stop(self, keep_directory=False):
        """SIGTERM, and the exit status; a daemon that has not exited after 30 s is killed (and
        the timeout raised), so a hung daemon never outlives its test. Its directory (config and
        data) is removed unless `keep_directory`."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise
        finally:
            if not keep_directory:
                shutil.rmtree(self.directory, ignore_errors=True)


def poll_until(read, predicate, what, seconds=5):
    """Calls `read` every 50 ms, for up to `seconds`, until `predicate` holds of what it
    returns (a server's stats, say); returns that, or fails naming `what`."""
    deadline = time.monotonic() + seconds
    while True:
        current = read()
        if predicate(current):
            return current
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: {current}")
        time.sleep(0.05)


class LineClient:
    """The line protocol over TCP: one JSON object per line each way. With `receive_buffer`,
    the socket's receive buffer is set to that many bytes before it connects (a subscriber
    that is meant to fall behind)."""

    def __init__(self, port, receive_buffer=None, timeout=10):
        if receive_buffer is None:
            self.socket = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        else:
            self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            self.socket.settimeout(timeout)
            self.socket.connect(("127.0.0.1", port))
        self.buffer = b""

    def send(self, request):
        self.socket.sendall(json.dumps(request).encode() + b"\n")

    def line(self):
        while b"\n" not in self.buffer:
            chunk = self.socket.recv(65536)
            if not chunk:
                raise EOFError("the server closed the connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def request(self, request):
        self.send(dict(request, ref=1))
        while True:
            line = self.line()
            if line.get("ref") == 1:
                return line

    def last_line(self):
        """Reads until the server closes the connection; returns the last line it wrote."""
        last = None
        try:
            while True:
                last = self.line()
        except EOFError:
            return last

    def next_value(self):
        line = self.line()
        assert line.get("ev") == "next", line
        return line["value"]

    def close(self):
        self.socket.close()


class EventStream:
    """One GET /events response read with httpx, event by event (comment lines kept apart)."""

    def __init__(self, d, query, headers=None, timeout=10):
        self.client = httpx.Client(timeout=timeout)
        self.context = self.client.stream("GET", d.url + "/events", params=query, headers=headers or {})
        self.response = self.context.__enter__()
        self.lines = self.response.iter_lines()
        self.comments = 0

    def event(self):
        """The next event as a dict of its fields; None once the response has ended."""
        fields = {}
        for line in self.lines:
            if line == "":
                if fields:
                    return fields
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value
        return fields or None

    def close(self):
        self.context.__exit__(None, None, None)
        self.client.close()


def run_checks(checks, argument):
    """Runs each check with `argument`, printing one line for each; returns how many failed."""
    failed = 0
    for check in checks:
        started = time.monotonic()
        try:
            check(argument)
            print(f"ok   {check.__name__} ({time.monotonic() - started:.1f}s)", flush=True)
        except Exception as error:  # noqa: BLE001 - report every failure and go on
            failed += 1
            print(f"FAIL {check.__name__}: {error!r}", flush=True)
    return failed


def stop_and_report(daemon):
    """Stops `daemon`: 0, or 1 (with the tail of its log printed) when it did not exit with 0."""
    status = daemon.stop()
    if status == 0:
        return 0
    print(f"FAIL runneld stopped with status {status}:\n" + "\n".join(daemon.log[-20:]))
    return 1


def main(description, suites):
    """The scripts' command line (`--runneld PATH`): each (config, checks) of `suites` against a
    daemon of its own; one line per check, a total, exit status 0 when every check passed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runneld", default=".build/debug/runneld")
    arguments = parser.parse_args()
    failed = 0
    for config, checks in suites:
        daemon = Daemon(arguments.runneld, config)
        try:
            failed += run_checks(checks, daemon)
        finally:
            failed += stop_and_report(daemon)
    total = sum(len(checks) for _, checks in suites)
    print(f"{total - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
