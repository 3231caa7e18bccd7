"""The one way the Python tests start runneld, and what they talk to it with: a runneld process
of its own on free loopback ports (`Daemon`, on `command`'s command line), started as the Swift
tests' `RunneldProcess` starts one, or one that must not start (`run_until_exit`); a
line-protocol client over TCP; a reader of GET /events streams; a self-signed certificate;
headless Chromium. The black-box suites (Tests/blackbox/test_*.py) get their daemons through
conftest.py's fixtures, which start them with `Daemon`; the crash harnesses
(scripts/crash-harness.py, scripts/cluster-crash-harness.py) and the benchmarks in bench/websocket
import this module too."""

import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

# As long as the Swift harness (RunneldProcess.startupTimeout) waits for the listening line.
STARTUP_SECONDS = 15

# The event loops every daemon gets (`--loops`), as the Swift harness gives them: the test run's
# `RUNNEL_TEST_LOOPS`, else 1 (`make test` runs the suites with 1 and with 4); pytest's `--loops`
# (conftest.py) sets it for a run.
TEST_LOOPS = os.environ.get("RUNNEL_TEST_LOOPS", "1")


class Daemon:
    """One runneld process with its own config file (`toml`, where DATA_DIR is its data
    directory), started as the Swift harness starts one: `--listen 127.0.0.1:PORT --http-listen
    127.0.0.1:PORT --config FILE --loops TEST_LOOPS`, stdout and stderr read as one stream, and the ports read from
    the lines `serving HTTP on 127.0.0.1:PORT` and then `listening on 127.0.0.1:PORT`. To
    restart one, the given ports (`port`, `http_port`) in a given directory (`directory`, an
    earlier daemon's, which then has to be stopped with `keep_directory=True`). `http=False`
    serves no HTTP (`--http-listen ""`). A config with `tls_listen` or `https_listen` on port 0
    gets the ports chosen as `tls_port` and `https_port` (None when off). `loops` overrides
    TEST_LOOPS.

    A fresh daemon's line and HTTP ports are chosen below the kernel's ephemeral range
    (`quiet_ports`), not by the kernel from it: a daemon restarted on its ports would otherwise
    race every client connecting meanwhile, whose socket may be given the port that was just
    let go as its own (runneld then cannot listen: "address already in use"). One taken in the
    meantime by another test's daemon is chosen again."""

    def __init__(self, binary, toml, port=0, http_port=0, directory=None, http=True, loops=None):
        if port == 0 and http_port == 0:
            for attempt in range(QUIET_PORT_ATTEMPTS):
                chosen = quiet_ports(2)
                try:
                    self._start(binary, toml, chosen[0], chosen[1], directory, http, loops)
                    return
                except PortTaken:
                    if attempt == QUIET_PORT_ATTEMPTS - 1:
                        raise
        self._start(binary, toml, port, http_port, directory, http, loops)

    def _start(self, binary, toml, port, http_port, directory, http, loops):
        self.directory = directory or tempfile.mkdtemp(prefix="runneld-test-")
        config = os.path.join(self.directory, "runneld.toml")
        with open(config, "w") as file:
            file.write(toml.replace("DATA_DIR", os.path.join(self.directory, "data")))
        http_listen = f"127.0.0.1:{http_port}" if http else ""
        self.process = subprocess.Popen(command(binary, config, port, http_listen, loops), stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.log = []
        self.port = self.http_port = self.tls_port = self.https_port = None
        self._announced = threading.Condition()
        # Read from the start, so a daemon that says nothing fails at the deadline rather than
        # blocking a read, and one that says much never blocks on a full pipe.
        threading.Thread(target=self._read, daemon=True).start()
        with self._announced:
            self._announced.wait_for(lambda: self.port is not None or self.process.poll() is not None,
                                     timeout=STARTUP_SECONDS)
        if self.port is None or (http and self.http_port is None):
            self.process.kill()
            self.process.wait()
            if any("address already in use" in line for line in self.log):
                if directory is None:
                    shutil.rmtree(self.directory, ignore_errors=True)
                raise PortTaken("\n".join(self.log[-20:]))
            raise RuntimeError("runneld did not start:\n" + "\n".join(self.log[-20:]))
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.ws_url = f"ws://127.0.0.1:{self.http_port}/ws"
        self.https_url = f"https://127.0.0.1:{self.https_port}"

    def _read(self):
        for line in self.process.stdout:
            line = line.rstrip()
            self.log.append(line)
            if self.port is not None:
                continue
            with self._announced:
                self.http_port = _port(r"serving HTTP on", line) or self.http_port
                self.https_port = _port(r"serving HTTPS on", line) or self.https_port
                self.tls_port = _port(r"listening with TLS on", line) or self.tls_port
                self.port = _port(r"listening on", line)
                self._announced.notify_all()
        with self._announced:
            self._announced.notify_all()

    def alive(self):
        assert self.process.poll() is None, "runneld exited:\n" + "\n".join(self.log[-20:])

    def rss_bytes(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def kill(self):
        """SIGKILL, and waits for the process (the crash harness's kill)."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

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


def freeze(pid, seconds=5):
    """SIGSTOP `pid`, and wait until every thread of it has stopped: kill(2) returns before a
    thread running on another core stops (at its next tick), and a stopping runneld or nats-server
    could still read and answer a request sent meanwhile."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + seconds
    while True:
        states = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(FileNotFoundError), open(f"/proc/{pid}/task/{task}/stat") as stat:
                states.append(stat.read().rpartition(")")[2].split()[0])
        if states and all(state == "T" for state in states):
            return
        assert time.monotonic() < deadline, f"the process's threads not all stopped: {states}"
        time.sleep(0.005)


class PortTaken(RuntimeError):
    """runneld could not listen on a port it was given: something else has it."""


QUIET_PORT_ATTEMPTS = 20


def quiet_ports(count):
    """`count` loopback ports free now, at random below the ephemeral range
    (/proc/sys/net/ipv4/ip_local_port_range), which no connecting socket is given."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
        ephemeral_low = int(ports.read().split()[0])
    chosen = []
    while len(chosen) < count:
        port = random.randrange(10000, ephemeral_low)
        if port in chosen:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        chosen.append(port)
    return chosen


def command(binary, config, port=0, http_listen="127.0.0.1:0", loops=None):
    """The command line of a runneld in the tests: on `config` (a file), listening on loopback
    (`port`; `http_listen`, "" for no HTTP), on `loops` event loops (else TEST_LOOPS)."""
    return [binary, "--listen", f"127.0.0.1:{port}", "--http-listen", http_listen, "--config", config,
            "--loops", str(loops or TEST_LOOPS)]


def run_until_exit(binary, toml, seconds):
    """runneld on `toml` as `Daemon` starts it, but with stderr apart, for one that must not
    start: (its status, or None when it was still running after `seconds` (then killed); the
    seconds it took; its stderr; its stdout)."""
    with tempfile.TemporaryDirectory(prefix="runneld-test-") as directory:
        config = f"{directory}/runneld.toml"
        with open(config, "w") as file:
            file.write(toml)
        started = time.monotonic()
        process = subprocess.Popen(command(binary, config), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        try:
            out, err = process.communicate(timeout=seconds)
            return process.returncode, time.monotonic() - started, err, out
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            return None, time.monotonic() - started, err, out


def _port(announcement, line):
    """The port of `announcement 127.0.0.1:PORT` in `line`, or None."""
    match = re.search(announcement + r" 127\.0\.0\.1:(\d+)", line)
    return int(match.group(1)) if match else None


def check_config(binary, toml):
    """`runneld --config FILE --check-config` on a file holding `toml`: the finished process,
    its output captured."""
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as file:
        file.write(toml)
    try:
        return subprocess.run([binary, "--config", file.name, "--check-config"], capture_output=True, text=True,
                              timeout=20)
    finally:
        os.unlink(file.name)


def self_signed_certificate(directory):
    """`server.pem` and `server.key` in `directory` (made when missing): a self-signed P-256
    certificate for 127.0.0.1, for the client checks' TLS listeners."""
    if not os.path.isdir(directory):
        os.makedirs(directory)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", os.path.join(directory, "server.key"), "-out", os.path.join(directory, "server.pem"),
                        "-days", "2", "-subj", "/CN=runnel client test", "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True)


def chromium(width=1280, height=800, performance_log=False):
    """Headless Chromium driven by selenium (Debian's chromium and chromium-driver, or the
    CHROMIUM and CHROMEDRIVER paths), keeping the browser console's log; with
    `performance_log`, its DevTools events too (`get_log("performance")`: Network.*, Page.*)."""
    from selenium import webdriver  # here, so the scripts without a browser need no selenium
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--disable-extensions", f"--window-size={width},{height}"]:
        options.add_argument(argument)
    logs = {"browser": "ALL", "performance": "ALL"} if performance_log else {"browser": "ALL"}
    options.set_capability("goog:loggingPrefs", logs)
    service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(service=service, options=options)


def severe_console_entries(driver):
    """The browser console's errors so far."""
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


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
    that is meant to fall behind); with `no_delay`, small writes are sent at once (pipelined
    requests)."""

    def __init__(self, port, receive_buffer=None, timeout=10, no_delay=False):
        if receive_buffer is None:
            self.socket = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        else:
            self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            self.socket.settimeout(timeout)
            self.socket.connect(("127.0.0.1", port))
        if no_delay:
            self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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

    def call(self, request):
        """Sends `request` and returns the next line (which, with pipelining, may answer another)."""
        self.send(request)
        return self.line()

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


def stats(d):
    """`stats` over a connection of its own (a server without tokens)."""
    client = LineClient(d.port)
    try:
        return client.request({"op": "stats"})
    finally:
        client.close()


class EventStream:
    """One GET /events response read with httpx, event by event (comment lines kept apart)."""

    def __init__(self, d, query, headers=None, timeout=10):
        import httpx  # here, so the crash harness needs no httpx

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


def expect_closing(closing, line=None, websockets=(), stream=None):
    """`closing` (a `closing` line as a dict) is the last thing the server sends each of them
    before it closes: a `LineClient`'s last line, a WebSocket's last text message (then close
    code 1008), an `EventStream`'s `event: closing` (then the response ends; the stream is closed
    here)."""
    from websockets.exceptions import ConnectionClosed  # here, so the crash harness needs no websockets

    if line is not None:
        assert line.line() == closing
        try:
            extra = line.line()
            raise AssertionError(f"the connection stayed open after its closing line: {extra}")
        except (EOFError, ConnectionResetError):
            pass
    for websocket in websockets:
        assert json.loads(websocket.recv(timeout=5)) == closing
        try:
            websocket.recv(timeout=5)
            raise AssertionError("the WebSocket stayed open after its closing message")
        except ConnectionClosed:
            pass
        assert websocket.close_code == 1008, websocket.close_code
    if stream is not None:
        reason = {key: value for key, value in closing.items() if key != "ev"}
        assert stream.event() == {"event": "closing", "data": json.dumps(reason, separators=(",", ":"))}
        assert stream.event() is None
        stream.close()


def assert_clean_stop(daemon):
    """Stops `daemon` (a suite's `test_clean_stop`): an AssertionError with the tail of its log
    when it did not exit with status 0."""
    status = daemon.stop()
    assert status == 0, f"runneld stopped with status {status}:\n" + "\n".join(daemon.log[-20:])
