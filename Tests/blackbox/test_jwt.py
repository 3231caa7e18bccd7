"""Tokens minted by web apps (JWT, docs/protocol.md, "JWTs") against a real runneld, with tokens
signed by PyJWT and keys made by cryptography (neither written here), over every transport.

    python3 -m pytest Tests/blackbox/test_jwt.py [--runneld PATH]

Makes an HMAC secret, RSA and P-256 key pairs (PEM files) and a JWKS file of two more keys with
`kid`s, starts its own runneld with them (`jwt_issuer`, `jwt_audience`, `jwt_leeway = 0`) beside
an `auth_tokens` token, and checks: a token of each algorithm and key source is accepted by
`auth`, `Authorization: Bearer` and `?token=`, with the rights of its `runnel` claim; every
refusal names its check (wrong key, `alg: none`, HS256 signed with the RS256 public key, an
unsupported alg, expired, not yet valid, wrong `iss`, wrong `aud`, malformed) on TCP and HTTP;
`auth` with a fresh token before expiry keeps the connection and moves it to the new rights;
expiry closes a TCP connection, a WebSocket (1008) and an event stream (`event: closing`);
SIGHUP re-reads a rotated key file (tokens of the old key are closed and refused, the new
key's accepted) and keeps the running keys when a key file is broken; bad key files are config
errors naming their key. Expiring tokens live two seconds: deadlines, not timing assertions.
Needs PyJWT and cryptography, websockets (13 or later) and httpx.
"""

import base64
import hashlib
import hmac
import json
import os
import shutil
import signal
import tempfile
import time
import warnings

import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
import pytest
from runneld_process import EventStream, LineClient, assert_clean_stop, check_config, expect_closing, poll_until
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

ISSUER = "https://app.example"
AUDIENCE = "runnel"
SECRET = "s3cret-for-hs256-at-least-32-bytes!"
RIGHTS = {"publish": ["chat.*"], "subscribe": ["chat.>", "news"], "manage": False}


