"""The dashboard page (GET /) in a real browser: headless Chromium driven by selenium.

    python3 -m pytest Tests/blackbox/test_dashboard.py [--runneld PATH] [--screenshots DIR] [--perf]

Starts its own runneld on free loopback ports and checks the dashboard's acceptance: the page loads
without a token and without console errors; a panel created through the form shows a value
published over TCP within a second; filter, map and throttle typed into the form are applied by
the server; a bad expression shows the server's `bad_expr` message; removing a panel
unsubscribes; the URL restores the panels in a fresh browser; after the daemon restarts (same
ports, same data directory) the page reconnects, resumes a durable replay subject with every
value once, and marks a gap where values were lost (`resumed: false`); with tokens configured
the page asks for one; the page's WebSocket negotiates permessage-deflate (the handshake as
Chromium's DevTools report it) and a large value reaches it compressed on the wire (the
kernel's byte count), and with `compression = false` nothing is negotiated and the page still
works; every panel's `sub` asks for conflation; a chart's time range subscribes with `since`
(now minus the range) and `ts`, is kept in the URL, draws a replay subject's history at the
values' server times and then live values, notes a range whose start was let go (`resumed:
false`), shows the server's `bad_request` on a plain subject, and after a restart goes on `from`
its last value; a map subject's panel is a table of its keys, sorted, with a row count, that a
write changes in place (the same row element), that a removal and an expiry (`ttl_s`) take a
row out of, and that is the map's own after a restart (the client's map subscription
subscribing again from its table's position); a node of a cluster (a nats-server on loopback) names itself and its link in the
header, and says when the link is down. With --screenshots DIR it saves the dashboard with a chart, a table and a
log at desktop (1280x800) and phone (390x844) widths; with --perf it measures the page's CPU at
1,000 values/s into one chart panel (Chromium's Performance.getMetrics) (conftest.py's options: without
them, those two checks are not collected). Needs selenium (PyPI) and Debian's chromium and chromium-driver.
"""

import contextlib
import json
import math
import os
import re
import subprocess
import threading
import time
from urllib.parse import quote, unquote

import httpx
import pytest

from nats_process import NatsServer
from runneld_process import Daemon, LineClient, assert_clean_stop, chromium, severe_console_entries
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

TOKEN = "s3cret"

CONFIG = """
data_dir = "DATA_DIR"

[[subjects]]
name = "dash.rep"
kind = "replay"
capacity = 100
durable = true

[[subjects]]
name = "dash.small"
kind = "replay"
capacity = 3
durable = true
"""

AUTH_CONFIG = f"""
auth_tokens = ["{TOKEN}"]
"""


