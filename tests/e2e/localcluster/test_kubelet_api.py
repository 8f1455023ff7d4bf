"""`kubectl logs`, `exec` and `attach` against pods that really run, through kube-apiserver: kubectl
asks kube-apiserver, which calls the node agent's kubelet API (logs as a streamed body, exec and
attach over SPDY/3.1), which reads the container's output files or runs the command inside the
container's namespaces and root. Bad requests get a clear error and the agent keeps serving.
Every wait is bounded."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import os
import pty
import re
import select
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.running import LocalCluster, running_cluster, tools_env
from localcluster.simulator.runtime import runtime_available
from localcluster.tools import tool_path
from tests.support import polling

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(runtime_available() is not None, reason=str(runtime_available())),
]

WAIT = 60.0

# The programs below run in pods' containers: their sleeps keep a container up or pace its output.
# Prints five lines, then stays up.
PRINTER = """
import time
for number in range(1, 6):
    print("line", number, flush=True)
while True:
    time.sleep(1)
"""

# Says it is up, then stays up.
SIDECAR = """
import time
print("side up", flush=True)
while True:
    time.sleep(1)
"""

# Prints a numbered tick every 0.3 s, for ever.
TICKER = """
import itertools, time
for number in itertools.count():
    print("tick", number, flush=True)
    time.sleep(0.3)
"""

# The first run exits 1; the restarted one (the emptyDir outlives the run) stays up.
RESTARTER = """
import os, sys, time
path = "/data/runs"
runs = (int(open(path).read()) if os.path.exists(path) else 0) + 1
open(path, "w").write(str(runs))
print("run", runs, flush=True)
if runs == 1:
    sys.exit(1)
while True:
    time.sleep(1)
"""

# Ticks until told to stop (a file exec creates), then says goodbye and exits 0.
STOPPABLE = """
import itertools, os, time
for number in itertools.count():
    if os.path.exists("/tmp/stop"):
        break
    print("tick", number, flush=True)
    time.sleep(0.3)
print("bye", flush=True)
"""

# Reads one typed line on its terminal, then reports the terminal's size.
TERMINAL_SCRIPT = "tty; echo ready; read line; echo got $line; stty size; exit 4"

# Says it is up, then stays up.
SLEEPER = "import time; print('deployment pod up', flush=True); time.sleep(100000)"

TICK = re.compile(r"^tick (\d+)$", re.MULTILINE)
# kubelet's timestamp: RFC 3339 in UTC (nanoseconds), a space, then the line.
STAMPED = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d{1,9})?Z (line \d)$")


def python_container(name: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "python:3", "command": ["python", "-c", script], **extra}


def pod_manifest(name: str, *containers: dict[str, Any], **spec: Any) -> str:
    document = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": list(containers), **spec},
    }
    return yaml.safe_dump(document)


wait_for = functools.partial(polling.wait_until, timeout=WAIT)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    extra = ["--bare", "--run-image", "python=python"]
    with running_cluster(
        tmp_path_factory.mktemp("kubelet-api"), webhook=False, extra_args=extra
    ) as local:
        # ServiceAccount admission refuses pods until the namespace's default account exists.
        wait_for(
            "the default ServiceAccount",
            lambda: local.kubectl("get", "serviceaccount", "default", check=False).returncode == 0,
        )
        yield local


def create_ready(cluster: LocalCluster, name: str, manifest: str) -> None:
    cluster.kubectl("create", "-f", "-", input=manifest)
    cluster.kubectl("wait", "--for=condition=Ready", f"pod/{name}", f"--timeout={int(WAIT)}s")


@pytest.fixture(scope="module")
def printer(cluster: LocalCluster) -> str:
    """A pod of two containers: `main` prints five lines, `side` has an environment of its own."""
    manifest = pod_manifest(
        "printer",
        python_container("main", PRINTER),
        python_container("side", SIDECAR, env=[{"name": "GREETING", "value": "hello-side"}]),
    )
    create_ready(cluster, "printer", manifest)
    wait_for(
        "printer's five lines",
        lambda: cluster.kubectl("logs", "printer", "-c", "main").stdout.count("\n") == 5,
    )
    return "printer"


@pytest.fixture(scope="module")
def ticker(cluster: LocalCluster) -> str:
    """A pod that prints a numbered tick every 0.3 s, once it has printed its first."""
    create_ready(cluster, "ticker", pod_manifest("ticker", python_container("main", TICKER)))
    # Ready comes with the process started, not with its first line written.
    wait_for(
        "ticker's first tick",
        lambda: TICK.search(cluster.kubectl("logs", "ticker", check=False).stdout) is not None,
    )
    return "ticker"


@pytest.fixture(scope="module")
def simulated(cluster: LocalCluster) -> str:
    # busybox is not mapped by --run-image: the agent only plays this pod.
    manifest = pod_manifest("sim", {"name": "main", "image": "busybox:1"})
    create_ready(cluster, "sim", manifest)
    return "sim"


# -- kubectl running on: logs -f and attach -----------------------------------------------------


@dataclass
class Running:
    """A kubectl that runs until stopped, and the lines it printed so far (stdout and stderr)."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    def ticks(self) -> list[int]:
        return [int(m.group(1)) for line in list(self.lines) if (m := TICK.match(line.rstrip()))]

    def output(self) -> str:
        return "".join(self.lines)


