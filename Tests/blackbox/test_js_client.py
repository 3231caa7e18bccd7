"""The JavaScript client (clients/js/runnel.js) against real runneld processes: the client behaviour
checklist of docs/clients.md in Node, and the module as runneld serves it in headless Chromium. The
Node checks are js-client-checks.mjs (its `--list` names them and their suites, `test_node`'s
parameters), each run as a Node process of its own against its suite's daemon; where a check needs
runneld killed with SIGKILL and restarted on its ports and data, it asks on its stdout (`@harness
kill`, `@harness restart`) and this module answers on its stdin. The browser checks load
`/runnel.js` from runneld into a page of runneld's, connect, publish and subscribe.

    python3 -m pytest Tests/blackbox/test_js_client.py --runneld .build/debug/runneld

Needs Node 20 or later (with --experimental-websocket when it has no global WebSocket, which this
module adds), openssl (the test certificate), selenium (PyPI) and Debian's chromium and
chromium-driver.
"""

import json
import os
import subprocess
import threading
import urllib.request

import pytest

from client_checklist import EXPIRY_CONFIG, JWT_SECRET, MAIN_CONFIG, RESTART_CONFIG, SLOW_CONFIG, TOKEN, certificate
from runneld_process import Daemon, assert_clean_stop, chromium, severe_console_entries

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js-client-checks.mjs")
MODULE = os.path.join(ROOT, "clients", "js", "runnel.js")
NODE_CHECK_SECONDS = 150  # a Node check that runs longer is killed


def node_command():
    """`node`, with --experimental-websocket when it has no global WebSocket without it (Node 20);
    a Node without a WebSocket either way (Debian 12's own, 18) fails, saying so."""
    probe = "process.exit(typeof WebSocket === 'function' ? 0 : 1)"
    for command in (["node"], ["node", "--experimental-websocket"]):
        if subprocess.run(command + ["-e", probe], capture_output=True).returncode == 0:
            return command
    version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    raise RuntimeError(f"node {version} has no WebSocket: the JavaScript client needs Node 20 or later")


def described(daemon):
    """What a Node check is told of the daemon (RUNNEL_CHECK)."""
    return {"ws": daemon.ws_url, "http": daemon.url, "wss": f"wss://127.0.0.1:{daemon.https_port}/ws",
            "linePort": daemon.port,
            "token": TOKEN, "pid": daemon.process.pid, "config": os.path.join(daemon.directory, "runneld.toml"),
            "jwtSecret": JWT_SECRET}


class Restarts:
    """A daemon that a check has killed and started again on the same ports and directory."""

    def __init__(self, binary):
        self.binary = binary
        self.daemon = Daemon(binary, RESTART_CONFIG)

    def act(self, action):
        """A Node check's request: `kill` (SIGKILL) or `restart`; the answer, what changed."""
        d = self.daemon
        if action == "kill":
            d.kill()
            return {}
        assert action == "restart", action
        self.daemon = Daemon(self.binary, RESTART_CONFIG, port=d.port, http_port=d.http_port, directory=d.directory)
        return {"pid": self.daemon.process.pid}