def wait_until(predicate, what, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def conn_state(driver):
    return driver.find_element(By.ID, "conn-state").get_attribute("data-state")


def open_page(driver, url):
    driver.get(url)
    wait_until(lambda: conn_state(driver) in ("connected", "token"), "the page to connect")


def type_into(driver, element_id, text):
    field = driver.find_element(By.ID, element_id)
    field.clear()
    if text:
        field.send_keys(text)


def add_panel(driver, subject, view, filter="", map="", throttle="", range="live"):
    """Fills the new-panel form and submits it with the keyboard; returns the new panel. `range`
    (a chart's time range: live, 15m, 1h, 24h) is chosen after the view, which turns it on."""
    before = len(driver.find_elements(By.CSS_SELECTOR, ".panel"))
    type_into(driver, "new-filter", filter)
    type_into(driver, "new-map", map)
    type_into(driver, "new-throttle", throttle)
    Select(driver.find_element(By.ID, "new-view")).select_by_value(view)
    if view == "chart":
        Select(driver.find_element(By.ID, "new-range")).select_by_value(range)
    type_into(driver, "new-subject", subject)
    driver.find_element(By.ID, "new-subject").submit()
    wait_until(lambda: len(driver.find_elements(By.CSS_SELECTOR, ".panel")) == before + 1, "the new panel")
    return driver.find_elements(By.CSS_SELECTOR, ".panel")[-1]


def panel_for(driver, subject):
    return driver.find_element(By.CSS_SELECTOR, f'.panel[data-subject="{subject}"]')


def panel_state(panel):
    return panel.find_element(By.CSS_SELECTOR, ".state").text


def wait_live(panel, timeout=5.0):
    wait_until(lambda: panel_state(panel) == "live", "the panel to be live", timeout)


def logged(driver, panel):
    """The values in a log panel, oldest first (the page shows the newest first)."""
    texts = driver.execute_script(
        "return [...arguments[0].querySelectorAll('.log-entry .value')].map(e => e.textContent).reverse()", panel)
    return [json.loads(text) for text in texts]


def chart_points(panel):
    """What a chart panel holds, as its canvas says (`data-points`, `data-oldest`): how many
    points, and the oldest one's time (Unix ms; None without points)."""
    canvas = panel.find_element(By.CSS_SELECTOR, "canvas.chart")
    points, oldest = canvas.get_attribute("data-points"), canvas.get_attribute("data-oldest")
    return int(points or 0), (int(oldest) if oldest else None)


def chart_url(daemon, subject, range, **stages):
    """The page with one chart panel of `subject` over `range`, as the URL keeps it."""
    panel = {"subject": subject, "view": "chart", **stages, "range": range}
    return daemon.url + "/#" + quote(json.dumps({"panels": [panel]}))


def subs_sent(driver, subject):
    """The `sub` requests for `subject` the page sent since the last look at the performance log."""
    return [request for request in websocket_requests_sent(driver)
            if request["op"] == "sub" and request.get("subject") == subject]


def shown(panel, selector):
    return any(node.is_displayed() for node in panel.find_elements(By.CSS_SELECTOR, selector))


def gap_lines(panel):
    return panel.find_elements(By.CSS_SELECTOR, ".log li.gap")


def publish(tcp, subject, values):
    for value in values:
        reply = tcp.request({"op": "pub", "subject": subject, "value": value})
        assert reply["ok"], reply


def publish_key(tcp, subject, key, value=None, delete=False):
    """Writes `key` of the map `subject` (with `delete`, removes it)."""
    change = {"delete": True} if delete else {"value": value}
    reply = tcp.request({"op": "pub", "subject": subject, "key": key, **change})
    assert reply["ok"], reply


def map_table(driver, panel):
    """A map panel's table as shown: its header's texts, and each row's cell texts in order."""
    return driver.execute_script(
        "const table = arguments[0].querySelector('.map-view table');"
        "return [[...table.tHead.rows[0].cells].map(c => c.textContent),"
        " [...table.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent))]", panel)


def map_rows(driver, panel):
    return map_table(driver, panel)[1]


def mark_map_rows(driver, panel):
    """Marks each row element of a map panel (a property of the element, not an attribute): a
    row still marked later is the same element, changed in place rather than drawn again."""
    driver.execute_script("for (const row of arguments[0].querySelectorAll('.map-view tbody tr')) row.marked = true",
                          panel)


def marked_keys(driver, panel):
    return driver.execute_script(
        "return [...arguments[0].querySelectorAll('.map-view tbody tr')].filter(r => r.marked).map(r => r.dataset.key)",
        panel)


def count_text(panel):
    return panel.find_element(By.CSS_SELECTOR, ".count").text


class Run:
    """The daemon, the browser and a TCP client the checks share, in order."""

    def __init__(self, binary, screenshots):
        self.binary = binary
        self.screenshots = screenshots
        self.daemon = Daemon(binary, CONFIG)
        self.closed = False
        try:
            self.tcp = LineClient(self.daemon.port)
            self.driver = chromium()
        except Exception:
            self.daemon.stop()  # no suite to stop it: it did not start
            raise

    def close(self):
        self.closed = True
        try:
            self.driver.quit()
        finally:
            self.tcp.close()


def subscribers(tcp, subject):
    reply = tcp.request({"op": "list", "prefix": subject})
    return next(entry["subscribers"] for entry in reply["subjects"] if entry["subject"] == subject)


def panel_specs(driver):
    return driver.execute_script(
        "return [...document.querySelectorAll('.panel')].map(p => [p.dataset.subject, p.dataset.view,"
        " p.querySelector('.exprs').textContent])")


def reply_message_shown(panel):
    return wait_until(lambda: panel.find_element(By.CSS_SELECTOR, ".panel-error").text, "the error again")


JWT_SECRET = "dashboard-check-secret-of-at-least-32-bytes"
JWT_CONFIG = f"""
jwt_secrets = ["{JWT_SECRET}"]
jwt_leeway = 0
"""


def jwt_for(seconds, rights):
    """An HS256 JWT (PyJWT) with `rights` (the `runnel` claim) that expires `seconds` from now."""
    import jwt

    now = int(time.time())
    return jwt.encode({"sub": "dashboard-check", "iat": now, "exp": now + seconds, "runnel": rights}, JWT_SECRET,
                      algorithm="HS256")


@contextlib.contextmanager
def token_server(origin):
    """The web app's token endpoint, on a port of its own: each GET mints a 3-second JWT that
    may read `app.>`, for the page at `origin` (CORS with credentials). Yields (its URL, the
    tokens it handed out)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    minted = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802: http.server's name
            minted.append(jwt_for(3, {"subscribe": ["app.>"]}))
            body = minted[-1].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Access-Control-Allow-Origin", origin)
            self.send_header("Access-Control-Allow-Credentials", "true")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *arguments):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/token", minted
    finally:
        server.shutdown()
        server.server_close()


def websocket_handshakes(driver):
    """The WebSocket handshakes Chromium's DevTools reported since the last call (the driver's
    performance log): for each, the URL and the request's and the response's header fields."""
    urls, requests, handshakes = {}, {}, []
    for entry in driver.get_log("performance"):
        event = json.loads(entry["message"])["message"]
        params = event.get("params", {})
        if event["method"] == "Network.webSocketCreated":
            urls[params["requestId"]] = params["url"]
        elif event["method"] == "Network.webSocketWillSendHandshakeRequest":
            requests[params["requestId"]] = params["request"]["headers"]
        elif event["method"] == "Network.webSocketHandshakeResponseReceived":
            handshakes.append({"url": urls.get(params["requestId"]), "request": requests.get(params["requestId"], {}),
                               "response": params["response"]["headers"], "status": params["response"]["status"]})
    return handshakes


def websocket_requests_sent(driver):
    """The requests the page sent over its WebSockets since the last call (the driver's
    performance log: Chromium's DevTools report each text message sent)."""
    requests = []
    for entry in driver.get_log("performance"):
        event = json.loads(entry["message"])["message"]
        if event["method"] == "Network.webSocketFrameSent":
            requests.append(json.loads(event["params"]["response"]["payloadData"]))
    return requests


def server_bytes_sent(daemon):
    """The bytes the kernel has sent from the daemon's HTTP port, over every connection open now
    (`ss`'s bytes_sent: what went on the wire, compressed or not)."""
    listing = subprocess.run(["ss", "-tinH", "state", "established", f"( sport = :{daemon.http_port} )"],
                             capture_output=True, text=True, check=True).stdout
    return sum(int(count) for count in re.findall(r"bytes_sent:(\d+)", listing))


def repetitive_value(size):
    """A dashboard-like JSON value of about `size` bytes: rows of metrics, as a table panel gets."""
    return {"rows": [{"host": f"web-{i % 9}", "cpu": i % 100, "mem": 2048 + i % 50, "ok": True}
                     for i in range(size // 50)]}


def page_shows_a_value_sent_as(daemon, offer_answered):
    """A fresh Chromium opens the page with a log panel; its WebSocket's handshake, as Chromium
    saw it, offered permessage-deflate and got `offer_answered` (None: no extension); a value of
    about 40 KB published over TCP reaches the panel, and the bytes the server sent meanwhile
    (the WebSocket's frames) are returned."""
    driver = chromium(performance_log=True)
    tcp = LineClient(daemon.port)
    try:
        panels = "#" + quote(json.dumps({"panels": [{"subject": "dash.z", "view": "log"}]}))
        open_page(driver, daemon.url + "/" + panels)
        panel = panel_for(driver, "dash.z")
        wait_live(panel)
        handshakes = [h for h in websocket_handshakes(driver) if h["url"] and h["url"].startswith("ws://")]
        assert len(handshakes) == 1, handshakes
        handshake = handshakes[0]
        assert handshake["status"] == 101, handshake
        assert "permessage-deflate" in handshake["request"].get("Sec-WebSocket-Extensions", ""), handshake
        response = {name.lower(): value for name, value in handshake["response"].items()}
        assert response.get("sec-websocket-extensions") == offer_answered, handshake
        value = repetitive_value(40000)
        before = server_bytes_sent(daemon)
        publish(tcp, "dash.z", [value])
        wait_until(lambda: logged(driver, panel) == [value], "the value in the panel", timeout=5)
        sent = server_bytes_sent(daemon) - before
        errors = severe_console_entries(driver)
        assert not errors, errors
        return len(json.dumps(value, separators=(",", ":"))), sent
    finally:
        tcp.close()
        driver.quit()


def set_viewport(driver, width, height, mobile):
    """The page's viewport exactly (the window's size includes what headless Chromium keeps for
    its own frame)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})


def sensor_feed(port, stop, rate=20):
    """Publishes readings of three rooms and some orders until `stop` is set."""
    tcp = LineClient(port)
    step = 0
    while not stop.is_set():
        for index, room in enumerate(["kitchen", "hall", "attic"]):
            value = round(20 + 3 * math.sin(step / 15 + index) + index, 2)
            tcp.send({"op": "pub", "subject": f"sensors.{room}.temp", "value": value})
        if step % 7 == 0:
            tcp.send({"op": "pub", "subject": "orders.new",
                      "value": {"id": 1000 + step, "total": round(5 + (step * 37 % 90) / 3, 2), "items": step % 4 + 1}})
        step += 1
        time.sleep(1 / rate)
    tcp.close()


class TestMain:
    """The checks share the daemon, the browser and the TCP client of a `Run`, in order."""

    @pytest.fixture(scope="class")
    def run(self, binary, pytestconfig):
        run = Run(binary, pytestconfig.getoption("screenshots"))
        try:
            yield run
        finally:
            if not run.closed:
                run.close()
            if run.daemon.process.poll() is None:
                run.daemon.stop()

    def test_page_needs_no_token_and_loads_without_console_errors(self, run):
        open_page(run.driver, run.daemon.url + "/")
        assert conn_state(run.driver) == "connected"
        wait_until(lambda: "subjects" in run.driver.find_element(By.ID, "subjects-status").text, "the subjects list")
        # One script reads every row: the list is redrawn as it refreshes, so rows looked up one call
        # and read the next can be gone (selenium's stale element).
        listed = run.driver.execute_script(
            "return [...document.querySelectorAll('#subjects tbody tr')].map(row => row.innerText)")
        assert any("dash.rep" in text for text in listed), listed
        errors = severe_console_entries(run.driver)
        assert not errors, errors

    def test_panel_shows_tcp_values_within_a_second(self, run):
        panel = add_panel(run.driver, "dash.live", "log")
        wait_live(panel)
        started = time.monotonic()
        publish(run.tcp, "dash.live", [{"n": 1}])
        wait_until(lambda: logged(run.driver, panel) == [{"n": 1}], "the value in the panel", timeout=1.0)
        elapsed = time.monotonic() - started
        assert elapsed < 1.0, elapsed

    def test_filter_map_throttle_are_applied_by_the_server(self, run):
        panel = add_panel(run.driver, "dash.f", "log", filter=".v % 2 == 0", map=".v * 10", throttle="0.3")
        wait_live(panel)
        # A burst: the filter keeps 2, 4, 6, 8; throttle sends only the newest, 8, after 0.3 s.
        publish(run.tcp, "dash.f", [{"v": v} for v in range(1, 10)])
        wait_until(lambda: logged(run.driver, panel) == [80], "80", timeout=3)
        publish(run.tcp, "dash.f", [{"v": 10}, {"v": 11}])
        wait_until(lambda: len(logged(run.driver, panel)) >= 2, "a second value", timeout=3)
        time.sleep(0.5)
        assert logged(run.driver, panel) == [80, 100], logged(run.driver, panel)
        # The panel's "Copy command" gives the runnel sub command line with the same chain.
        panel.find_element(By.CSS_SELECTOR, "button.copy").click()
        command = panel.find_element(By.CSS_SELECTOR, "input.command").get_attribute("value")
        assert command == "runnel sub dash.f --filter '.v % 2 == 0' --map '.v * 10' --throttle 0.3 --conflate", command

    def test_bad_expression_shows_the_servers_message(self, run):
        panel = add_panel(run.driver, "dash.bad", "chart", filter=".v >")
        reply = run.tcp.request({"op": "sub", "subject": "dash.bad", "ops": [{"op": "filter", "expr": ".v >"}]})
        assert reply["code"] == "bad_expr", reply
        error = wait_until(lambda: panel.find_element(By.CSS_SELECTOR, ".panel-error").text, "the error")
        assert reply["message"] in error and error.startswith("bad_expr"), (error, reply)
        # The server's "(at byte 4)", pointed at under the expression.
        caret = panel.find_element(By.CSS_SELECTOR, ".panel-error pre.caret").get_attribute("textContent")
        assert caret == ".v >\n    ^", (caret, reply)
        assert panel_state(panel) == "refused"

    def test_removing_a_panel_unsubscribes(self, run):
        assert subscribers(run.tcp, "dash.live") == 1
        panel_for(run.driver, "dash.live").find_element(By.CSS_SELECTOR, "button.remove").click()
        wait_until(lambda: subscribers(run.tcp, "dash.live") == 0, "no subscriber of dash.live")
        assert not run.driver.find_elements(By.CSS_SELECTOR, '.panel[data-subject="dash.live"]')

    def test_the_url_restores_the_panels_in_a_fresh_browser(self, run):
        url = run.driver.current_url
        assert "#" in url, url
        expected = panel_specs(run.driver)
        assert [spec[0] for spec in expected] == ["dash.f", "dash.bad"], expected
        fresh = chromium()
        try:
            open_page(fresh, url)
            wait_until(lambda: panel_specs(fresh) == expected, "the same panels")
            panel = panel_for(fresh, "dash.f")
            wait_live(panel)
            publish(run.tcp, "dash.f", [{"v": 20}])
            wait_until(lambda: logged(fresh, panel) == [200], "200 in the restored panel", timeout=3)
            assert reply_message_shown(panel_for(fresh, "dash.bad"))
        finally:
            fresh.quit()

    def test_reconnects_after_a_restart_resuming_without_duplicates_and_marking_gaps(self, run):
        driver = run.driver
        replay = add_panel(driver, "dash.rep", "log")
        small = add_panel(driver, "dash.small", "log")
        pattern = add_panel(driver, "dash.pat.*", "log")
        wait_live(replay)
        wait_live(small)
        wait_live(pattern)
        publish(run.tcp, "dash.pat.a", ["before"])
        wait_until(lambda: logged(driver, pattern) == ["before"], "a value in the pattern panel")
        publish(run.tcp, "dash.rep", list(range(1, 6)))
        publish(run.tcp, "dash.small", list(range(1, 6)))
        wait_until(lambda: logged(driver, replay) == [1, 2, 3, 4, 5], "1..5 in dash.rep")
        # dash.small keeps 3: the page saw 3, 4, 5 on subscribing... or 1..5 if it subscribed first.
        wait_until(lambda: logged(driver, small)[-1:] == [5], "5 in dash.small")
        small_before = logged(driver, small)

        port, http_port, directory = run.daemon.port, run.daemon.http_port, run.daemon.directory
        run.tcp.close()
        assert run.daemon.stop(keep_directory=True) == 0
        wait_until(lambda: conn_state(driver) != "connected", "the page to notice")
        # While the page cannot connect, another runneld on the same data publishes more: 5 more
        # values for dash.rep (kept), 10 more for dash.small (whose capacity is 3: values lost).
        meanwhile = Daemon(run.binary, CONFIG, directory=directory)
        other = LineClient(meanwhile.port)
        publish(other, "dash.rep", list(range(6, 11)))
        publish(other, "dash.small", list(range(6, 16)))
        publish(other, "dash.pat.a", ["missed"])
        other.close()
        assert meanwhile.stop(keep_directory=True) == 0
        run.daemon = Daemon(run.binary, CONFIG, port=port, http_port=http_port, directory=directory)
        run.tcp = LineClient(run.daemon.port)
        wait_until(lambda: conn_state(driver) == "connected", "the page to reconnect", timeout=10)
        wait_live(replay)
        publish(run.tcp, "dash.rep", [11, 12])
        wait_until(lambda: logged(driver, replay)[-1:] == [12], "12 in dash.rep")
        assert logged(driver, replay) == list(range(1, 13)), logged(driver, replay)
        assert not gap_lines(replay), "a gap where none was"
        wait_until(lambda: gap_lines(small), "a gap line in dash.small")
        assert small.find_element(By.CSS_SELECTOR, ".gap-note").is_displayed()
        wait_until(lambda: logged(driver, small) == small_before + [13, 14, 15], "13..15 after the gap")
        # A pattern cannot resume: its panel says so too.
        wait_live(pattern)
        publish(run.tcp, "dash.pat.a", ["after"])
        wait_until(lambda: logged(driver, pattern) == ["before", "after"], "the value after the restart")
        assert len(gap_lines(pattern)) == 1
        # The gap line sits between the values before and after it (the log shows newest first).
        items = driver.execute_script(
            "return [...arguments[0].querySelectorAll('.log li')].map(e => e.className).reverse()", small)
        assert items == ["log-entry"] * len(small_before) + ["gap"] + ["log-entry"] * 3, items

    def test_asks_for_a_token_and_keeps_it_for_the_session(self, run):
        daemon = Daemon(run.binary, AUTH_CONFIG)
        driver = chromium()
        try:
            panels = "#" + quote(json.dumps({"panels": [{"subject": "auth.a", "view": "log"}]}))
            open_page(driver, daemon.url + "/" + panels)
            wait_until(lambda: conn_state(driver) == "token", "the token prompt")
            assert driver.find_element(By.ID, "token-input").is_displayed()
            type_into(driver, "token-input", "wrong")
            driver.find_element(By.ID, "token-input").submit()
            wait_until(lambda: driver.find_element(By.ID, "token-status").text, "the refusal")
            type_into(driver, "token-input", TOKEN)
            driver.find_element(By.ID, "token-input").submit()
            wait_until(lambda: conn_state(driver) == "connected", "connected after the token")
            panel = panel_for(driver, "auth.a")
            wait_live(panel)
            tcp = LineClient(daemon.port)
            assert tcp.request({"op": "auth", "token": TOKEN})["ok"]
            publish(tcp, "auth.a", ["hello"])
            tcp.close()
            wait_until(lambda: logged(driver, panel) == ["hello"], "the value after auth")
            stored = driver.execute_script("return [sessionStorage.getItem('runnel.token'), localStorage.length]")
            assert stored == [TOKEN, 0], stored
        finally:
            driver.quit()
            daemon.stop()

    def test_gets_short_lived_tokens_from_the_app_and_refreshes_them(self, run):
        # A page inside a web app (`?token_url=`): its tokens are 3-second JWTs the app's endpoint
        # mints; the client fetches a new one before each expires, so the panel stays live across
        # several expiries, with no gap and no token asked for.
        daemon = Daemon(run.binary, JWT_CONFIG)
        driver = chromium()
        try:
            with token_server(daemon.url) as (token_url, minted):
                panels = "#" + quote(json.dumps({"panels": [{"subject": "app.a", "view": "log"}]}))
                open_page(driver, daemon.url + "/?token_url=" + quote(token_url, safe="") + panels)
                wait_until(lambda: conn_state(driver) == "connected", "connected with the app's token")
                panel = panel_for(driver, "app.a")
                wait_live(panel)
                tcp = LineClient(daemon.port)
                assert tcp.request({"op": "auth", "token": jwt_for(60, {"publish": ["app.>"]})})["ok"]
                for n in range(8):
                    publish(tcp, "app.a", [n])
                    time.sleep(1)
                tcp.close()
                wait_until(lambda: logged(driver, panel) == list(range(8)), "every value across the expiries")
                assert len(minted) >= 3, len(minted)
                assert conn_state(driver) == "connected" and not gap_lines(panel)
                # One WebSocket all along: refreshed, not reconnected after each expiry.
                manage = {"Authorization": "Bearer " + jwt_for(60, {"manage": True})}
                metrics = httpx.get(daemon.url + "/metrics", headers=manage).text
                assert 'runnel_http_responses_total{status="101"} 1\n' in metrics, metrics
                assert not driver.find_element(By.ID, "token-input").is_displayed()
                errors = severe_console_entries(driver)
                assert not errors, errors
        finally:
            driver.quit()
            daemon.stop()

    def test_page_negotiates_permessage_deflate_and_gets_compressed_frames(self, run):
        """The page's WebSocket (runnel.js in Chromium) offers permessage-deflate and gets it; a
        40 KB value reaches the page in a small fraction of its size on the wire."""
        size, sent = page_shows_a_value_sent_as(run.daemon, "permessage-deflate")
        assert sent < size // 4, (size, sent)
        print(f"     a {size}-byte value reached the page in {sent} bytes on the wire", flush=True)

    def test_page_works_uncompressed_with_compression_off(self, run):
        """`compression = false`: the page's offer is declined, the page works, the same value goes
        on the wire whole."""
        daemon = Daemon(run.binary, "compression = false\n")
        try:
            size, sent = page_shows_a_value_sent_as(daemon, None)
            assert sent > size, (size, sent)
            print(f"     a {size}-byte value reached the page in {sent} bytes on the wire", flush=True)
        finally:
            assert_clean_stop(daemon)

    def test_every_panel_subscribes_conflating(self, run):
        """A page that lags is sent each panel's latest value, not every value: every `sub` it
        sends, a single subject's and a pattern's, has `"conflate": true`."""
        driver = chromium(performance_log=True)
        try:
            panels = [{"subject": "conflated.a", "view": "log", "map": ".n"},
                      {"subject": "conflated.*", "view": "table"}]
            open_page(driver, run.daemon.url + "/#" + quote(json.dumps({"panels": panels})))
            for subject in ("conflated.a", "conflated.*"):
                wait_live(panel_for(driver, subject))
            subs = [request for request in websocket_requests_sent(driver) if request["op"] == "sub"]
            assert sorted((sub["subject"], sub.get("conflate")) for sub in subs) == [("conflated.*", True),
                                                                                    ("conflated.a", True)], subs
        finally:
            driver.quit()

    def test_a_chart_range_subscribes_since_with_times_and_stays_in_the_url(self, run):
        """A chart panel made with the range "last 15 min" sends its `sub` with `since` (now - 15
        min, Unix ms), `ts: true` and no `from`, says its range, and keeps it in the URL: a fresh
        browser's panel has it and subscribes the same way."""
        assert run.tcp.request({"op": "create", "subject": "dash.range", "kind": "replay"})["ok"]
        driver = chromium(performance_log=True)
        try:
            open_page(driver, run.daemon.url + "/")
            asked = time.time() * 1000
            panel = add_panel(driver, "dash.range", "chart", range="15m")
            wait_live(panel)
            subs = subs_sent(driver, "dash.range")
            assert len(subs) == 1 and subs[0].get("ts") is True and "from" not in subs[0], subs
            assert abs(subs[0]["since"] - (asked - 15 * 60000)) < 3000, (subs, asked)
            assert panel.get_attribute("data-range") == "15m"
            assert panel.find_element(By.CSS_SELECTOR, "h3").text == "dash.range · chart · last 15 min"
            panel.find_element(By.CSS_SELECTOR, "button.copy").click()
            command = panel.find_element(By.CSS_SELECTOR, "input.command").get_attribute("value")
            assert command == "runnel sub dash.range --since 15m --ts --conflate", command
            url = driver.current_url
            state = json.loads(unquote(url.split("#", 1)[1]))
            assert state["panels"] == [{"subject": "dash.range", "filter": "", "map": "", "throttle": "",
                                        "view": "chart", "range": "15m"}], state
            # A range is a chart's: the form turns it off for the other views.
            Select(driver.find_element(By.ID, "new-view")).select_by_value("log")
            assert not driver.find_element(By.ID, "new-range").is_enabled()
            errors = severe_console_entries(driver)
            assert not errors, errors
        finally:
            driver.quit()
        fresh = chromium(performance_log=True)
        try:
            opened = time.time() * 1000
            open_page(fresh, url)
            panel = panel_for(fresh, "dash.range")
            wait_live(panel)
            assert panel.get_attribute("data-range") == "15m"
            subs = subs_sent(fresh, "dash.range")
            assert len(subs) == 1 and subs[0].get("ts") is True and "from" not in subs[0], subs
            assert abs(subs[0]["since"] - (opened - 15 * 60000)) < 3000, (subs, opened)
        finally:
            fresh.quit()

    def test_a_chart_range_shows_the_history_at_its_times_then_live_values(self, run):
        """On a replay subject, a chart over "last 1 h" gets the values published before the page
        opened, through its own stages (filter, map), each at its server time (before the page
        opened, not when it came), then a value published afterwards."""
        assert run.tcp.request({"op": "create", "subject": "dash.hist", "kind": "replay", "capacity": 100})["ok"]
        published = time.time() * 1000
        publish(run.tcp, "dash.hist", [{"v": v} for v in range(1, 8)])
        time.sleep(1.5)
        driver = chromium()
        try:
            opened = time.time() * 1000
            open_page(driver, chart_url(run.daemon, "dash.hist", "1h", filter=".v % 2 == 0", map=".v"))
            panel = panel_for(driver, "dash.hist")
            wait_live(panel)
            wait_until(lambda: chart_points(panel)[0] == 3, "the 3 points of the history (2, 4, 6)")
            points, oldest = chart_points(panel)
            assert published - 50 <= oldest < opened - 1000, (published, oldest, opened)
            assert panel.find_element(By.CSS_SELECTOR, ".count").text == "3 values"
            publish(run.tcp, "dash.hist", [{"v": 8}, {"v": 9}])
            wait_until(lambda: chart_points(panel)[0] == 4, "the live point (8)")
            time.sleep(0.3)
            assert chart_points(panel) == (4, oldest), chart_points(panel)
            assert panel.find_element(By.CSS_SELECTOR, ".count").text == "4 values"
            assert not shown(panel, ".range-note") and not shown(panel, ".gap-note") and not shown(panel, ".panel-error")
            errors = severe_console_entries(driver)
            assert not errors, errors
        finally:
            driver.quit()

    def test_a_chart_range_whose_start_was_let_go_says_so(self, run):
        """A replay subject that keeps 3 values, 10 published: a range's `sub` is answered
        `resumed: false`, and the panel notes that the start of its range is not held, and
        draws the 3 it got."""
        assert run.tcp.request({"op": "create", "subject": "dash.evicted", "kind": "replay", "capacity": 3})["ok"]
        publish(run.tcp, "dash.evicted", list(range(1, 11)))
        driver = chromium()
        try:
            open_page(driver, chart_url(run.daemon, "dash.evicted", "15m"))
            panel = panel_for(driver, "dash.evicted")
            wait_live(panel)
            wait_until(lambda: chart_points(panel)[0] == 3, "the 3 values kept")
            wait_until(lambda: shown(panel, ".range-note"), "the note that the range's start is not held")
            assert "start of this range" in panel.find_element(By.CSS_SELECTOR, ".range-note").text
            assert not shown(panel, ".panel-error")
        finally:
            driver.quit()

    def test_a_chart_range_on_a_plain_subject_shows_the_servers_refusal(self, run):
        """A plain subject keeps no history: the range's `since` is refused (`bad_request`) and the
        panel shows the server's message."""
        publish(run.tcp, "dash.plainrange", [1])
        reply = run.tcp.request({"op": "sub", "subject": "dash.plainrange", "since": 1})
        assert reply["code"] == "bad_request", reply
        driver = chromium()
        try:
            open_page(driver, run.daemon.url + "/")
            panel = add_panel(driver, "dash.plainrange", "chart", range="24h")
            error = wait_until(lambda: panel.find_element(By.CSS_SELECTOR, ".panel-error").text, "the error")
            assert error.startswith("bad_request") and reply["message"] in error, (error, reply)
            assert panel_state(panel) == "refused"
        finally:
            driver.quit()

    def test_a_chart_range_goes_on_from_its_last_value_after_a_restart(self, run):
        """After the daemon restarts, a ranged chart of a durable replay subject resubscribes
        `from` its last value (no `since`): the points before the restart are not replayed again,
        and a value published after it is added."""
        assert run.tcp.request({"op": "create", "subject": "dash.hdur", "kind": "replay", "durable": True})["ok"]
        publish(run.tcp, "dash.hdur", [1, 2, 3])
        driver = chromium(performance_log=True)
        try:
            open_page(driver, chart_url(run.daemon, "dash.hdur", "15m"))
            panel = panel_for(driver, "dash.hdur")
            wait_live(panel)
            wait_until(lambda: chart_points(panel)[0] == 3, "the 3 points of the history")
            first = subs_sent(driver, "dash.hdur")
            assert len(first) == 1 and "since" in first[0] and "from" not in first[0], first
            last = run.tcp.request({"op": "list", "prefix": "dash.hdur"})["subjects"][0]["pos"]

            port, http_port, directory = run.daemon.port, run.daemon.http_port, run.daemon.directory
            run.tcp.close()
            assert run.daemon.stop(keep_directory=True) == 0
            wait_until(lambda: conn_state(driver) != "connected", "the page to notice")
            run.daemon = Daemon(run.binary, CONFIG, port=port, http_port=http_port, directory=directory)
            run.tcp = LineClient(run.daemon.port)
            wait_until(lambda: conn_state(driver) == "connected", "the page to reconnect", timeout=10)
            wait_live(panel)
            publish(run.tcp, "dash.hdur", [4])
            wait_until(lambda: chart_points(panel)[0] == 4, "the value after the restart")
            time.sleep(0.3)
            assert chart_points(panel)[0] == 4, chart_points(panel)
            assert panel.find_element(By.CSS_SELECTOR, ".count").text == "4 values"
            again = subs_sent(driver, "dash.hdur")
            assert again and all(sub.get("from") == last and "since" not in sub and sub.get("ts") is True
                                 for sub in again), (again, last)
            assert not shown(panel, ".range-note") and not shown(panel, ".gap-note")
        finally:
            driver.quit()

    def test_a_map_panel_shows_its_keys_sorted_and_changes_rows_in_place(self, run):
        """A map subject's panel (made with any view: `list` says the subject is a map) is a
        table of its keys, sorted, an object value's members as columns, with a row count; its
        `sub` conflates, and the URL keeps it as a table panel. A write changes its key's row in
        place (the same element; the other rows untouched), a new key's row goes in its place
        (a new member, a new column), a removed key's row goes."""
        assert run.tcp.request({"op": "create", "subject": "dash.hosts", "kind": "map"})["ok"]
        publish_key(run.tcp, "dash.hosts", "web2", {"load": 0.5, "up": True})
        publish_key(run.tcp, "dash.hosts", "web1", {"load": 0.25, "up": True})
        publish_key(run.tcp, "dash.hosts", "db", {"load": 1, "up": False})
        driver = chromium(performance_log=True)
        try:
            open_page(driver, run.daemon.url + "/")
            panel = add_panel(driver, "dash.hosts", "log")
            wait_live(panel)
            wait_until(lambda: map_rows(driver, panel) == [["db", "1", "false"], ["web1", "0.25", "true"],
                                                           ["web2", "0.5", "true"]], "the snapshot's rows")
            assert map_table(driver, panel)[0] == ["key", "load", "up"]
            assert count_text(panel) == "3 keys · 0 changes"
            assert (panel.get_attribute("data-kind"), panel.get_attribute("data-view")) == ("map", "table")
            assert panel.find_element(By.CSS_SELECTOR, "h3").text == "dash.hosts · map"
            subs = subs_sent(driver, "dash.hosts")
            assert len(subs) == 1 and subs[0].get("conflate") is True and "from" not in subs[0], subs
            state = json.loads(unquote(driver.current_url.split("#", 1)[1]))
            assert state["panels"] == [{"subject": "dash.hosts", "filter": "", "map": "", "throttle": "",
                                        "view": "table"}], state

            mark_map_rows(driver, panel)
            publish_key(run.tcp, "dash.hosts", "web1", {"load": 0.75, "up": True})
            wait_until(lambda: map_rows(driver, panel)[1] == ["web1", "0.75", "true"], "web1's new load")
            assert marked_keys(driver, panel) == ["db", "web1", "web2"]
            publish_key(run.tcp, "dash.hosts", "cache", {"load": 0.1, "up": True, "zone": "b"})
            wait_until(lambda: len(map_rows(driver, panel)) == 4, "the new key's row")
            assert map_table(driver, panel) == [["key", "load", "up", "zone"],
                                                [["cache", "0.1", "true", "b"], ["db", "1", "false", ""],
                                                 ["web1", "0.75", "true", ""], ["web2", "0.5", "true", ""]]]
            assert marked_keys(driver, panel) == ["db", "web1", "web2"]
            publish_key(run.tcp, "dash.hosts", "db", delete=True)
            wait_until(lambda: [row[0] for row in map_rows(driver, panel)] == ["cache", "web1", "web2"],
                       "the removed key's row gone")
            assert marked_keys(driver, panel) == ["web1", "web2"]
            wait_until(lambda: count_text(panel) == "3 keys · 3 changes", f"the count ({count_text(panel)!r})")
            panel.find_element(By.CSS_SELECTOR, "button.copy").click()
            command = panel.find_element(By.CSS_SELECTOR, "input.command").get_attribute("value")
            assert command == "runnel map dash.hosts --conflate", command
            errors = severe_console_entries(driver)
            assert not errors, errors
        finally:
            driver.quit()

    def test_a_map_panel_drops_an_expired_keys_row(self, run):
        """A map with `ttl_s` 1: the row of a key nobody writes goes when it expires, while the
        row of a key written every 0.25 s stays, the same element, changed in place. Values that
        are no objects show as one value column of compact JSON."""
        assert run.tcp.request({"op": "create", "subject": "dash.ttl", "kind": "map", "ttl_s": 1})["ok"]
        driver = chromium()
        try:
            open_page(driver, run.daemon.url + "/#" + quote(json.dumps({"panels": [{"subject": "dash.ttl",
                                                                                    "view": "table"}]})))
            panel = panel_for(driver, "dash.ttl")
            wait_live(panel)
            publish_key(run.tcp, "dash.ttl", "soon", "going")
            publish_key(run.tcp, "dash.ttl", "kept", 0)
            wait_until(lambda: map_rows(driver, panel) == [["kept", "0"], ["soon", '"going"']], "both rows")
            assert map_table(driver, panel)[0] == ["key", "value"]
            mark_map_rows(driver, panel)
            written = 0
            deadline = time.monotonic() + 5
            while [row[0] for row in map_rows(driver, panel)] != ["kept"]:
                assert time.monotonic() < deadline, f"the expired key's row is still there: {map_rows(driver, panel)}"
                written += 1
                publish_key(run.tcp, "dash.ttl", "kept", written)
                time.sleep(0.25)
            wait_until(lambda: map_rows(driver, panel) == [["kept", str(written)]], "the last write")
            assert marked_keys(driver, panel) == ["kept"]
            assert count_text(panel).startswith("1 key · ")
            errors = severe_console_entries(driver)
            assert not errors, errors
        finally:
            driver.quit()

    def test_a_map_panel_is_the_maps_table_after_a_restart(self, run):
        """A durable map's panel across a restart of the daemon (same ports, same data): while the
        page cannot connect, another runneld on the same data writes a key, removes one and adds
        one. The page reconnects; its map subscription subscribes again `from` its table's
        position (which the server, keeping no changes across a restart, answers with a new
        snapshot) and the table is the map's: the rows of the keys that stayed are the same
        elements, the written one's changed in place. A write after the restart shows too."""
        assert run.tcp.request({"op": "create", "subject": "dash.dmap", "kind": "map", "durable": True})["ok"]
        for key, value in [("a", 1), ("b", 2), ("c", 3), ("d", 4)]:
            publish_key(run.tcp, "dash.dmap", key, value)
        driver = chromium(performance_log=True)
        try:
            open_page(driver, run.daemon.url + "/#" + quote(json.dumps({"panels": [{"subject": "dash.dmap",
                                                                                    "view": "table"}]})))
            panel = panel_for(driver, "dash.dmap")
            wait_live(panel)
            wait_until(lambda: map_rows(driver, panel) == [["a", "1"], ["b", "2"], ["c", "3"], ["d", "4"]],
                       "the snapshot's rows")
            first = subs_sent(driver, "dash.dmap")
            assert len(first) == 1 and "from" not in first[0], first
            last = run.tcp.request({"op": "list", "prefix": "dash.dmap"})["subjects"][0]["pos"]
            mark_map_rows(driver, panel)

            port, http_port, directory = run.daemon.port, run.daemon.http_port, run.daemon.directory
            run.tcp.close()
            assert run.daemon.stop(keep_directory=True) == 0
            wait_until(lambda: conn_state(driver) != "connected", "the page to notice")
            meanwhile = Daemon(run.binary, CONFIG, directory=directory)
            other = LineClient(meanwhile.port)
            publish_key(other, "dash.dmap", "b", 20)
            publish_key(other, "dash.dmap", "c", delete=True)
            publish_key(other, "dash.dmap", "e", 5)
            other.close()
            assert meanwhile.stop(keep_directory=True) == 0
            run.daemon = Daemon(run.binary, CONFIG, port=port, http_port=http_port, directory=directory)
            run.tcp = LineClient(run.daemon.port)
            wait_until(lambda: conn_state(driver) == "connected", "the page to reconnect", timeout=10)
            wait_until(lambda: map_rows(driver, panel) == [["a", "1"], ["b", "20"], ["d", "4"], ["e", "5"]],
                       "the map's table after the restart")
            wait_live(panel)
            assert marked_keys(driver, panel) == ["a", "b", "d"]
            again = subs_sent(driver, "dash.dmap")
            assert again and all(sub.get("from") == last and sub.get("conflate") is True
                                 for sub in again), (again, last)
            publish_key(run.tcp, "dash.dmap", "a", 10)
            wait_until(lambda: map_rows(driver, panel)[0] == ["a", "10"], "the write after the restart")
            assert marked_keys(driver, panel) == ["a", "b", "d"]
            assert count_text(panel).startswith("4 keys · ")
            assert not shown(panel, ".panel-error") and not shown(panel, ".gap-note")
        finally:
            driver.quit()

    def test_the_header_shows_the_node_and_its_link_in_a_cluster(self, run):
        """A node of a cluster (one nats-server on loopback): the header names the node, says its
        link is up and counts the nodes; with NATS stopped it says the link is down. A standalone
        server's page shows no such badge (the other checks' daemon)."""
        open_page(run.driver, run.daemon.url + "/")
        assert not run.driver.find_element(By.ID, "cluster-state").is_displayed()
        with NatsServer() as nats:
            daemon = Daemon(run.binary, f'cluster_nats = "{nats.url}"\ncluster_name = "dash"\nnode_name = "dash-a"\n')
            driver = chromium()
            try:
                open_page(driver, daemon.url + "/")
                badge = driver.find_element(By.ID, "cluster-state")
                wait_until(lambda: badge.text == "node dash-a · link up · 1 node",
                           f"the cluster badge ({badge.text!r})", 5)
                assert badge.get_attribute("data-state") == "up"
                nats.stop()
                wait_until(lambda: "link down" in badge.text, f"the badge saying the link is down ({badge.text!r})", 15)
                assert badge.get_attribute("data-state") == "down"
            finally:
                driver.quit()
                daemon.stop()

    @pytest.mark.screenshots
    def test_screenshots(self, run):
        state = {"prefix": "sensors.", "panels": [
            {"subject": "sensors.kitchen.temp", "view": "chart"},
            {"subject": "sensors.*.temp", "view": "table"},
            {"subject": "orders.new", "view": "log", "filter": ".total > 10",
             "map": "{\"id\": .id, \"total\": .total}"},
        ]}
        stop = threading.Event()
        feed = threading.Thread(target=sensor_feed, args=(run.daemon.port, stop), daemon=True)
        feed.start()
        driver = chromium(1280, 800)
        try:
            set_viewport(driver, 1280, 800, False)
            open_page(driver, run.daemon.url + "/#" + quote(json.dumps(state)))
            time.sleep(4)
            os.makedirs(run.screenshots, exist_ok=True)
            assert driver.save_screenshot(os.path.join(run.screenshots, "dashboard-desktop.png"))
            set_viewport(driver, 390, 844, True)
            time.sleep(1.5)
            assert driver.save_screenshot(os.path.join(run.screenshots, "dashboard-phone.png"))
            errors = severe_console_entries(driver)
            assert not errors, errors
        finally:
            stop.set()
            feed.join()
            driver.quit()

    @pytest.mark.perf
    def test_performance_at_1000_values_per_second(self, run):
        driver = chromium()
        try:
            open_page(driver, run.daemon.url + "/#" + quote(json.dumps({"panels": [{"subject": "perf.x",
                                                                                    "view": "chart"}]})))
            panel = panel_for(driver, "perf.x")
            wait_live(panel)
            driver.execute_cdp_cmd("Performance.enable", {})
            tcp = LineClient(run.daemon.port)

            def metrics():
                return {m["name"]: m["value"] for m in driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]}

            before, started = metrics(), time.monotonic()
            seconds, total = 10, 0
            for tick in range(seconds * 100):
                lines = b"".join(json.dumps({"op": "pub", "subject": "perf.x",
                                             "value": math.sin((total + i) / 50)}).encode()
                                 + b"\n" for i in range(10))
                tcp.socket.sendall(lines)
                total += 10
                delay = started + (tick + 1) / 100 - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            wait_until(lambda: panel.find_element(By.CSS_SELECTOR, ".count").text.startswith(f"{total} values"),
                       f"{total} values counted", timeout=10)
            after, elapsed = metrics(), time.monotonic() - started
            tcp.close()
            busy = {name: (after[name] - before[name]) / elapsed for name in
                    ["TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration"]}
            print("     page CPU at 1,000 values/s: " + ", ".join(f"{k} {v * 100:.1f}%" for k, v in busy.items())
                  + f"; {total} published, {total} counted, JS heap {after['JSHeapUsedSize'] / 1e6:.1f} MB", flush=True)
        finally:
            driver.quit()

    def test_clean_stop(self, run):
        run.close()
        assert_clean_stop(run.daemon)