@contextlib.contextmanager
def kubectl_running(cluster: LocalCluster, *args: str) -> Iterator[Running]:
    kubectl = tool_path("kubectl")
    assert kubectl is not None
    process = subprocess.Popen(
        [str(kubectl), "--kubeconfig", str(cluster.kubeconfig), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=tools_env(),
    )
    running = Running(process)

    def collect() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            running.lines.append(line)

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    try:
        yield running
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        reader.join(5)


def wait_ticks(running: Running, what: str, done: Callable[[list[int]], bool]) -> list[int]:
    """The ticks once `done` holds for them, while kubectl still runs."""

    def ticks() -> list[int]:
        assert running.process.poll() is None, "kubectl exited"
        return running.ticks()

    try:
        found: list[int] = polling.wait_for(ticks, done, what, WAIT, interval=0.1)
    except AssertionError as failed:
        raise AssertionError(f"{failed}\n{running.output()}") from None
    return found


def consecutive(numbers: list[int]) -> bool:
    return numbers == list(range(numbers[0], numbers[0] + len(numbers)))


def kubectl_over_spdy(
    cluster: LocalCluster, *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """kubectl speaking SPDY to kube-apiserver, which then passes the upgraded connection through
    to the kubelet API as it is (instead of translating WebSocket streams)."""
    kubectl = tool_path("kubectl")
    assert kubectl is not None
    env = {**tools_env(), "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}
    return subprocess.run(
        [str(kubectl), "--kubeconfig", str(cluster.kubeconfig), *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=WAIT,
        env=env,
        check=False,
    )


@dataclass
class TerminalSession:
    output: bytes
    returncode: int


def kubectl_in_terminal(
    cluster: LocalCluster, args: list[str], prompt: bytes, typed: bytes, rows: int, cols: int
) -> TerminalSession:
    """kubectl on a pseudo-terminal of `rows` x `cols`: once `prompt` shows, `typed` is typed."""
    kubectl = tool_path("kubectl")
    assert kubectl is not None
    screen, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    process = subprocess.Popen(
        [str(kubectl), "--kubeconfig", str(cluster.kubeconfig), *args],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=tools_env(),
        start_new_session=True,
    )
    os.close(terminal)
    output = b""
    deadline = time.monotonic() + WAIT
    try:
        while time.monotonic() < deadline:
            if typed and prompt in output:
                os.write(screen, typed)
                typed = b""
            readable, _, _ = select.select([screen], [], [], 0.1)
            if readable:
                try:
                    chunk = os.read(screen, 4096)
                except OSError:  # EIO: kubectl exited and closed the terminal
                    chunk = b""
                output += chunk
                if chunk:
                    continue
            if process.poll() is not None:
                break
        else:
            raise AssertionError(f"kubectl in a terminal did not finish: {output!r}")
        return TerminalSession(output, process.wait(5))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)
        os.close(screen)


# -- exec ----------------------------------------------------------------------------------------


def test_exec_prints_the_commands_output(cluster: LocalCluster, printer: str) -> None:
    result = cluster.kubectl("exec", printer, "--", "echo", "hi")
    assert result.stdout == "hi\n"


def test_exec_passes_a_non_zero_exit_code_on(cluster: LocalCluster, printer: str) -> None:
    result = cluster.kubectl(
        "exec", printer, "--", "sh", "-c", "echo oops >&2; exit 3", check=False
    )
    assert result.returncode == 3
    assert "oops\n" in result.stderr
    assert "command terminated with exit code 3" in result.stderr


def test_exec_copies_stdin_to_the_command(cluster: LocalCluster, printer: str) -> None:
    typed = "first line\nsecond line\n" + "x" * 200_000 + "\n"
    result = cluster.kubectl("exec", "-i", printer, "--", "cat", input=typed)
    assert result.stdout == typed


def test_exec_runs_in_the_named_container_with_its_environment(
    cluster: LocalCluster, printer: str
) -> None:
    side = cluster.kubectl("exec", printer, "-c", "side", "--", "env").stdout.splitlines()
    assert "GREETING=hello-side" in side
    assert "HOSTNAME=printer" in side
    main = cluster.kubectl("exec", printer, "-c", "main", "--", "env").stdout.splitlines()
    assert not any(line.startswith("GREETING=") for line in main), main


def test_exec_runs_inside_the_pods_namespaces_and_root(cluster: LocalCluster, printer: str) -> None:
    assert cluster.kubectl("exec", printer, "--", "hostname").stdout == "printer\n"
    tokens = "/var/run/secrets/kubernetes.io/serviceaccount"
    listed = cluster.kubectl("exec", printer, "--", "ls", tokens).stdout.split()
    assert sorted(listed) == ["ca.crt", "namespace", "token"]
    namespace = cluster.kubectl("exec", printer, "--", "cat", f"{tokens}/namespace").stdout
    assert namespace == "default"


def test_exec_of_a_command_that_does_not_exist_fails_clearly(
    cluster: LocalCluster, printer: str
) -> None:
    result = cluster.kubectl("exec", printer, "--", "no-such-command", check=False)
    assert result.returncode != 0
    assert "no-such-command: No such file or directory" in result.stderr, result.stderr
    assert "command terminated with exit code" in result.stderr


def test_exec_with_a_terminal(cluster: LocalCluster, printer: str) -> None:
    args = ["exec", "-it", printer, "-c", "main", "--", "sh", "-c", TERMINAL_SCRIPT]
    session = kubectl_in_terminal(cluster, args, b"ready", b"hello\r", rows=30, cols=100)
    text = session.output.decode(errors="replace")
    assert session.returncode == 4, text
    assert "/dev/pts/" in text  # the command's stdin is a terminal
    assert "got hello\r\n" in text  # what was typed on kubectl's terminal reached it
    assert "30 100\r\n" in text  # kubectl's terminal size, sent on the resize stream
    assert "command terminated with exit code 4" in text


def test_exec_when_kube_apiserver_passes_spdy_through(cluster: LocalCluster, printer: str) -> None:
    typed = "over spdy\n" * 1000
    echoed = kubectl_over_spdy(
        cluster, "exec", "-i", printer, "-c", "main", "--", "cat", input=typed
    )
    assert (echoed.returncode, echoed.stdout) == (0, typed), echoed.stderr
    failed = kubectl_over_spdy(cluster, "exec", printer, "-c", "main", "--", "sh", "-c", "exit 5")
    assert failed.returncode == 5
    assert "command terminated with exit code 5" in failed.stderr


def test_kubectl_cp_both_ways(cluster: LocalCluster, printer: str, tmp_path: Path) -> None:
    # kubectl cp runs tar in the container through exec, with the archive on stdin or stdout.
    sent = tmp_path / "sent.txt"
    sent.write_text("".join(f"row {n}\n" for n in range(20_000)))
    cluster.kubectl("cp", str(sent), f"{printer}:/tmp/copied.txt", "-c", "main")
    inside = cluster.kubectl("exec", printer, "-c", "main", "--", "cat", "/tmp/copied.txt")
    assert inside.stdout == sent.read_text()
    back = tmp_path / "back.txt"
    cluster.kubectl("cp", f"{printer}:/tmp/copied.txt", str(back), "-c", "main")
    assert back.read_bytes() == sent.read_bytes()


# -- logs ----------------------------------------------------------------------------------------


def test_logs_of_a_container_with_tail_and_limit(cluster: LocalCluster, printer: str) -> None:
    lines = "".join(f"line {n}\n" for n in range(1, 6))
    assert cluster.kubectl("logs", printer).stdout == lines  # the default container: main
    assert cluster.kubectl("logs", printer, "-c", "main").stdout == lines
    assert cluster.kubectl("logs", printer, "-c", "side").stdout == "side up\n"
    assert cluster.kubectl("logs", printer, "--tail", "1").stdout == "line 5\n"
    assert cluster.kubectl("logs", printer, "--tail", "2").stdout == "line 4\nline 5\n"
    assert cluster.kubectl("logs", printer, "--limit-bytes", "8").stdout == "line 1\nl"


def test_logs_with_timestamps(cluster: LocalCluster, printer: str) -> None:
    created = dt.datetime.fromisoformat(
        cluster.kubectl(
            "get", "pod", printer, "-o", "jsonpath={.metadata.creationTimestamp}"
        ).stdout.replace("Z", "+00:00")
    )
    stamped = cluster.kubectl("logs", printer, "--timestamps").stdout.splitlines()
    assert len(stamped) == 5, stamped
    for number, line in enumerate(stamped, start=1):
        match = STAMPED.match(line)
        assert match is not None, line
        assert match.group(3) == f"line {number}"
        at = dt.datetime.fromisoformat(match.group(1)).replace(tzinfo=dt.UTC)
        # Second precision: creationTimestamp has none finer.
        assert created - dt.timedelta(seconds=1) <= at <= dt.datetime.now(dt.UTC), line


def test_logs_previous_after_a_restart(cluster: LocalCluster) -> None:
    container = python_container(
        "main", RESTARTER, volumeMounts=[{"name": "data", "mountPath": "/data"}]
    )
    manifest = pod_manifest("restarter", container, volumes=[{"name": "data", "emptyDir": {}}])
    cluster.kubectl("create", "-f", "-", input=manifest)
    wait_for(
        "the restarted run's output",
        lambda: cluster.kubectl("logs", "restarter", check=False).stdout == "run 2\n",
    )
    assert cluster.kubectl("logs", "restarter", "--previous").stdout == "run 1\n"
    assert cluster.kubectl("logs", "restarter", "-p", "--timestamps").stdout.endswith(" run 1\n")


def test_logs_follow_streams_lines_as_they_are_printed(cluster: LocalCluster, ticker: str) -> None:
    with kubectl_running(cluster, "logs", "-f", ticker) as running:
        first = wait_ticks(running, "a first line", bool)
        later = wait_ticks(running, "later lines", lambda ticks: ticks[-1] >= first[-1] + 3)
        assert running.process.poll() is None, running.output()
    # What was written before, then what followed: every line once, in order.
    assert later[0] == 0
    assert consecutive(later), later


def test_logs_follow_with_tail_starts_at_the_last_lines(cluster: LocalCluster, ticker: str) -> None:
    """`kubectl logs -f --tail N`, as kubelet answers it: the last N lines written so far, then
    the lines that follow, each once."""

    def last_tick() -> int:
        (tick,) = [
            int(m.group(1))
            for m in TICK.finditer(cluster.kubectl("logs", ticker, "--tail", "1").stdout)
        ]
        return tick

    wait_for("five ticks written", lambda: last_tick() >= 5)
    already = last_tick()
    with kubectl_running(cluster, "logs", "-f", "--tail", "2", ticker) as running:
        ticks = wait_ticks(running, "the last lines, then more", lambda ticks: len(ticks) >= 5)
    assert ticks[0] >= already - 1, ticks  # nothing from before the tail
    assert consecutive(ticks), ticks


def test_logs_follow_with_tail_of_a_quiet_container(cluster: LocalCluster, printer: str) -> None:
    """The tail comes at once even when nothing follows it, and kubectl keeps following."""
    with kubectl_running(cluster, "logs", "-f", "--tail", "2", printer, "-c", "main") as running:
        wait_for("the last two lines", lambda: running.output() == "line 4\nline 5\n")
        assert running.process.poll() is None, running.output()


def test_logs_of_a_deployment(cluster: LocalCluster) -> None:
    cluster.kubectl(
        "create", "deployment", "echoer", "--image=python:3", "--", "python", "-c", SLEEPER
    )
    wait_for(
        "the Deployment's pod's output",
        lambda: (
            cluster.kubectl("logs", "deploy/echoer", check=False).stdout == "deployment pod up\n"
        ),
    )
    pods = cluster.kubectl("get", "pods", "-l", "app=echoer", "-o", "name").stdout.split()
    assert len(pods) == 1, pods
    assert cluster.kubectl("logs", pods[0]).stdout == "deployment pod up\n"


# -- attach --------------------------------------------------------------------------------------


def test_attach_shows_the_output_that_follows(cluster: LocalCluster, ticker: str) -> None:
    before = [int(m.group(1)) for m in TICK.finditer(cluster.kubectl("logs", ticker).stdout)]
    assert before, "the ticker printed nothing yet"
    with kubectl_running(cluster, "attach", ticker) as running:
        seen = wait_ticks(running, "three ticks", lambda ticks: len(ticks) >= 3)
        assert running.process.poll() is None, running.output()
    assert seen[0] > before[-1], (before[-1], seen)  # nothing written before attaching
    assert consecutive(seen), seen


def test_attach_and_follow_end_with_the_containers_run(cluster: LocalCluster) -> None:
    manifest = pod_manifest("stoppable", python_container("main", STOPPABLE), restartPolicy="Never")
    create_ready(cluster, "stoppable", manifest)
    with kubectl_running(cluster, "attach", "stoppable") as running:
        wait_ticks(running, "a tick", bool)
        cluster.kubectl("exec", "stoppable", "--", "touch", "/tmp/stop")
        assert running.process.wait(WAIT) == 0, running.output()
    seen = running.ticks()
    assert consecutive(seen), seen
    assert running.output().endswith(f"tick {seen[-1]}\nbye\n"), running.output()
    followed = cluster.kubectl("logs", "-f", "stoppable", "--request-timeout", "20s").stdout
    ticks = [int(m.group(1)) for m in TICK.finditer(followed)]
    assert ticks[0] == 0 and consecutive(ticks), followed
    assert followed.endswith("\nbye\n"), followed


# -- bad requests --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("logs", "printer", "-c", "nope"), "container nope is not valid for pod printer"),
        (("exec", "printer", "-c", "nope", "--", "true"), "container nope is not valid for pod"),
        (("logs", "ghost"), 'pods "ghost" not found'),
        (("exec", "ghost", "--", "true"), 'pods "ghost" not found'),
        (("attach", "ghost"), 'pods "ghost" not found'),
        (("logs", "sim"), "pod default/sim is simulated"),
        (("exec", "sim", "--", "true"), "pod default/sim is simulated"),
        (("attach", "sim"), "pod default/sim is simulated"),
        (("logs", "printer", "--previous"), 'previous terminated container "main" in pod'),
        (("attach", "-i", "ticker"), "attach with stdin is not supported"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else None,
)
def test_a_bad_request_fails_clearly_and_the_agent_keeps_serving(
    cluster: LocalCluster,
    printer: str,
    ticker: str,
    simulated: str,
    args: tuple[str, ...],
    says: str,
) -> None:
    result = cluster.kubectl(*args, check=False)
    assert result.returncode != 0, result
    assert says in result.stderr, result.stderr
    assert cluster.kubectl("exec", printer, "--", "echo", "still serving").stdout == (
        "still serving\n"
    )
    assert cluster.kubectl("logs", printer, "--tail", "1").stdout == "line 5\n"
