"""The one harness of the Python test scripts (http-tests.py, websocket-tests.py,
permissions-tests.py, backpressure-tests.py, tls-tests.py, dashboard-tests.py, the client
checklists python-client-tests.py and js-client-tests.py, cluster-tests.py and
cluster-crash-harness.py's nodes, and crash-harness.py's daemon): a runneld process of their own on free loopback ports, started
as the Swift tests' `RunneldProcess` starts one; a line-protocol client over TCP; a reader of
GET /events streams; a self-signed certificate; headless Chromium; and the command line every test script shares (`main`), which runs
named checks in suites that share one daemon, lists them (`--list`), runs some (`--only`)
and reports each (`--results`, read by Tests/RunneldTests/Support/PythonScript.swift)."""

import argparse
import contextlib
import io
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
import traceback

# As long as the Swift harness (RunneldProcess.startupTimeout) waits for the listening line.
STARTUP_SECONDS = 15

# The event loops every daemon gets (`--loops`), as the Swift harness gives them: the test run's
# `RUNNEL_TEST_LOOPS`, else 1 (`make test` runs the suites with 1 and with 4).
TEST_LOOPS = os.environ.get("RUNNEL_TEST_LOOPS", "1")


class Daemon:
    """One runneld process with its own config file (`toml`, where DATA_DIR is its data
    directory), started as the Swift harness starts one: `--listen 127.0.0.1:0 --http-listen
    127.0.0.1:0 --config FILE --loops TEST_LOOPS`, stdout and stderr read as one stream, and the ports read from
    the lines `serving HTTP on 127.0.0.1:PORT` and then `listening on 127.0.0.1:PORT`. To
    restart one, the given ports (`port`, `http_port`) in a given directory (`directory`, an
    earlier daemon's, which then has to be stopped with `keep_directory=True`). `http=False`
    serves no HTTP (`--http-listen ""`). A config with `tls_listen` or `https_listen` on port 0
    gets the ports chosen as `tls_port` and `https_port` (None when off). `loops` overrides
    TEST_LOOPS."""

    def __init__(self, binary, toml, port=0, http_port=0, directory=None, http=True, loops=None):
        self.directory = directory or tempfile.mkdtemp(prefix="runneld-test-")
        config = os.path.join(self.directory, "runneld.toml")
        with open(config, "w") as file:
            file.write(toml.replace("DATA_DIR", os.path.join(self.directory, "data")))
        http_listen = f"127.0.0.1:{http_port}" if http else ""
        self.process = subprocess.Popen(
            [binary, "--listen", f"127.0.0.1:{port}", "--http-listen", http_listen, "--config", config,
             "--loops", str(loops or TEST_LOOPS)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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


class Suite:
    """Checks run in order against one thing they share: what `start(binary)` yields, a
    context manager (by default a daemon on `config`, stopped after the last check, which
    `daemon_started` makes). A check is named `SUITE.FUNCTION`; the suite's stop is
    `SUITE.clean_stop`, failed when the daemon did not exit with status 0 (none when
    `stops_a_daemon` is False: the checks are given something else, such as the binary)."""

    def __init__(self, name, checks, config=None, start=None, stops_a_daemon=True):
        self.name = name
        self.checks = list(checks)
        self.start = start or (lambda binary: daemon_started(binary, config))
        self.stops_a_daemon = stops_a_daemon

    def names(self):
        return [f"{self.name}.{check.__name__}" for check in self.checks] + (
            [self.stop_name()] if self.stops_a_daemon else [])

    def stop_name(self):
        return f"{self.name}.clean_stop"


@contextlib.contextmanager
def daemon_started(binary, config, **options):
    """A `Daemon` (with `options`) for the checks of a suite; stopped after them, and an
    AssertionError with the tail of its log when it did not exit with status 0."""
    daemon = Daemon(binary, config, **options)
    try:
        yield daemon
    finally:
        assert_clean_stop(daemon)


def assert_clean_stop(daemon):
    status = daemon.stop()
    assert status == 0, f"runneld stopped with status {status}:\n" + "\n".join(daemon.log[-20:])


class _Tee(io.TextIOBase):
    """What a check prints: to the terminal, and kept for its report."""

    def __init__(self, stream):
        self.stream = stream
        self.parts = []

    def write(self, text):
        self.stream.write(text)
        self.parts.append(text)
        return len(text)

    def flush(self):
        self.stream.flush()


def _log_of(argument):
    """The log of the daemon a check was given (itself, or a suite's `daemon`), if any."""
    daemon = argument if isinstance(argument, Daemon) else getattr(argument, "daemon", None)
    return daemon.log if isinstance(daemon, Daemon) else None


class _Report:
    """Prints one line per check (and the failure's details) and writes the `--results` file."""

    def __init__(self, path):
        self.file = open(path, "w") if path else None
        self.passed = self.failed = 0

    def record(self, name, seconds, failure=None, output=""):
        if failure is None:
            self.passed += 1
            print(f"ok   {name} ({seconds:.1f}s)", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}: {failure}", flush=True)
        if self.file:
            self.file.write(json.dumps({"name": name, "ok": failure is None, "seconds": round(seconds, 2),
                                        "output": output}) + "\n")
            self.file.flush()


def _run_check(name, check, argument, report):
    """Runs one check, reporting it with what it printed and, when it failed, its traceback and
    the daemon's last lines."""
    started = time.monotonic()
    tee = _Tee(sys.stdout)
    try:
        with contextlib.redirect_stdout(tee):
            check(argument)
        report.record(name, time.monotonic() - started)
    except Exception as error:  # noqa: BLE001 - report every failure and go on
        output = "".join(tee.parts) + traceback.format_exc()
        log = _log_of(argument)
        if log:
            output += "runneld's last lines:\n" + "\n".join(log[-20:]) + "\n"
        report.record(name, time.monotonic() - started, repr(error), output)
        print(output, end="", flush=True)


def _run_suite(suite, binary, selected, report):
    """Runs the checks of `suite` that are `selected` against what its start yields."""
    checks = [check for check in suite.checks if f"{suite.name}.{check.__name__}" in selected]
    context = suite.start(binary)
    try:
        argument = context.__enter__()
    except Exception:  # noqa: BLE001 - every check of the suite fails with the reason
        reason = traceback.format_exc()
        for name in [f"{suite.name}.{check.__name__}" for check in checks] + suite.names()[len(suite.checks):]:
            report.record(name, 0, "the suite did not start", reason)
        return
    try:
        for check in checks:
            _run_check(f"{suite.name}.{check.__name__}", check, argument, report)
    except BaseException:
        # Stopped from outside (SIGTERM, ^C): the daemon stops too, then the script.
        with contextlib.suppress(Exception):
            context.__exit__(None, None, None)
        raise
    started = time.monotonic()
    try:
        context.__exit__(None, None, None)
        failure = None
    except Exception as error:  # noqa: BLE001
        failure, output = repr(error), traceback.format_exc()
        if not suite.stops_a_daemon:
            raise
    if suite.stops_a_daemon:
        report.record(suite.stop_name(), time.monotonic() - started, failure, output if failure else "")


def main(description, suites, add_arguments=None):
    """The command line of every test script: `--runneld PATH`, `--list` (the checks' names,
    one a line), `--only NAME` (repeatable: only those checks, a name with or without its
    suite's), `--results FILE` (one JSON object a line per check: name, ok, seconds, output),
    `--timeout SECONDS` (then exit, stopping the daemons; so does SIGTERM).
    `suites` is a list of `Suite`s, or a function of the parsed arguments returning one (with
    options `add_arguments(parser)` adds). One line per check, a total, exit status 0 when
    every check passed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runneld", default=".build/debug/runneld")
    parser.add_argument("--list", action="store_true", help="print the checks' names and run none")
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this check (repeatable)")
    parser.add_argument("--results", metavar="FILE", help="write each check's result as a JSON line")
    parser.add_argument("--timeout", type=int, metavar="SECONDS", help="stop after this long, the daemons too")
    if add_arguments:
        add_arguments(parser)
    arguments = parser.parse_args()
    # Stopped from outside, or by --timeout: unwind, so the suites stop their daemons.
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    if arguments.timeout:
        signal.signal(signal.SIGALRM, lambda number, frame: sys.exit(f"stopped after {arguments.timeout} s"))
        signal.alarm(arguments.timeout)
    plan = suites(arguments) if callable(suites) else suites
    names = [name for suite in plan for name in suite.names()]
    if arguments.list:
        print("\n".join(names))
        return
    selected = set(names)
    if arguments.only:
        wanted = set(arguments.only)
        selected = {name for name in names if name in wanted or name.split(".", 1)[1] in wanted}
        unknown = wanted - selected - {name.split(".", 1)[1] for name in selected}
        if unknown:
            parser.error("no such check: " + ", ".join(sorted(unknown)) + " (--list lists them)")
    report = _Report(arguments.results)
    for suite in plan:
        if any(f"{suite.name}.{check.__name__}" in selected for check in suite.checks):
            _run_suite(suite, arguments.runneld, selected, report)
    print(f"{report.passed} passed, {report.failed} failed")
    sys.exit(1 if report.failed else 0)
