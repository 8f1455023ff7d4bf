"""Run Volcano's own end-to-end suites (admission, jobp, jobseq, cronjob, vcctl; with its
scheduler also schedulingbase and schedulingaction) against vcjob.

    scripts/volcano-e2e --volcano-src DIR [--suite jobp --suite admission ...]

For each suite, from a Volcano source tree (a release archive or checkout, e.g. v1.14.4):

1. `go test -c` builds `test/e2e/<suite>` into a cache folder outside the checkout (rebuilt only
   when a Go file of the suite or of `test/e2e/util` is newer than the binary, or `--rebuild`);
2. `vcjob local up` starts a fresh cluster (webhook, controller, node agent with `--nodes` nodes),
   with `busybox` and `nginx` pods running their shell commands as real processes;
3. the Volcano CRDs the cluster lacks are created from the tree's `config/crd/*/bases`;
4. the suite runs with `KUBECONFIG` pointing at the cluster, writing a JUnit report;
5. a table of passed / failed / skipped specs per suite is printed, then each failed spec with
   the first line of its failure.

Specs whose pods need TensorFlow, PyTorch, MPI or Ray images (nothing a shell command can stand
in for) are skipped unless `--no-default-skip`. Needs Go (with access to Go's module proxy),
the local cluster's binaries (`make cluster`) and root for pods that really run. See
docs/volcano-e2e.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from localcluster import running
from localcluster.running import running_cluster

SUITES = ("admission", "jobp", "jobseq", "cronjob", "vcctl", "schedulingbase", "schedulingaction")
# The vcctl suite runs Volcano's own vcctl binary (--vcctl) against the cluster.
NEEDS_VCCTL = ("vcctl",)
# These test Volcano's scheduler itself: only with --volcano-scheduler.
NEEDS_VOLCANO_SCHEDULER = ("schedulingbase", "schedulingaction")
# Their binaries also link Kubernetes' own conformance specs (`[sig-node] Pods …`), which need a
# real kubelet and its images; Volcano's CI skips them the same way (hack/run-e2e-kind.sh).
KUBERNETES_SPECS = r"\[sig-.*\]"

# Volcano's scheduler as its e2e runs set it up: the configuration its CI installs, in the
# ConfigMap the suites rewrite to reconfigure it (kubelet would project it into the pod's file).
SCHEDULER_CONF = "installer/helm/chart/volcano/config/volcano-scheduler-ci.conf"
SCHEDULER_NAMESPACE = "volcano-system"
SCHEDULER_CONFIGMAP = "integration-scheduler-configmap"
SCHEDULER_CONF_KEY = "volcano-scheduler-ci.conf"

# Pods of these images run the container's command as a process on this machine; busybox's
# entrypoint is its shell, and an nginx container without a command serves until deleted.
RUN_IMAGES = ("busybox=sh", "nginx=sleep infinity")

# Specs whose workers need a framework image: no shell command stands in for them.
FRAMEWORK_IMAGE_SPECS = (
    "MPI E2E Test",
    "MPI Plugin E2E Test",
    "Pytorch Plugin E2E Test",
    "Ray Plugin E2E Test",
    "TensorFlow E2E Test",
    "TensorFlow Plugin E2E Test",
)

CRD_FOLDERS = ("config/crd/volcano/bases", "config/crd/jobflow/bases")


@dataclass
class SpecResult:
    name: str
    status: str
    message: str = ""


@dataclass
class SuiteResult:
    suite: str
    specs: list[SpecResult] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0

    def count(self, *statuses: str) -> int:
        return sum(1 for s in self.specs if s.status in statuses)


def volcano_version(src: Path) -> str:
    chart = src / "installer/helm/chart/volcano/Chart.yaml"
    try:
        return str(yaml.safe_load(chart.read_text())["appVersion"])
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        return "unknown"


def default_cache(src: Path) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "vcjob" / "volcano-e2e" / volcano_version(src)


def newest_source(src: Path, suite: str) -> float:
    folders = [src / "test/e2e" / suite, src / "test/e2e/util"]
    times = [p.stat().st_mtime for f in folders for p in f.rglob("*.go")]
    return max([*times, (src / "go.mod").stat().st_mtime])


def build_suite(src: Path, suite: str, cache: Path, rebuild: bool) -> Path:
    binary = cache / f"{suite}.test"
    if binary.exists() and not rebuild and binary.stat().st_mtime >= newest_source(src, suite):
        return binary
    cache.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # The tree is not a module checkout: resolve its requirements through the module proxy.
    env["GOFLAGS"] = " ".join(filter(None, [env.get("GOFLAGS", ""), "-mod=mod", "-buildvcs=false"]))
    print(f"building {suite} → {binary}", flush=True)
    subprocess.run(
        ["go", "test", "-c", "-o", str(binary), f"./test/e2e/{suite}"], cwd=src, env=env, check=True
    )
    return binary


def build_command(src: Path, cache: Path, command: str, sources: str, rebuild: bool) -> Path:
    """`vc-<command>` built from the tree's cmd/<command>, cached as the suites are: rebuilt when
    a Go file under `sources` (or go.mod) is newer."""
    binary = cache / f"vc-{command}"
    newest = max(
        [p.stat().st_mtime for p in (src / sources).rglob("*.go")]
        + [(src / "go.mod").stat().st_mtime]
    )
    if binary.exists() and not rebuild and binary.stat().st_mtime >= newest:
        return binary
    cache.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["GOFLAGS"] = " ".join(filter(None, [env.get("GOFLAGS", ""), "-mod=mod", "-buildvcs=false"]))
    print(f"building vc-{command} → {binary}", flush=True)
    subprocess.run(
        ["go", "build", "-o", str(binary), f"./cmd/{command}"], cwd=src, env=env, check=True
    )
    return binary


def build_scheduler(src: Path, cache: Path, rebuild: bool) -> Path:
    return build_command(src, cache, "scheduler", "pkg/scheduler", rebuild)


def scheduler_configmap(conf: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": SCHEDULER_CONFIGMAP, "namespace": SCHEDULER_NAMESPACE},
        "data": {SCHEDULER_CONF_KEY: conf},
    }


@dataclass(frozen=True)
class SchedulerPaths:
    """Where vc-scheduler's files go. It watches the whole folder of its configuration file and
    reloads on any write there, so that folder holds the configuration alone (as kubelet's
    ConfigMap mount does): with its own log beside it, every line it logged reloaded the
    configuration, which logged a line again."""

    conf_file: Path
    log: Path
    cache_dump_dir: Path
    plugins_dir: Path


def scheduler_paths(folder: Path) -> SchedulerPaths:
    return SchedulerPaths(
        conf_file=folder / "config" / SCHEDULER_CONF_KEY,
        log=folder / "vc-scheduler.log",
        cache_dump_dir=folder / "dump",
        plugins_dir=folder / "plugins",
    )


class VolcanoScheduler:
    """vc-scheduler against the cluster with the CI configuration; a thread copies the
    ConfigMap's configuration into the file the scheduler watches, as kubelet does for its pod."""

    def __init__(
        self, binary: Path, src: Path, kubectl: Sequence[str], kubeconfig: Path, folder: Path
    ):
        self._kubectl = list(kubectl)
        self._stop = threading.Event()
        paths = scheduler_paths(folder)
        for directory in (paths.conf_file.parent, paths.cache_dump_dir, paths.plugins_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.conf_file = paths.conf_file
        conf = (src / SCHEDULER_CONF).read_text()
        self.conf_file.write_text(conf)
        subprocess.run(
            [*self._kubectl, "create", "namespace", SCHEDULER_NAMESPACE], capture_output=True
        )
        subprocess.run(
            [*self._kubectl, "apply", "-f", "-"],
            input=json.dumps(scheduler_configmap(conf)),
            text=True,
            capture_output=True,
            check=True,
        )
        self.log = paths.log
        argv = [
            str(binary),
            f"--kubeconfig={kubeconfig}",
            f"--scheduler-conf={self.conf_file}",
            "--scheduler-name=volcano",
            "--schedule-period=1s",
            "--leader-elect=false",
            f"--listen-address=127.0.0.1:{running.free_port()}",
            f"--healthz-address=127.0.0.1:{running.free_port()}",
            f"--cache-dump-dir={paths.cache_dump_dir}",
            f"--plugins-dir={paths.plugins_dir}",
            "-v=3",
        ]
        with self.log.open("wb") as out:
            self._process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        self._sync = threading.Thread(target=self._follow_configmap, daemon=True)
        self._sync.start()

    def _follow_configmap(self) -> None:
        while not self._stop.wait(0.5):
            found = subprocess.run(
                [*self._kubectl, "get", "configmap", SCHEDULER_CONFIGMAP, "-n",
                 SCHEDULER_NAMESPACE, "-o", "json"],
                capture_output=True, text=True,
            )  # fmt: skip
            if found.returncode != 0:
                continue
            conf = (json.loads(found.stdout).get("data") or {}).get(SCHEDULER_CONF_KEY)
            if conf is not None and conf != self.conf_file.read_text():
                self.conf_file.write_text(conf)

    def stop(self) -> None:
        self._stop.set()
        self._process.terminate()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._sync.join(5)


def install_missing_crds(src: Path, kubectl: Sequence[str]) -> list[str]:
    """Create Volcano's CRDs that vcjob's cluster does not already serve; return their names."""
    present = set(
        subprocess.run(
            [*kubectl, "get", "crd", "-o", "name"], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    created = []
    for folder in CRD_FOLDERS:
        for path in sorted((src / folder).glob("*.yaml")):
            name = str(yaml.safe_load(path.read_text())["metadata"]["name"])
            if f"customresourcedefinition.apiextensions.k8s.io/{name}" in present:
                continue
            # Server-side: Volcano's CRDs are too large for the last-applied annotation.
            subprocess.run(
                [*kubectl, "apply", "--server-side", "-f", str(path)],
                stdout=subprocess.DEVNULL,
                check=True,
            )
            created.append(name)
    for name in created:
        subprocess.run(
            [*kubectl, "wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s"],
            capture_output=True,
            check=True,
        )
    return created


def parse_junit(report: Path) -> list[SpecResult]:
    """The specs of a Ginkgo JUnit report; suite-level nodes ([BeforeSuite] …) only when they
    did not pass, since a failure there is why every spec failed."""
    specs = []
    # The report is the one the suite binary just wrote here, not input from elsewhere.
    for case in ET.parse(report).getroot().iter("testcase"):  # noqa: S314
        name = case.get("name", "")
        status = case.get("status") or _status_from_children(case)
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        message = "" if problem is None else (problem.get("message") or problem.text or "")
        is_spec = name.startswith("[It]")
        if is_spec or status not in ("passed", "skipped"):
            specs.append(SpecResult(name.removeprefix("[It] "), status, message.strip()))
    return specs


def _status_from_children(case: ET.Element) -> str:
    if case.find("failure") is not None or case.find("error") is not None:
        return "failed"
    return "skipped" if case.find("skipped") is not None else "passed"


def run_suite(args: argparse.Namespace, suite: str, binary: Path, workdir: Path) -> SuiteResult:
    started = time.monotonic()
    try:
        result = _run_suite(args, suite, binary, workdir)
    except (OSError, subprocess.CalledProcessError, AssertionError, RuntimeError) as err:
        result = SuiteResult(suite, error=f"{type(err).__name__}: {err}")
    result.seconds = time.monotonic() - started
    return result


def _run_suite(args: argparse.Namespace, suite: str, binary: Path, workdir: Path) -> SuiteResult:
    result = SuiteResult(suite)
    cluster_dir = workdir / suite / "cluster"
    report = workdir / suite / "junit.xml"
    log = workdir / suite / "suite.log"
    extra = ["--node-cpu", args.node_cpu, "--node-memory", args.node_memory]
    for mapping in RUN_IMAGES:
        extra += ["--run-image", mapping]
    if args.volcano_scheduler:
        extra.append("--external-gang-scheduler")
    print(f"{suite}: starting a local cluster in {cluster_dir}", flush=True)
    with running_cluster(cluster_dir, controller=True, nodes=args.nodes, extra_args=extra) as cl:
        kubectl = [shutil.which("kubectl") or "kubectl", "--kubeconfig", str(cl.kubeconfig)]
        created = install_missing_crds(args.volcano_src, kubectl)
        if created:
            print(f"{suite}: created Volcano's CRDs {', '.join(created)}", flush=True)
        scheduler = None
        if args.volcano_scheduler:
            scheduler = VolcanoScheduler(
                args.scheduler_binary,
                args.volcano_src,
                kubectl,
                cl.kubeconfig,
                workdir / suite / "scheduler",
            )
            print(f"{suite}: vc-scheduler started ({scheduler.log})", flush=True)
        if args.system_pods:
            start_system_pods(kubectl, args.nodes)
            print(f"{suite}: kindnet's requests on every node", flush=True)
        argv = [
            str(binary),
            "-ginkgo.v",
            "-ginkgo.no-color",
            f"-ginkgo.timeout={args.timeout}",
            f"-ginkgo.junit-report={report}",
        ]
        skips = [] if args.no_default_skip else list(FRAMEWORK_IMAGE_SPECS)
        if suite in NEEDS_VOLCANO_SCHEDULER:
            skips.append(KUBERNETES_SPECS)
        skips += args.skip
        if skips:
            argv.append("-ginkgo.skip=" + "|".join(skips))
        if args.focus:
            argv.append(f"-ginkgo.focus={args.focus}")
        env = dict(os.environ, KUBECONFIG=str(cl.kubeconfig))
        if args.vcctl:
            env["VC_BIN"] = str(Path(args.vcctl).resolve().parent)
        print(f"{suite}: running ({log})", flush=True)
        try:
            with log.open("wb") as out:
                # Some suites create objects relative to the working directory: run them there.
                subprocess.run(
                    argv,
                    cwd=args.volcano_src / "test/e2e" / suite,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    check=False,
                )
        finally:
            if scheduler is not None:
                scheduler.stop()
    if report.exists():
        result.specs = parse_junit(report)
    else:
        result.error = f"no JUnit report; see {log}"
    return result


def table(results: Sequence[SuiteResult]) -> str:
    rows = [("suite", "passed", "failed", "skipped", "minutes")]
    for r in results:
        failed = r.count("failed", "panicked", "timedout", "interrupted", "aborted")
        rows.append(
            (
                r.suite,
                str(r.count("passed")),
                str(failed) if not r.error else "error",
                str(r.count("skipped", "pending")),
                f"{r.seconds / 60:.1f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def failures(results: Sequence[SuiteResult]) -> str:
    lines = []
    for r in results:
        if r.error:
            lines.append(f"{r.suite}: {r.error}")
        for spec in r.specs:
            if spec.status not in ("passed", "skipped", "pending"):
                brief = " ".join(spec.message.split())
                lines.append(f"{r.suite}: [{spec.status}] {spec.name}\n    {brief[:400]}")
    return "\n".join(lines)


@dataclass(frozen=True)
class NodeShape:
    cpu: str
    memory: str
    # A kindnet-like DaemonSet in kube-system, asking on every node what kind's asks.
    system_pods: bool


def node_shape(*, volcano_scheduler: bool) -> NodeShape:
    """The nodes the suites run on. With Volcano's scheduler they are shaped as the kind workers
    of Volcano's CI (a 4-CPU, 16 GB runner; every node's kindnet asks 100m CPU and 50Mi): the
    scheduling suites size their Jobs to the cluster (`ClusterSize`), and the slack kindnet
    leaves on each node is what the `overcommit` plugin needs to let a preemptor in."""
    if volcano_scheduler:
        return NodeShape("4", "16Gi", system_pods=True)
    return NodeShape("8", "32Gi", system_pods=False)


def system_pods_manifest() -> dict[str, Any]:
    """What kind runs on each node and asks for: kindnet's requests (its image is not run: the
    node agent keeps such a pod Running without a process)."""
    labels = {"app": "kindnet"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "kindnet", "namespace": "kube-system", "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {
                            "name": "kindnet-cni",
                            "image": "docker.io/kindest/kindnetd:v20250512-df8de77b",
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "50Mi"},
                                "limits": {"cpu": "100m", "memory": "50Mi"},
                            },
                        }
                    ],
                },
            },
        },
    }


