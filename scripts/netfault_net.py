"""The network of scripts/netfault-harness.py: Linux network namespaces joined by veth links, and
the faults it puts on them. Not run on its own; as root, with `ip` (iproute2) and `nft`.

    netfault-PID-nats    nats-server, listening on every address (4222, monitor 8222)
    netfault-PID-a       node a: its loopback (the node's clients) and `to-nats` 10.45.1.2/24
    netfault-PID-b       node b: ... 10.45.2.2/24
    netfault-PID-c       node c: ... 10.45.3.2/24

Each node's namespace is linked to the NATS one by a veth pair (`to-nats` in the node's,
`to-a`/`to-b`/`to-c` at 10.45.N.1/24 in NATS's); nodes reach each other only through NATS, as the
cluster does. The harness's clients reach a node on its own loopback: a thread enters the
namespace (setns) to make a socket, which stays in that namespace wherever it is used, so the
client side never crosses a faulty link. PID is the harness's: a namespace whose harness is gone
is stale and removed (with whatever still runs in it) by the next harness.

Faults: a partition is a link set down (the node's end or NATS's end); loss is an nft rule in the
node's namespace dropping a share of the packets that cross `to-nats`, both ways
(`numgen random mod 100 < P`), with counters to show it did; delay is the harness's user-space
proxy (scripts/netfault_proxy.py), since this kernel has no netem. Every namespace (and with it
its links and rules) is deleted by `Network.remove`, also when the harness fails; a harness killed
outright leaves them, and its work directory TMPDIR/netfault-PID-..., to the next one.
"""

import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading

CLONE_NEWNET = 0x40000000
PREFIX = "netfault-"
_libc = ctypes.CDLL(None, use_errno=True)


def run(*command, check=True):
    """Runs a command (an `ip` or `nft` call), raising with its stderr when it fails."""
    result = subprocess.run(command, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: status {result.returncode}: {result.stderr.strip()}")
    return result


def ensure_tools():
    """Installs what is missing (`ip` from iproute2, `nft` from nftables), as .ci/run does for nc."""
    missing = [package for tool, package in (("ip", "iproute2"), ("nft", "nftables")) if shutil.which(tool) is None]
    if missing:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, env=env)


def in_namespace(namespace, function):
    """`function()` run on a thread of its own inside `namespace`: the sockets it makes belong to
    that namespace. Returns its result, or raises what it raised."""
    outcome = {}

    def body():
        try:
            descriptor = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
            try:
                if _libc.setns(descriptor, CLONE_NEWNET) != 0:
                    error = ctypes.get_errno()
                    raise OSError(error, f"setns into {namespace}: {os.strerror(error)}")
            finally:
                os.close(descriptor)
            outcome["value"] = function()
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            outcome["error"] = error

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def remove_namespace(namespace):
    """Kills (SIGKILL, by pid) whatever runs in `namespace`, then deletes it."""
    pids = run("ip", "netns", "pids", namespace, check=False).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    run("ip", "netns", "del", namespace, check=False)


def remove_stale():
    """Removes the namespaces, and the work directories (TMPDIR/netfault-PID-*), of harnesses that
    are gone; returns their names."""
    removed = []
    namespaces = [line.split()[0] for line in run("ip", "netns", "list").stdout.splitlines() if line.split()]
    directories = [os.path.join(tempfile.gettempdir(), name) for name in os.listdir(tempfile.gettempdir())]
    for name in namespaces + directories:
        match = re.fullmatch(PREFIX + r"(\d+)-.+", os.path.basename(name))
        if not match or alive(int(match.group(1))):
            continue
        if name in namespaces:
            remove_namespace(name)
        else:
            shutil.rmtree(name, ignore_errors=True)
        removed.append(name)
    return removed


def alive(pid):
    """Whether process `pid` is a harness."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"netfault" in cmdline.read()
    except OSError:
        return False


class Network:
    """The namespaces and links of one harness (see the module's docstring)."""

    NATS_PORT = 4222
    MONITOR_PORT = 8222

    def __init__(self, nodes):
        self.nodes = list(nodes)
        self.tag = f"{PREFIX}{os.getpid()}"
        self.nats = f"{self.tag}-nats"
        self.made = []
        self.lossy = set()

    def namespace(self, node):
        return f"{self.tag}-{node}"

    def nats_address(self, node):
        """The address NATS has on `node`'s link (what the node connects to)."""
        return f"10.45.{self.nodes.index(node) + 1}.1"

    def make(self):
        for namespace in [self.nats] + [self.namespace(n) for n in self.nodes]:
            run("ip", "netns", "add", namespace)
            self.made.append(namespace)
            run("ip", "-n", namespace, "link", "set", "lo", "up")
        for index, node in enumerate(self.nodes, start=1):
            inside = self.namespace(node)
            run("ip", "-n", inside, "link", "add", "to-nats", "type", "veth", "peer", "name", f"to-{node}",
                "netns", self.nats)
            run("ip", "-n", inside, "addr", "add", f"10.45.{index}.2/24", "dev", "to-nats")
            run("ip", "-n", self.nats, "addr", "add", f"10.45.{index}.1/24", "dev", f"to-{node}")
            self.set_link(node, True, side="node")
            self.set_link(node, True, side="nats")

    def remove(self):
        for namespace in reversed(self.made):
            remove_namespace(namespace)
        self.made = []

    def exec_prefix(self, namespace):
        return ["ip", "netns", "exec", namespace]

    # --- faults ----------------------------------------------------------------------------

    def set_link(self, node, up, side="node"):
        """`node`'s link to NATS up or down, at the node's end (`side="node"`) or NATS's."""
        if side == "node":
            run("ip", "-n", self.namespace(node), "link", "set", "to-nats", "up" if up else "down")
        else:
            run("ip", "-n", self.nats, "link", "set", f"to-{node}", "up" if up else "down")

    def start_loss(self, node, percent):
        """Drops `percent` % of the packets crossing `node`'s link to NATS, either way."""
        namespace = self.namespace(node)
        rules = (f"table inet netfault {{\n"
                 f"  chain in {{ type filter hook input priority 0; iifname \"to-nats\" "
                 f"numgen random mod 100 < {percent} counter drop; }}\n"
                 f"  chain out {{ type filter hook output priority 0; oifname \"to-nats\" "
                 f"numgen random mod 100 < {percent} counter drop; }}\n}}\n")
        subprocess.run(self.exec_prefix(namespace) + ["nft", "-f", "-"], input=rules, text=True, check=True,
                       capture_output=True)
        self.lossy.add(node)

    def loss_counts(self, node):
        """(packets dropped coming in, going out) by `node`'s loss rules."""
        listing = run(*self.exec_prefix(self.namespace(node)), "nft", "list", "table", "inet", "netfault").stdout
        counts = [int(n) for n in re.findall(r"counter packets (\d+)", listing)]
        return tuple(counts[:2]) if len(counts) >= 2 else (0, 0)

    def stop_loss(self, node):
        run(*self.exec_prefix(self.namespace(node)), "nft", "delete", "table", "inet", "netfault", check=False)
        self.lossy.discard(node)

    def heal_all(self):
        """Every link up and every loss rule gone (a round's end, also after a failure)."""
        for node in self.nodes:
            for side in ("node", "nats"):
                self.set_link(node, True, side=side)
            if node in self.lossy:
                self.stop_loss(node)
