"""TLS checks against a real runneld: `tls_listen` (the line protocol over TLS) and `https_listen` (the HTTP front
door over TLS) with certificates made here by `openssl` (a CA, a server certificate for localhost and 127.0.0.1, an
expired one, one for another host, a client certificate, an unrelated CA). Clients no one here wrote: Python's `ssl`,
httpx, websockets, `openssl s_client`; and the `runnel` CLI (`--tls`, `--ca-file`, `--server-name`). Wrong CA,
expired certificate and wrong host name fail with clear errors; `tls_min_version = "1.3"` refuses a TLS 1.2 client;
`tls_ca_file` requires client certificates; plaintext on a TLS port and TLS on a plaintext port fail at once;
SIGHUP re-reads the certificate; and a hostile suite (garbage and stalled handshakes, 2,000 handshakes opened and
dropped) while other clients are served.

    python3 -m pytest Tests/blackbox/test_tls.py --runneld .build/debug/runneld   (the runnel CLI is taken from the
    same directory)
"""

import json
import os
import queue
import random
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time

import httpx
import pytest
from websockets.sync.client import connect as ws_connect

from runneld_process import LineClient, assert_clean_stop

# Made by the first check that needs them (the `certificates` fixture), not by collecting the checks.
CERTS = os.path.join(tempfile.gettempdir(), f"runnel-tls-certs-{os.getpid()}")
RUNNEL = None  # the CLI, next to runneld


def openssl(*arguments):
    subprocess.run(["openssl", *arguments], cwd=CERTS, check=True, capture_output=True)


def make_certificates():
    """Two CAs, and leaf certificates signed by the first: made with `openssl req` and `openssl ca` (which can
    back-date a certificate, for the expired one)."""
    for name in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj", f"/CN=Runnel test {name}",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    with open(os.path.join(CERTS, "ca.cnf"), "w") as file:
        file.write("[ ca ]\ndefault_ca = test\n[ test ]\ndir = .\ndatabase = index.txt\nnew_certs_dir = .\n"
                   "serial = serial\ndefault_md = sha256\npolicy = anything\ncopy_extensions = copy\n"
                   "unique_subject = no\n[ anything ]\ncommonName = supplied\n")
    open(os.path.join(CERTS, "index.txt"), "w").close()
    with open(os.path.join(CERTS, "serial"), "w") as file:
        file.write("1000\n")

    def leaf(name, san, dates=("-days", "2"), usage="serverAuth"):
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{name}.key",
                "-out", f"{name}.csr", "-subj", f"/CN={name}", "-addext", f"subjectAltName={san}",
                "-addext", f"extendedKeyUsage={usage}")
        openssl("ca", "-batch", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca.key", "-in", f"{name}.csr",
                "-out", f"{name}.pem", "-notext", *dates)

    leaf("server", "DNS:localhost,IP:127.0.0.1")
    leaf("server2", "DNS:localhost,IP:127.0.0.1")
    leaf("expired", "DNS:localhost,IP:127.0.0.1", dates=("-startdate", "20200101000000Z", "-enddate",
                                                         "20200201000000Z"))
    leaf("wronghost", "DNS:wrong.example")
    leaf("client", "DNS:client.example", usage="clientAuth")


def cert(name):
    return os.path.join(CERTS, name)


def tls_config(certificate="server", more=""):
    return f'''
tls_listen = "127.0.0.1:0"
https_listen = "127.0.0.1:0"
tls_cert_file = "{cert(certificate + '.pem')}"
tls_key_file = "{cert(certificate + '.key')}"
{more}
'''


def client_context(ca="ca.pem", client_certificate=None, maximum=None):
    context = ssl.create_default_context(cafile=cert(ca))
    if client_certificate:
        context.load_cert_chain(cert(client_certificate + ".pem"), cert(client_certificate + ".key"))
    if maximum:
        context.maximum_version = maximum
    return context


class TLSLineClient(LineClient):
    """The line protocol over TLS through Python's `ssl`."""

    def __init__(self, port, context=None, server_hostname="localhost"):
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.socket = (context or client_context()).wrap_socket(raw, server_hostname=server_hostname)
        self.buffer = b""


def runnel(*arguments, timeout=20):
    """Runs the CLI; (exit status, stdout, stderr)."""
    result = subprocess.run([RUNNEL, *arguments], capture_output=True, text=True, timeout=timeout,
                            stdin=subprocess.DEVNULL)
    return result.returncode, result.stdout, result.stderr