def start_system_pods(kubectl: Sequence[str], nodes: int) -> None:
    """The kindnet-like DaemonSet, and a wait until it runs on every node (the suites count
    what is left of each node when a spec starts)."""
    subprocess.run(
        [*kubectl, "apply", "-f", "-"],
        input=json.dumps(system_pods_manifest()).encode(),
        check=True,
        capture_output=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        out = subprocess.run(
            [*kubectl, "get", "daemonset", "kindnet", "-n", "kube-system", "-o", "json"],
            check=True,
            capture_output=True,
        ).stdout
        status = json.loads(out).get("status") or {}
        if status.get("numberReady", 0) >= nodes:
            return
        time.sleep(1)
    raise RuntimeError(f"the kindnet DaemonSet was not ready on {nodes} nodes within 180 s")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="volcano-e2e", description="Run Volcano's e2e suites against vcjob's local cluster."
    )
    parser.add_argument("--volcano-src", type=Path, required=True, help="Volcano source tree")
    parser.add_argument(
        "--suite",
        action="append",
        choices=SUITES,
        help="suite to run (repeatable; default: all, vcctl's only with --vcctl)",
    )
    parser.add_argument("--cache", type=Path, help="where test binaries are built")
    parser.add_argument("--workdir", type=Path, help="clusters, logs and reports (default: temp)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the suites' binaries")
    parser.add_argument("--build-only", action="store_true", help="build, do not run")
    parser.add_argument("--parallel", action="store_true", help="run the suites at once")
    parser.add_argument("--nodes", type=int, default=4, help="nodes (Volcano's kind has 4)")
    parser.add_argument(
        "--node-cpu",
        help="each node's CPUs (default 8; with --volcano-scheduler, 4 as a kind worker of "
        "Volcano's CI)",
    )
    parser.add_argument(
        "--node-memory", help="each node's memory (default 32Gi; with --volcano-scheduler, 16Gi)"
    )
    parser.add_argument("--timeout", default="2h", help="Ginkgo's timeout per suite")
    parser.add_argument("--focus", default="", help="Ginkgo focus regex")
    parser.add_argument("--skip", action="append", default=[], help="Ginkgo skip regex")
    parser.add_argument(
        "--no-default-skip",
        action="store_true",
        help="also run the specs that need framework images (TF, PyTorch, MPI, Ray)",
    )
    parser.add_argument("--vcctl", help="Volcano's vcctl binary, for suites that call it")
    parser.add_argument(
        "--volcano-scheduler",
        action="store_true",
        help="build vc-scheduler from the tree and let it, not the node agent, gang-schedule "
        "(Volcano's CI configuration, in the ConfigMap the suites rewrite); also allows the "
        "schedulingbase and schedulingaction suites",
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    args.volcano_src = args.volcano_src.resolve()
    if not (args.volcano_src / "test/e2e").is_dir():
        parser.error(
            f"--volcano-src {args.volcano_src}: no test/e2e folder (not Volcano's source?)"
        )
    if args.suite and not args.vcctl and (needing := set(args.suite) & set(NEEDS_VCCTL)):
        parser.error(
            f"--suite {', '.join(sorted(needing))} runs Volcano's vcctl: pass --vcctl PATH"
        )
    if (
        args.suite
        and not args.volcano_scheduler
        and (needing := set(args.suite) & set(NEEDS_VOLCANO_SCHEDULER))
    ):
        parser.error(
            f"--suite {', '.join(sorted(needing))} tests Volcano's scheduler: "
            "pass --volcano-scheduler"
        )
    args.suite = args.suite or [
        s
        for s in SUITES
        if (args.vcctl or s not in NEEDS_VCCTL)
        and (args.volcano_scheduler or s not in NEEDS_VOLCANO_SCHEDULER)
    ]
    shape = node_shape(volcano_scheduler=args.volcano_scheduler)
    args.node_cpu = args.node_cpu or shape.cpu
    args.node_memory = args.node_memory or shape.memory
    args.system_pods = shape.system_pods
    args.cache = (args.cache or default_cache(args.volcano_src)).resolve()
    return args


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    # Several clusters starting at once on a busy machine take longer than a test's minute.
    running.STARTUP_TIMEOUT = max(running.STARTUP_TIMEOUT, 300.0)
    print(f"Volcano {volcano_version(args.volcano_src)} from {args.volcano_src}", flush=True)
    binaries = {s: build_suite(args.volcano_src, s, args.cache, args.rebuild) for s in args.suite}
    if args.volcano_scheduler:
        args.scheduler_binary = build_scheduler(args.volcano_src, args.cache, args.rebuild)
    if args.build_only:
        return 0
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="vcjob-volcano-e2e-"))).resolve()
    for suite in args.suite:
        (workdir / suite).mkdir(parents=True, exist_ok=True)
    workers = len(args.suite) if args.parallel else 1
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(run_suite, args, s, binaries[s], workdir) for s in args.suite]
        results = [f.result() for f in futures]
    print()
    print(table(results))
    details = failures(results)
    if details:
        print()
        print(details)
    print(f"\nreports and logs: {workdir}")
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {"suite": r.suite, "error": r.error, "seconds": round(r.seconds)}
                    | {"specs": [vars(s) for s in r.specs]}
                    for r in results
                ],
                indent=2,
            )
        )
    ok = all(
        not r.error and r.count("passed") == len(r.specs) - r.count("skipped", "pending")
        for r in results
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
