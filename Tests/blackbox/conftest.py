"""The black-box suites' shared fixtures and options (pytest), over runneld_process.py, the one way
the Python tests start runneld.

A suite is a test class whose checks share what its fixtures start, in order: most share one
daemon, `d`, started on the class's `@pytest.mark.daemon(CONFIG, **options)` (options as
`Daemon` takes them: `loops=4`, `http=False`...) before its first check, and stopped by its last,
`test_clean_stop`, which fails unless runneld exits with status 0. A class whose daemon is started
otherwise (certificates first, a folder of files...) defines its own `d` from `runneld`, the
fixture that starts daemons and stops, at the end of the class, each one still running.

Options (beside pytest's own):
  --runneld PATH       the daemon under test (default .build/debug/runneld)
  --loops N            the event loops every daemon gets (default $RUNNEL_TEST_LOOPS, else 1)
  --results FILE       one JSON line per check: {"name", "ok", "seconds", "output"} (read by
                       Tests/RunneldTests/Support/PythonScript.swift, which runs a suite file as
                       one test case per check)
  --stop-after SECONDS stop the run after this long, its daemons too (so does SIGTERM)
  --screenshots DIR    test_dashboard.py: also save the dashboard's screenshots in DIR
  --perf               test_dashboard.py: also measure the page's CPU at 1,000 values/s

    python3 -m pytest Tests/blackbox --runneld .build/debug/runneld
    python3 -m pytest Tests/blackbox/test_http.py -k auth
"""

import json
import os
import shutil
import signal

import pytest

import runneld_process
from client_checklist import CERTS
from nats_process import NatsServer
from runneld_process import Daemon, self_signed_certificate


def pytest_addoption(parser):
    group = parser.getgroup("runneld", "the black-box suites")
    group.addoption("--runneld", default=".build/debug/runneld", metavar="PATH", help="the runneld binary under test")
    group.addoption("--loops", default=runneld_process.TEST_LOOPS, metavar="N",
                    help="the event loops of every runneld started (default: $RUNNEL_TEST_LOOPS, else 1)")
    group.addoption("--results", metavar="FILE", help="write each check's result as a JSON line")
    group.addoption("--stop-after", type=int, metavar="SECONDS", help="stop after this long, the daemons too")
    group.addoption("--screenshots", metavar="DIR", help="test_dashboard.py: save the dashboard's screenshots in DIR")
    group.addoption("--perf", action="store_true", help="test_dashboard.py: measure the page's CPU at 1,000 values/s")


def pytest_configure(config):
    runneld_process.TEST_LOOPS = str(config.getoption("loops"))
    if config.getoption("results"):
        config.pluginmanager.register(ResultsFile(config.getoption("results")), "runneld-results")
    # Stopped from outside, or past --stop-after: pytest unwinds, and the fixtures stop the daemons.
    signal.signal(signal.SIGTERM, lambda number, frame: pytest.exit("stopped by SIGTERM", 128 + number))
    seconds = config.getoption("stop_after")
    if seconds:
        signal.signal(signal.SIGALRM, lambda number, frame: pytest.exit(f"stopped after {seconds} s", 1))
        signal.alarm(seconds)


def pytest_report_header(config):
    return f"runneld: {config.getoption('runneld')}, {runneld_process.TEST_LOOPS} loop(s)"


def pytest_collection_modifyitems(config, items):
    """The dashboard's screenshots and performance checks run only when asked for."""
    wanted = {"screenshots": config.getoption("screenshots"), "perf": config.getoption("perf")}
    deselected = [item for item in items
                  if any(item.get_closest_marker(name) and not given for name, given in wanted.items())]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item not in deselected]


# --- fixtures ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def binary(pytestconfig):
    """The runneld binary under test (`--runneld`), as an absolute path."""
    return os.path.abspath(pytestconfig.getoption("runneld"))


@pytest.fixture(scope="class")
def runneld(binary):
    """Starts daemons for a suite: `runneld(config, **options)` is a `Daemon` on `config` (options as
    `Daemon` takes them); each one still running when the class ends is stopped then."""
    started = []

    def start(config="", **options):
        started.append(Daemon(binary, config, **options))
        return started[-1]

    yield start
    for daemon in started:
        if daemon.process.poll() is None:
            daemon.stop()


@pytest.fixture(scope="class")
def d(request, runneld):
    """The suite's daemon: one on the class's `@pytest.mark.daemon(CONFIG, **options)`, which its
    `test_clean_stop` stops."""
    marker = request.node.get_closest_marker("daemon")
    assert marker, f"{request.node.name} has no @pytest.mark.daemon(CONFIG) for its daemon"
    return runneld(*marker.args, **marker.kwargs)


@pytest.fixture(scope="class")
def nats():
    """A nats-server of the suite's own (nats_process.NatsServer: JetStream, free loopback ports),
    stopped and its store removed when the class ends."""
    with NatsServer() as server:
        yield server


@pytest.fixture(scope="session")
def checklist_certificate():
    """The client checklists' self-signed certificate for 127.0.0.1 (client_checklist.CERTS, its
    `main` daemon's TLS and HTTPS listeners), made once; removed after the run."""
    self_signed_certificate(CERTS)
    yield CERTS
    shutil.rmtree(CERTS, ignore_errors=True)


# --- reports ----------------------------------------------------------------------------------------


def _logs_of(value):
    """The last lines of the daemons behind a check's fixture value: a `Daemon`, something holding
    one as `daemon`, or something that tells its own (`logs()`, a cluster's)."""
    if isinstance(value, Daemon):
        return "\n".join(value.log[-20:])
    if isinstance(getattr(value, "daemon", None), Daemon):
        return "\n".join(value.daemon.log[-20:])
    logs = getattr(value, "logs", None)
    return logs() if callable(logs) else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed check's report carries the last lines of its daemons' logs."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.when == "call":
        for name, value in getattr(item, "funcargs", {}).items():
            logs = _logs_of(value)
            if logs:
                report.sections.append((f"runneld's last lines ({name})", logs))


class ResultsFile:
    """`--results FILE`: a line per check once it has run, set up and torn down: its node id as
    `--collect-only -q` lists it, whether every phase passed (a skip does not), the seconds they
    took, and, when it failed, what it printed, the failure and its daemons' last lines."""

    def __init__(self, path):
        self.file = open(path, "w")
        self.checks = {}

    def pytest_runtest_logreport(self, report):
        check = self.checks.setdefault(report.nodeid, {"ok": True, "seconds": 0.0, "output": []})
        check["seconds"] += report.duration
        if report.failed or report.skipped:
            check["ok"] = False
            check["output"] += [f"--- {title}\n{text}\n" for title, text in report.sections]
            check["output"].append(f"--- {report.when} {report.outcome}\n{report.longreprtext}\n")
        if report.when == "teardown":
            del self.checks[report.nodeid]
            self.file.write(json.dumps({"name": report.nodeid, "ok": check["ok"], "seconds": round(check["seconds"], 2),
                                        "output": "".join(check["output"])}) + "\n")
            self.file.flush()

    def pytest_unconfigure(self, config):
        self.file.close()