def expect_cli_failure(arguments, words):
    status, _, error = runnel(*arguments)
    assert status == 1, (status, error)
    assert words in error, error
    return error


def serial_of_peer(port):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with client_context().wrap_socket(raw, server_hostname="localhost") as tls:
            der = tls.getpeercert(binary_form=True)
    result = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-serial"], input=der,
                            capture_output=True, check=True)
    return result.stdout.decode().strip()


def serial_of_file(name):
    result = subprocess.run(["openssl", "x509", "-in", cert(name), "-noout", "-serial"], capture_output=True,
                            check=True, text=True)
    return result.stdout.strip()


def s_client(port, *options):
    result = subprocess.run(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-CAfile", cert("ca.pem"), "-verify_return_error",
         "-brief", *options], input=b"", capture_output=True, timeout=20)
    return result.returncode, (result.stdout + result.stderr).decode(errors="replace")


# ---- What the checks use.

def closes_within(sock, seconds):
    """Reads until the server closes; the time it took. An alert may come first."""
    sock.settimeout(seconds)
    started = time.monotonic()
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def client_hello():
    """A real ClientHello from Python's `ssl`, as bytes."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = client_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def wait_for_log(d, words, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if any(words in line for line in d.log):
            d.log[:] = [line for line in d.log if words not in line]  # the next wait sees the next one
            return
        time.sleep(0.05)
    raise AssertionError(f"no log line with {words!r}:\n" + "\n".join(d.log[-10:]))


# ---- Hostile TLS clients while others are served.

class Pinger:
    """Pings over TLS and over plaintext, one after the other, all the time; records every round trip."""

    def __init__(self, d):
        self.clients = [TLSLineClient(d.tls_port), LineClient(d.port)]
        self.worst = 0.0
        self.count = 0
        self.failure = None
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        try:
            while self.running:
                for client in self.clients:
                    started = time.monotonic()
                    assert client.request({"op": "ping"})["ok"]
                    self.worst = max(self.worst, time.monotonic() - started)
                    self.count += 1
                time.sleep(0.005)
        except Exception as error:  # noqa: BLE001 - reported by stop()
            self.failure = error

    def stop(self):
        """The worst round trip; fails when a ping failed or one waited over half a second (the server answers in
        a few ms here while attacked; the bound leaves room for this Python thread sharing the GIL with the
        attackers' on a busy machine)."""
        self.running = False
        self.thread.join(10)
        for client in self.clients:
            client.close()
        assert self.failure is None, f"a ping failed: {self.failure!r}"
        assert self.count >= 2, self.count
        assert self.worst < 0.5, f"a ping waited {self.worst * 1000:.0f} ms"
        return self.worst


def in_threads(count, work):
    threads = [threading.Thread(target=work, args=(index,), daemon=True) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)


@pytest.fixture(scope="module", autouse=True)
def certificates(binary):
    """Makes the certificates once (removed after the last check) and finds the CLI next to
    `binary`."""
    global RUNNEL
    RUNNEL = os.path.join(os.path.dirname(binary), "runnel")
    os.makedirs(CERTS, exist_ok=True)
    try:
        make_certificates()
        yield
    finally:
        shutil.rmtree(CERTS, ignore_errors=True)


@pytest.fixture(scope="class")
def d(request, runneld):
    """The suite's daemon on its class's `@pytest.mark.daemon(CONFIG)`, in a directory that also
    holds copies of the server's certificate and key where the config names DIR/served.pem and
    DIR/served.key (the reload check replaces them)."""
    config = request.node.get_closest_marker("daemon").args[0]
    directory = tempfile.mkdtemp(prefix="runneld-test-")
    if "DIR/served" in config:
        shutil.copy(cert("server.pem"), os.path.join(directory, "served.pem"))
        shutil.copy(cert("server.key"), os.path.join(directory, "served.key"))
        config = config.replace("DIR", directory)
    return runneld(config, directory=directory)


RELOAD_CONFIG = '''
tls_listen = "127.0.0.1:0"
https_listen = "127.0.0.1:0"
tls_cert_file = "DIR/served.pem"
tls_key_file = "DIR/served.key"
'''


class TestConfigErrors:
    """Configuration errors, each from a runneld of its own."""

    def test_configuration_errors(self, binary):
        directory = tempfile.mkdtemp(prefix="runneld-tls-config-")
        try:
            cases = [
                ('tls_listen = "127.0.0.1:0"\n', "a TLS listener needs tls_cert_file and tls_key_file"),
                ('https_listen = "127.0.0.1:0"\ntls_cert_file = "/nonexistent.pem"\ntls_key_file = "/nonexistent.key"\n',
                 "cannot read tls_cert_file /nonexistent.pem: No such file or directory"),
                (f'tls_listen = "127.0.0.1:0"\ntls_cert_file = "{cert("server.pem")}"\n'
                 f'tls_key_file = "{cert("client.key")}"\n', "is not a PEM private key of the certificate in"),
                ('tls_min_version = "1.1"\n', 'must be "1.2" or "1.3"'),
            ]
            for toml, words in cases:
                path = os.path.join(directory, "runneld.toml")
                with open(path, "w") as file:
                    file.write(toml)
                result = subprocess.run([binary, "--config", path, "--check-config"], capture_output=True, text=True)
                assert result.returncode == 2 and words in result.stderr, (toml, result.returncode, result.stderr)
            # The flag needs the files too.
            result = subprocess.run([binary, "--tls-listen", "127.0.0.1:0", "--check-config"], capture_output=True,
                                    text=True)
            assert result.returncode == 2 and "needs tls_cert_file" in result.stderr, result.stderr
        finally:
            shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.daemon(tls_config())
class TestMain:
    """Both TLS listeners with a good certificate."""

    def test_line_protocol_pub_sub_over_tls(self, d):
        subscriber = TLSLineClient(d.tls_port)
        publisher = TLSLineClient(d.tls_port)
        assert subscriber.socket.version() == "TLSv1.3", subscriber.socket.version()
        assert subscriber.request({"op": "sub", "subject": "tls.a", "sid": "s"})["ok"]
        big = "x" * 200_000  # spans many TLS records each way
        for value in (1, "two", {"three": 3}, big):
            assert publisher.request({"op": "pub", "subject": "tls.a", "value": value})["ok"]
            assert subscriber.next_value() == value
        subscriber.close()
        publisher.close()

    def test_ten_thousand_values_arrive_in_order_over_tls(self, d):
        subscriber = TLSLineClient(d.tls_port)
        publisher = TLSLineClient(d.tls_port)
        assert subscriber.request({"op": "sub", "subject": "tls.many", "sid": "s"})["ok"]
        lines = b"".join(json.dumps({"op": "pub", "subject": "tls.many", "value": n}).encode() + b"\n"
                         for n in range(10_000))
        publisher.socket.sendall(lines)
        for n in range(10_000):
            assert subscriber.next_value() == n
        subscriber.close()
        publisher.close()

    def test_orderly_close_answers_close_notify(self, d):
        client = TLSLineClient(d.tls_port)
        assert client.request({"op": "ping"})["ok"]
        client.socket.settimeout(5)
        client.socket.unwrap()  # sends close_notify and waits for the server's
        client.socket.close()

    def test_cli_ping_pub_sub_over_tls(self, d):
        for server in (f"127.0.0.1:{d.tls_port}", f"localhost:{d.tls_port}"):
            status, output, error = runnel("ping", "--server", server, "--tls", "--ca-file", cert("ca.pem"))
            assert status == 0 and "pong" in output, (status, output, error)
        subscriber = subprocess.Popen(
            [RUNNEL, "sub", "tls.cli", "--take", "1", "--server", f"127.0.0.1:{d.tls_port}", "--tls", "--ca-file",
             cert("ca.pem")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 10
            delivered = False
            while time.monotonic() < deadline and not delivered:
                status, _, error = runnel("pub", "tls.cli", "42", "--server", f"127.0.0.1:{d.tls_port}", "--tls",
                                          "--ca-file", cert("ca.pem"))
                assert status == 0, error
                try:
                    output, error = subscriber.communicate(timeout=0.5)
                    delivered = True
                except subprocess.TimeoutExpired:
                    pass
            assert delivered and subscriber.returncode == 0 and output.strip() == "42", (output, error)
        finally:
            if subscriber.poll() is None:
                subscriber.kill()
                subscriber.wait()

    def test_cli_refuses_an_unknown_ca(self, d):
        expect_cli_failure(["ping", "--server", f"127.0.0.1:{d.tls_port}", "--tls", "--ca-file", cert("other-ca.pem")],
                           "not signed by a trusted CA")
        # Without --ca-file the system's CAs are trusted, and the test CA is not one of them.
        expect_cli_failure(["ping", "--server", f"127.0.0.1:{d.tls_port}", "--tls"], "not signed by a trusted CA")

    def test_cli_refuses_a_wrong_host_name(self, d):
        error = expect_cli_failure(
            ["ping", "--server", f"127.0.0.1:{d.tls_port}", "--tls", "--ca-file", cert("ca.pem"), "--server-name",
             "wrong.example"], "not valid for wrong.example")
        assert "--server-name" in error, error

    def test_python_refuses_an_unknown_ca_and_a_wrong_host(self, d):
        for port in (d.tls_port, d.https_port):
            try:
                TLSLineClient(port, context=client_context("other-ca.pem"))
                raise AssertionError("an unknown CA was accepted")
            except ssl.SSLCertVerificationError as error:
                assert "unable to get local issuer certificate" in error.verify_message, error
            try:
                TLSLineClient(port, server_hostname="wrong.example")
                raise AssertionError("a wrong host name was accepted")
            except ssl.SSLCertVerificationError as error:
                assert "Hostname mismatch" in error.verify_message, error

    def test_https_healthz_pub_and_events(self, d):
        with httpx.Client(verify=client_context(), timeout=10) as client:
            assert client.get(d.https_url + "/healthz").status_code == 200
            received = queue.Queue()

            def listen():
                with client.stream("GET", d.https_url + "/events", params={"subject": "tls.sse"}) as response:
                    assert response.status_code == 200
                    for line in response.iter_lines():
                        if line.startswith("data:"):
                            received.put(json.loads(line[5:]))
                            return

            listener = threading.Thread(target=listen, daemon=True)
            listener.start()
            deadline = time.monotonic() + 10
            while received.empty() and time.monotonic() < deadline:
                response = client.post(d.https_url + "/pub/tls.sse", json={"n": 7})
                assert response.status_code in (200, 202, 204), (response.status_code, response.text)
                time.sleep(0.2)
            assert received.get(timeout=1) == {"n": 7}
            metrics = client.get(d.https_url + "/metrics").text
            assert "runnel_tls_failures_total" in metrics
            # The dashboard over HTTPS, and its own https:// origin may publish; another origin may not.
            page = client.get(d.https_url + "/")
            assert page.status_code == 200 and "text/html" in page.headers["content-type"], page.status_code
            own = f"https://127.0.0.1:{d.https_port}"
            assert client.post(d.https_url + "/pub/tls.origin", json=1, headers={"Origin": own}).status_code < 300
            assert client.post(d.https_url + "/pub/tls.origin", json=1,
                               headers={"Origin": "https://evil.example"}).status_code == 403

    def test_wss_subscribe_and_receive(self, d):
        with ws_connect(f"wss://127.0.0.1:{d.https_port}/ws", ssl=client_context(), proxy=None,
                        open_timeout=10) as websocket:
            websocket.send(json.dumps({"op": "sub", "subject": "tls.ws", "sid": "w", "ref": 1}))
            assert json.loads(websocket.recv(timeout=10))["ok"]
            publisher = TLSLineClient(d.tls_port)
            assert publisher.request({"op": "pub", "subject": "tls.ws", "value": "over wss"})["ok"]
            event = json.loads(websocket.recv(timeout=10))
            assert event["ev"] == "next" and event["value"] == "over wss", event
            publisher.close()

    def test_s_client_negotiates_tls_1_3(self, d):
        for port in (d.tls_port, d.https_port):
            status, output = s_client(port)
            assert status == 0, output
            assert "Protocol version: TLSv1.3" in output and "Verification: OK" in output, output
        # The default floor is 1.2: a 1.2-only client gets in too.
        status, output = s_client(d.tls_port, "-tls1_2")
        assert status == 0 and "Protocol version: TLSv1.2" in output, output
        assert "Ciphersuite: ECDHE-ECDSA-AES256-GCM-SHA384" in output, output
        # TLS 1.2 without forward secrecy or with CBC is not offered.
        for suite in ("AES128-SHA", "ECDHE-ECDSA-AES128-SHA"):
            status, output = s_client(d.tls_port, "-tls1_2", "-cipher", suite)
            assert status != 0 and "handshake failure" in output, output

    def test_plaintext_on_tls_ports_is_closed_at_once(self, d):
        for port, request in ((d.tls_port, b'{"op":"ping","ref":1}\n'),
                              (d.https_port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(request)
                took = closes_within(sock, 5)
                assert took < 2, f"port {port}: closed after {took:.1f}s"

    def test_tls_on_plaintext_ports_fails_at_once(self, d):
        for port in (d.port, d.http_port):
            started = time.monotonic()
            try:
                TLSLineClient(port)
                raise AssertionError(f"a TLS handshake with plaintext port {port} succeeded")
            except ssl.SSLError as error:
                assert "WRONG_VERSION_NUMBER" in str(error) or "record layer failure" in str(error), error
            took = time.monotonic() - started
            assert took < 2, f"port {port}: failed after {took:.1f}s"
        # The line port answers the ClientHello with an error line; the HTTP port with a 400.
        with socket.create_connection(("127.0.0.1", d.http_port), timeout=5) as sock:
            sock.sendall(client_hello())
            answer = sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 400"), answer[:80]
        with socket.create_connection(("127.0.0.1", d.port), timeout=5) as sock:
            sock.sendall(client_hello())
            answer = json.loads(sock.recv(65536).split(b"\n")[0])
            assert answer["ok"] is False, answer
        started = time.monotonic()
        error = expect_cli_failure(["ping", "--server", f"127.0.0.1:{d.port}", "--tls", "--ca-file", cert("ca.pem")],
                                   "plaintext port")
        assert time.monotonic() - started < 5, error

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(RELOAD_CONFIG)
class TestReload:
    """The reload check serves copies of the files, which it then replaces."""

    def test_reload_rereads_the_certificate(self, d):
        served_pem, served_key = os.path.join(d.directory, "served.pem"), os.path.join(d.directory, "served.key")
        assert serial_of_peer(d.tls_port) == serial_of_file("server.pem")
        old = TLSLineClient(d.tls_port)
        shutil.copy(cert("server2.pem"), served_pem)
        shutil.copy(cert("server2.key"), served_key)
        d.process.send_signal(signal.SIGHUP)
        wait_for_log(d, "TLS certificate and key reloaded")
        assert serial_of_peer(d.tls_port) == serial_of_file("server2.pem")
        assert serial_of_peer(d.https_port) == serial_of_file("server2.pem")
        assert old.request({"op": "ping"})["ok"], "an open connection outlives the reload"
        # A broken file is an error logged; the running certificate stays.
        with open(served_pem, "w") as file:
            file.write("not a certificate\n")
        d.process.send_signal(signal.SIGHUP)
        wait_for_log(d, "TLS reload failed, keeping the running certificate and key")
        assert serial_of_peer(d.tls_port) == serial_of_file("server2.pem")
        assert old.request({"op": "ping"})["ok"]
        old.close()
        d.alive()

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(tls_config("expired"))
class TestExpired:
    """An expired certificate."""

    def test_expired_certificate_is_refused(self, d):
        expect_cli_failure(["ping", "--server", f"127.0.0.1:{d.tls_port}", "--tls", "--ca-file", cert("ca.pem")],
                           "certificate has expired")
        for port in (d.tls_port, d.https_port):
            try:
                TLSLineClient(port)
                raise AssertionError("an expired certificate was accepted")
            except ssl.SSLCertVerificationError as error:
                assert "certificate has expired" in error.verify_message, error

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(tls_config(more='tls_min_version = "1.3"'))
class TestTLS13:
    """tls_min_version = "1.3"."""

    def test_tls_1_2_client_is_refused(self, d):
        for port in (d.tls_port, d.https_port):
            try:
                TLSLineClient(port, context=client_context(maximum=ssl.TLSVersion.TLSv1_2))
                raise AssertionError("a TLS 1.2 client got in")
            except ssl.SSLError as error:
                assert "PROTOCOL_VERSION" in str(error) or "protocol version" in str(error), error
            status, output = s_client(port, "-tls1_2")
            assert status != 0, output
            status, output = s_client(port, "-tls1_3")
            assert status == 0 and "Protocol version: TLSv1.3" in output, output

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(tls_config(more=f'tls_ca_file = "{cert("ca.pem")}"'))
class TestClientCertificate:
    """tls_ca_file: client certificates required."""

    def test_client_certificate_is_required_and_verified(self, d):
        for port in (d.tls_port, d.https_port):
            with_certificate = TLSLineClient(port, context=client_context(client_certificate="client"))
            if port == d.tls_port:
                assert with_certificate.request({"op": "ping"})["ok"]
            with_certificate.close()
            for context in (client_context(), client_context(client_certificate="wronghost")):
                # TLS 1.3 checks the client's certificate after the client's handshake ends: the refusal arrives
                # as an alert on the first read.
                try:
                    client = TLSLineClient(port, context=context)
                    client.send({"op": "ping", "ref": 1})
                    client.line()
                    raise AssertionError("a client without a good certificate got in")
                except (ssl.SSLError, EOFError, ConnectionResetError):
                    pass
        status, output, error = runnel("ping", "--server", f"127.0.0.1:{d.tls_port}", "--tls", "--ca-file",
                                       cert("ca.pem"), "--cert-file", cert("client.pem"), "--key-file", cert("client.key"))
        assert status == 0 and "pong" in output, (status, output, error)
        status, _, error = runnel("ping", "--server", f"127.0.0.1:{d.tls_port}", "--tls", "--ca-file", cert("ca.pem"))
        assert status == 1 and "certificate" in error, error

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(tls_config())
class TestHostile:
    """Hostile TLS clients while others are served."""

    def test_garbage_handshakes_are_closed_while_others_are_served(self, d):
        pinger = Pinger(d)
        slow = []

        def garbage(index):
            generator = random.Random(index)
            for _ in range(25):
                with socket.create_connection(("127.0.0.1", d.tls_port), timeout=10) as sock:
                    # Random bytes, and a TLS record header announcing a huge handshake message.
                    sock.sendall(generator.randbytes(4096) if index % 2 else b"\x16\x03\x01\xff\xff" + b"\x01" * 4096)
                    if closes_within(sock, 10) > 2:
                        slow.append(index)

        in_threads(8, garbage)
        worst = pinger.stop()
        assert not slow, f"{len(slow)} garbage connections stayed open over 2 s"
        print(f"     200 garbage handshakes: worst ping {worst * 1000:.1f} ms", flush=True)
        d.alive()

    def test_stalled_handshakes_time_out(self, d):
        hello = client_hello()
        stalled = []
        for _ in range(100):
            sock = socket.create_connection(("127.0.0.1", d.tls_port), timeout=15)
            sock.sendall(hello[:len(hello) // 2])
            stalled.append(sock)
        pinger = Pinger(d)
        time.sleep(1)
        for sock in stalled[:5]:
            sock.setblocking(False)
            try:
                assert sock.recv(1) != b"", "a stalled handshake was closed before its timeout"
            except BlockingIOError:
                pass
            sock.setblocking(True)
            sock.settimeout(15)
        started = time.monotonic()
        for sock in stalled:
            closes_within(sock, 15)
            sock.close()
        took = time.monotonic() - started
        worst = pinger.stop()
        assert took < 12, f"stalled handshakes closed after {took:.1f}s more"
        print(f"     100 stalled handshakes closed by the 10 s timeout; worst ping {worst * 1000:.1f} ms", flush=True)

    def test_two_thousand_handshakes_opened_and_dropped(self, d):
        hello = client_hello()
        pinger = Pinger(d)
        rss_before = d.rss_bytes()

        def churn(index):
            for n in range(250):
                with socket.create_connection(("127.0.0.1", d.tls_port), timeout=10) as sock:
                    sock.sendall(hello)
                    if n % 2:
                        sock.recv(100)  # the ServerHello has started; drop it half way
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")

        in_threads(8, churn)
        time.sleep(0.5)
        rss_after = d.rss_bytes()
        worst = pinger.stop()
        growth = (rss_after - rss_before) / 2**20
        print(f"     2,000 handshakes dropped: worst ping {worst * 1000:.1f} ms, RSS {rss_before / 2**20:.1f} -> "
              f"{rss_after / 2**20:.1f} MiB", flush=True)
        assert growth < 40, f"RSS grew by {growth:.1f} MiB"
        assert TLSLineClient(d.tls_port).request({"op": "ping"})["ok"]
        with httpx.Client(verify=client_context(), timeout=10) as client:
            failures = [line for line in client.get(d.https_url + "/metrics").text.splitlines()
                        if line.startswith("runnel_tls_failures_total")]
            assert failures and float(failures[0].split()[1]) >= 2000, failures

    def test_clean_stop(self, d):
        assert_clean_stop(d)
