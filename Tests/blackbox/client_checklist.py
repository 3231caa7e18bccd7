"""What the client checklist suites (test_python_client.py, test_js_client.py) share: the configs
of the daemons their suites run against (docs/clients.md, "The behaviour checklist"). `main`: a
token, a token that a reload removes, a token of limited rights, TLS and HTTPS with a self-signed
certificate (conftest.py's `checklist_certificate` makes it); `restart`: durable subjects with
fsync "always", for a daemon killed and started again; `slow`: a small hard limit, so a reader
that stops is cut or dropped for at once; `expiry`: a JWT secret, for tokens that expire."""

import os
import tempfile

TOKEN = "client-token"
# The test certificate's directory, made and removed by conftest.py's `checklist_certificate`.
CERTS = os.path.join(tempfile.gettempdir(), f"runnel-client-certs-{os.getpid()}")


def certificate(name):
    return os.path.join(CERTS, name)


MAIN_CONFIG = f'''
auth_tokens = ["{TOKEN}", "revoked-token"]
tls_listen = "127.0.0.1:0"
https_listen = "127.0.0.1:0"
tls_cert_file = "{certificate('server.pem')}"
tls_key_file = "{certificate('server.key')}"

[[tokens]]
token = "limited-token"
publish = ["limited.>"]
'''


RESTART_CONFIG = f'''
auth_tokens = ["{TOKEN}"]
data_dir = "DATA_DIR"
fsync = "always"
'''

# `expiry`: JWTs signed with this secret (HS256), which expire.
JWT_SECRET = "client-checklist-secret-at-least-32-bytes"
# No leeway: a token expires when its `exp` says, so the checks wait seconds, not tens.
EXPIRY_CONFIG = f'''
jwt_secrets = ["{JWT_SECRET}"]
jwt_leeway = 0
'''

# The slow-consumer checks fill max_pending_bytes with repetitive values: compressed over a
# WebSocket (permessage-deflate, which Node and browsers offer) they would not fill it.
# A grace of 60 s: a conflating reader that reads nothing while 20 MB are published is not
# cut for it, however slow the server (a thread-sanitizer build takes over 10 s, the default);
# the other checks meet the hard limit, which the soft one equals here.
SLOW_CONFIG = f'''
auth_tokens = ["{TOKEN}"]
max_pending_bytes = 262144
soft_pending_seconds = 60
slow_consumer = "disconnect"
compression = false
'''