def public_pem(private_key):
    return private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def int_b64url(number, length=None):
    return b64url(number.to_bytes(length or (number.bit_length() + 7) // 8, "big"))


def jwk(private_key, kid):
    numbers = private_key.public_key().public_numbers()
    if isinstance(private_key, rsa.RSAPrivateKey):
        return {"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig", "n": int_b64url(numbers.n),
                "e": int_b64url(numbers.e)}
    return {"kty": "EC", "kid": kid, "crv": "P-256", "x": int_b64url(numbers.x, 32), "y": int_b64url(numbers.y, 32)}


class Keys:
    """The keys of one run, in a directory of their own: the PEM files and the JWKS file the
    configuration names, and the private keys that sign."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="runneld-jwt-")
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.jwks_rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.jwks_ec = ec.generate_private_key(ec.SECP256R1())
        self.rsa_pem = self.path("rsa.pem")
        self.write(self.rsa_pem, public_pem(self.rsa))
        self.write(self.path("ec.pem"), public_pem(self.ec))
        self.write(self.path("jwks.json"), json.dumps(
            {"keys": [jwk(self.jwks_rsa, "rsa-2"), jwk(self.jwks_ec, "ec-2")]}).encode())

    def path(self, name):
        return os.path.join(self.directory, name)

    @staticmethod
    def write(path, data):
        with open(path, "wb") as file:
            file.write(data)

    def config(self):
        return f"""
auth_tokens = ["admin"]
jwt_secrets = ["{SECRET}"]
jwt_public_keys = ["{self.rsa_pem}", "{self.path('ec.pem')}"]
jwt_jwks_file = "{self.path('jwks.json')}"
jwt_issuer = "{ISSUER}"
jwt_audience = "{AUDIENCE}"
jwt_leeway = 0
"""


class Setup:
    """What the checks share: the daemon (`daemon`, whose log a failed check's report shows) and the keys."""

    def __init__(self, daemon, keys):
        self.daemon = daemon
        self.keys = keys


def claims(lifetime=60, **overrides):
    now = int(time.time())
    payload = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + lifetime, "runnel": RIGHTS}
    payload.update(overrides)
    return {key: value for key, value in payload.items() if value is not None}


def token(s, algorithm="HS256", key=None, kid=None, **claim_overrides):
    """A token signed by PyJWT: HS256 with the configured secret, RS256 and ES256 with the PEM
    files' keys, unless `key` says otherwise."""
    if key is None:
        key = {"HS256": SECRET, "RS256": s.keys.rsa, "ES256": s.keys.ec}[algorithm]
    headers = {"kid": kid} if kid else None
    return jwt.encode(claims(**claim_overrides), key, algorithm=algorithm, headers=headers)


def hand_made(header, payload, signature=b""):
    """A token PyJWT refuses to make (alg none, an HMAC keyed with a public key)."""
    return ".".join([b64url(json.dumps(header).encode()), b64url(json.dumps(payload).encode()), b64url(signature)])


def hs512(payload):
    """A token of an algorithm runneld does not serve (PyJWT warns that the secret is short for it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return jwt.encode(payload, SECRET, algorithm="HS512")


def tcp(s, jwt_token):
    client = LineClient(s.daemon.port)
    reply = client.request({"op": "auth", "token": jwt_token})
    assert reply == {"ok": True, "ref": 1}, reply
    return client


def auth_error(s, jwt_token):
    client = LineClient(s.daemon.port)
    try:
        reply = client.request({"op": "auth", "token": jwt_token})
    finally:
        client.close()
    assert reply.get("ok") is False and reply["code"] == "unauthorized", reply
    return reply["message"]


EXPIRED = {"ev": "closing", "code": "unauthorized", "message": "token expired"}


def reload(s, expected):
    lines_before = len(s.daemon.log)
    s.daemon.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while not any(expected in entry for entry in s.daemon.log[lines_before:]):
        assert time.monotonic() < deadline, "no reload in the log:\n" + "\n".join(s.daemon.log[-10:])
        time.sleep(0.02)


class TestMain:
    """One daemon with every key source, beside an `auth_tokens` token."""

    @pytest.fixture(scope="class")
    def s(self, runneld):
        """The keys of the run, and a daemon that takes them."""
        keys = Keys()
        try:
            yield Setup(runneld(keys.config()), keys)
        finally:
            shutil.rmtree(keys.directory, ignore_errors=True)

    # Accepted: each algorithm, each key source, each place a token is given.

    def test_each_algorithm_and_key_source_is_accepted_with_its_rights(self, s):
        tokens = {
            "HS256 secret": token(s, "HS256"),
            "RS256 PEM": token(s, "RS256"),
            "ES256 PEM": token(s, "ES256"),
            "RS256 JWKS": token(s, "RS256", key=s.keys.jwks_rsa, kid="rsa-2"),
            "ES256 JWKS": token(s, "ES256", key=s.keys.jwks_ec, kid="ec-2"),
        }
        for name, signed in tokens.items():
            client = tcp(s, signed)
            assert client.request({"op": "pub", "subject": "chat.room", "value": name}) == {
                "ok": True, "ref": 1, "receivers": 0}, name
            refused = client.request({"op": "pub", "subject": "news", "value": 1})
            assert refused["code"] == "unauthorized" and refused["message"] == "token may not publish to news", refused
            assert client.request({"op": "create", "subject": "x"})["code"] == "unauthorized", name
            assert client.request({"op": "sub", "subject": "news", "sid": "n"}) == {"ok": True, "ref": 1, "sid": "n"}
            client.close()
        # The same tokens over HTTP: a Bearer header and ?token=.
        for name, signed in tokens.items():
            response = httpx.post(s.daemon.url + "/pub/chat.http", json=1,
                                  headers={"Authorization": f"Bearer {signed}"})
            assert response.status_code == 200, (name, response.text)
            response = httpx.post(s.daemon.url + "/pub/chat.http", json=1, params={"token": signed})
            assert response.status_code == 200, (name, response.text)
            assert httpx.get(s.daemon.url + "/stats", params={"token": signed}).status_code == 401, name

    def test_absent_rights_claim_grants_nothing(self, s):
        client = tcp(s, token(s, runnel=None))
        assert client.request({"op": "pub", "subject": "chat.room", "value": 1})["code"] == "unauthorized"
        assert client.request({"op": "sub", "subject": "news"})["code"] == "unauthorized"
        assert client.request({"op": "ping"}) == {"ok": True, "ref": 1}
        client.close()

    # Refused, each with the check that failed.

    def test_every_refusal_names_its_check(self, s):
        other_rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        payload = claims()
        rs256_public_pem = public_pem(s.keys.rsa)
        header, body = (b64url(json.dumps(part).encode()) for part in ({"alg": "HS256", "typ": "JWT"}, payload))
        confused = f"{header}.{body}." + b64url(
            hmac.new(rs256_public_pem, f"{header}.{body}".encode(), hashlib.sha256).digest())
        cases = {
            "wrong secret": (token(s, "HS256", key="another-secret-that-is-32-bytes-long!"),
                             "JWT signature does not verify"),
            "wrong RSA key": (token(s, "RS256", key=other_rsa), "JWT signature does not verify"),
            "alg none": (hand_made({"alg": "none", "typ": "JWT"}, payload), "JWT alg none is never accepted"),
            "HS256 with the RS256 public key": (confused, "JWT signature does not verify"),
            "HS512": (hs512(payload), "JWT alg HS512 is not supported (HS256, RS256, ES256)"),
            "unknown kid of another alg": (token(s, "ES256", key=s.keys.jwks_ec, kid="rsa-2"),
                                           "JWT signature does not verify"),
            "expired": (token(s, lifetime=-10), "JWT expired"),
            "not yet valid": (token(s, nbf=int(time.time()) + 60), "JWT not yet valid (nbf)"),
            "wrong issuer": (token(s, iss="https://evil.example"), "JWT issuer does not match jwt_issuer"),
            "wrong audience": (token(s, aud="someone-else"), "JWT audience does not match jwt_audience"),
            "no exp": (token(s, exp=None), "malformed JWT: exp is missing or not a number"),
            "bad rights": (token(s, runnel={"publish": ["a.>.b"]}), "malformed JWT: runnel.publish[0]"),
            "garbage": ("abc.def.ghi", "malformed JWT: the header is not a JSON object"),
            "not base64url": ("a+b.c.d", "malformed JWT: the header is not base64url"),
        }
        for name, (signed, expected) in cases.items():
            message = auth_error(s, signed)
            assert message.startswith(expected), (name, message)
            # The same refusal over HTTP: 401 with the message, for a Bearer header and ?token=.
            response = httpx.post(s.daemon.url + "/pub/chat.x", json=1, headers={"Authorization": f"Bearer {signed}"})
            assert response.status_code == 401 and response.json()["message"].startswith(expected), (name,
                                                                                                     response.text)
            response = httpx.get(s.daemon.url + "/events", params={"subject": "news", "token": signed})
            assert response.status_code == 401 and response.json()["message"].startswith(expected), (name,
                                                                                                     response.text)
        # A WebSocket with a refused token is refused before the upgrade.
        try:
            connect(s.daemon.ws_url + f"?token={cases['expired'][0]}", open_timeout=5)
            raise AssertionError("a WebSocket opened with an expired token")
        except InvalidStatus as error:
            assert error.response.status_code == 401, error.response.status_code

    # Refresh and expiry.

    def test_refresh_before_expiry_keeps_the_connection_with_the_new_rights(self, s):
        client = tcp(s, token(s, lifetime=2, runnel={"subscribe": [">"], "publish": [">"]}))
        assert client.request({"op": "sub", "subject": "chat.a", "sid": "a"})["ok"]
        assert client.request({"op": "sub", "subject": "other.x", "sid": "o"})["ok"]
        client.send({"op": "auth", "token": token(s, lifetime=60), "ref": "refresh"})
        lines = [client.line(), client.line()]
        assert {"ev": "error", "sid": "o", "code": "unauthorized",
                "message": "token may no longer subscribe to other.x (the connection authenticated again)"} in lines, lines
        assert {"ok": True, "ref": "refresh"} in lines, lines
        # Past the first token's expiry (and the sweep's second), the connection is still served.
        time.sleep(3.2)
        client.send({"op": "pub", "subject": "chat.a", "value": 7, "ref": 1})
        assert [client.line(), client.line()] == [{"ev": "next", "sid": "a", "value": 7},
                                                  {"ok": True, "ref": 1, "receivers": 1}]
        assert client.request({"op": "pub", "subject": "news", "value": 1})["code"] == "unauthorized"
        client.close()

    def test_expiry_closes_every_transport(self, s):
        short = token(s, lifetime=2)
        line = tcp(s, short)
        assert line.request({"op": "sub", "subject": "chat.t", "sid": "t"})["ok"]
        with connect(s.daemon.ws_url + f"?token={short}", open_timeout=5) as socket, \
                connect(s.daemon.ws_url, open_timeout=5) as late:
            socket.send(json.dumps({"op": "ping", "ref": 1}))
            assert json.loads(socket.recv(timeout=5)) == {"ok": True, "ref": 1}
            # This one authenticates with `auth` on the WebSocket itself.
            late.send(json.dumps({"op": "auth", "token": short, "ref": 1}))
            assert json.loads(late.recv(timeout=5)) == {"ok": True, "ref": 1}
            stream = EventStream(s.daemon, {"subject": "news", "token": short})
            assert stream.response.status_code == 200, stream.response.status_code
            expect_closing(EXPIRED, line=line, websockets=[socket, late], stream=stream)
        # The log is read from runneld's output by a thread of the harness: it may come a moment later.
        poll_until(lambda: s.daemon.log,
                   lambda log: any("token expired" in entry and "alice" in entry for entry in log),
                   "the expiry logged")

    # Reloads: key rotation, a broken key file.

    def test_sighup_rereads_a_rotated_key_file(self, s):
        old_token = token(s, "RS256")
        old = tcp(s, old_token)
        kept = tcp(s, token(s, "ES256"))
        rotated = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        Keys.write(s.keys.rsa_pem, public_pem(rotated))
        reload(s, "configuration reloaded: jwt_public_keys")
        expect_closing({"ev": "closing", "code": "unauthorized", "message":
                        "the token no longer verifies (configuration reloaded): JWT signature does not verify"}, line=old)
        assert kept.request({"op": "ping"}) == {"ok": True, "ref": 1}
        assert auth_error(s, old_token) == "JWT signature does not verify"
        tcp(s, token(s, "RS256", key=rotated)).close()
        s.keys.rsa = rotated
        kept.close()

    def test_a_broken_key_file_on_reload_keeps_the_running_keys(self, s):
        client = tcp(s, token(s, "RS256"))
        with open(s.keys.rsa_pem, "rb") as file:
            good = file.read()
        Keys.write(s.keys.rsa_pem, b"not a key")
        try:
            reload(s, "reload failed, keeping the running configuration")
            assert any("jwt_public_keys[0]" in entry for entry in s.daemon.log[-3:]), s.daemon.log[-3:]
            assert client.request({"op": "ping"}) == {"ok": True, "ref": 1}
            tcp(s, token(s, "RS256")).close()
        finally:
            Keys.write(s.keys.rsa_pem, good)
        client.close()

    def test_bad_key_settings_are_config_errors(self, s):
        directory = s.keys.directory
        Keys.write(os.path.join(directory, "bad.pem"), b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
        Keys.write(os.path.join(directory, "bad.jwks"), json.dumps({"keys": [{"kty": "oct", "k": "AAAA"}]}).encode())
        small = rsa.generate_private_key(public_exponent=65537, key_size=1024)
        Keys.write(os.path.join(directory, "small.pem"), public_pem(small))
        cases = [
            ('jwt_secrets = ["short"]', "key 'jwt_secrets[0]': an HS256 secret must be at least 32 bytes"),
            (f'jwt_public_keys = ["{directory}/missing.pem"]', "key 'jwt_public_keys[0]':"),
            (f'jwt_public_keys = ["{directory}/bad.pem"]', "key 'jwt_public_keys[0]':"),
            (f'jwt_public_keys = ["{directory}/small.pem"]', "an RSA key must have at least 2048 bits"),
            (f'jwt_jwks_file = "{directory}/bad.jwks"', "key 'jwt_jwks_file':"),
            ('jwt_leeway = -1', "key 'jwt_leeway': must be an integer between 0 and 3600"),
        ]
        binary = s.daemon.process.args[0]
        for toml, expected in cases:
            result = check_config(binary, toml)
            assert result.returncode == 2 and expected in result.stderr, (toml, result.returncode, result.stderr)
        # The secret is never printed.
        result = check_config(binary, s.keys.config())
        assert result.returncode == 0 and SECRET not in result.stdout, result.stdout
        assert "jwt_secrets = [1 secret(s), hidden]" in result.stdout, result.stdout

    def test_clean_stop(self, s):
        assert_clean_stop(s.daemon)