def run_node_check(command, name, trusts_ca, target):
    """Runs one Node check against `target` (a Daemon, or Restarts for the checks that ask for
    kills and restarts), printing what it prints; fails when it exits with another status than 0."""
    restarts = target if isinstance(target, Restarts) else None
    daemon = restarts.daemon if restarts else target
    env = dict(os.environ, RUNNEL_CHECK=json.dumps(described(daemon)))
    env.pop("NODE_EXTRA_CA_CERTS", None)
    if trusts_ca:
        env["NODE_EXTRA_CA_CERTS"] = certificate("server.pem")
    process = subprocess.Popen(command + [CHECKS, name], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    watchdog = threading.Timer(NODE_CHECK_SECONDS, process.kill)
    watchdog.start()
    try:
        for line in process.stdout:
            if line.startswith("@harness "):
                assert restarts, f"{name} asked for {line.strip()}, with no daemon to restart"
                process.stdin.write(json.dumps(restarts.act(line.split(" ", 1)[1].strip())) + "\n")
                process.stdin.flush()
            else:
                print(line, end="", flush=True)
        status = process.wait()
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()
    assert status == 0, f"node {name} exited with status {status}"


def node_checks():
    """The Node checks of js-client-checks.mjs (its `--list`), by suite: (name, trusts_ca) each."""
    listing = subprocess.run(NODE + [CHECKS, "--list"], capture_output=True, text=True, check=True, cwd=ROOT)
    suites = {}
    for line in listing.stdout.splitlines():
        suite, name, *flags = line.split()
        suites.setdefault(suite, []).append(pytest.param(name, "trusts-ca" in flags, id=name))
    return suites


# Read when the checks are collected.
NODE = node_command()
NODE_CHECKS = node_checks()
assert set(NODE_CHECKS) == {"main", "restart", "slow",
                            "expiry"}, f"suites of js-client-checks.mjs: {sorted(NODE_CHECKS)}"


# --- browser: the module runneld serves, in headless Chromium ---------------------------------------

BROWSER_CONFIG = f'''
auth_tokens = ["{TOKEN}"]
'''


# The page imports the module from runneld and drives it: a wrong token refused, a subscription as
# an iterator and one with callbacks, a publish with a reply.
IN_THE_PAGE = """
const [token, done] = arguments;
(async () => {
  const runnel = await import("/runnel.js");
  const wrong = await runnel.connect(location.origin, { token: "wrong" })
    .then(() => null, (error) => [error instanceof runnel.RunnelError, error.code]);
  const client = await runnel.connect(location.origin, { token });
  const doubled = await client.subscribe("browser.a", { map: ".n * 2" });
  const receivers = await client.publish("browser.a", { n: 21 }, { reply: true });
  const first = (await doubled.next()).value;
  const seen = [];
  let ended;
  const end = new Promise((resolve) => { ended = resolve; });
  await client.subscribe("browser.b", { ops: [{ op: "take", count: 2 }] }, (event) => seen.push(event.value), ended);
  await client.publish("browser.b", "x");
  await client.publish("browser.b", "y");
  const ending = await end;
  const stats = await client.request("stats");
  await client.close();
  return { wrong, receivers, first: [first.type, first.value, first.subject, /^[^:]+:1$/.test(first.pos)], seen,
    ending, url: client.url, subscriptions: stats.subscriptions, connectedAfterClose: client.connected };
})().then(done, (error) => done({ error: String((error && error.stack) || error) }));
"""


def node_test(suite):
    """The Node checks of `suite` as one check parametrized by their names: each runs against `d`,
    the suite's daemon (or its `Restarts`)."""

    @pytest.mark.parametrize("name, trusts_ca", NODE_CHECKS[suite])
    def test_node(self, d, name, trusts_ca):
        run_node_check(NODE, name, trusts_ca, d)

    return test_node


@pytest.mark.daemon(MAIN_CONFIG)
@pytest.mark.usefixtures("checklist_certificate")
class TestMain:
    """One daemon with a token, a token of limited rights, TLS and HTTPS."""

    test_node = node_test("main")

    def test_clean_stop(self, d):
        assert_clean_stop(d)


class TestRestart:
    """runneld killed with SIGKILL and started again on its ports and data, as the Node checks ask."""

    @pytest.fixture(scope="class")
    def d(self, binary):
        """The `Restarts` of the daemon the checks kill and start again; stopped after them (its
        directory removed)."""
        restarts = Restarts(binary)
        try:
            yield restarts
        finally:
            restarts.daemon.stop()

    test_node = node_test("restart")


@pytest.mark.daemon(SLOW_CONFIG)
class TestSlow:
    """A consumer the server cuts (`closing` slow_consumer), drops or conflates events for."""

    test_node = node_test("slow")

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(EXPIRY_CONFIG)
class TestExpiry:
    """JWTs, which expire."""

    test_node = node_test("expiry")

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(BROWSER_CONFIG)
class TestBrowser:
    """The module as runneld serves it, in headless Chromium."""

    def test_runneld_serves_the_module_without_a_token(self, d):
        with urllib.request.urlopen(d.url + "/runnel.js") as response:
            assert response.status == 200, response.status
            assert response.headers["Content-Type"] == "text/javascript; charset=utf-8", response.headers
            served = response.read()
        with open(MODULE, "rb") as file:
            assert served == file.read(), "GET /runnel.js is not clients/js/runnel.js"
        head = urllib.request.Request(d.url + "/runnel.js", method="HEAD")
        with urllib.request.urlopen(head) as response:
            assert response.status == 200 and int(response.headers["Content-Length"]) == len(served)

    def test_the_module_publishes_and_subscribes_in_chromium(self, d):
        driver = chromium()
        try:
            driver.set_script_timeout(30)
            driver.get(d.url + "/healthz")  # a page of runneld's origin, which its WebSocket accepts
            result = driver.execute_async_script(IN_THE_PAGE, TOKEN)
            assert "error" not in result, result.get("error")
            assert result == {"wrong": [True, "unauthorized"], "receivers": 1, "first": ["value", 42, "browser.a",
                                                                                         True],
                              "seen": ["x", "y"], "ending": None, "url": d.ws_url, "subscriptions": 1,
                              "connectedAfterClose": False}, result
            # The browser asks for /favicon.ico of the /healthz page itself: a 401, no error of the module.
            errors = [entry for entry in severe_console_entries(driver) if "/favicon.ico " not in entry["message"]]
            assert not errors, errors
        finally:
            driver.quit()

    def test_clean_stop(self, d):
        assert_clean_stop(d)
