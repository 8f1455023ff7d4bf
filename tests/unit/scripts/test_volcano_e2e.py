"""scripts/volcano-e2e's reading of Ginkgo's JUnit reports and its per-suite table, from a
hand-made report shaped as Ginkgo v2 writes them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


def load() -> ModuleType:
    path = Path(__file__).resolve().parents[3] / "scripts" / "volcano_e2e.py"
    spec = importlib.util.spec_from_file_location("volcano_e2e", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("volcano_e2e", module)
    spec.loader.exec_module(module)
    return module


volcano_e2e = load()

REPORT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="5" failures="1">
  <testsuite name="Volcano Job Test Suite" tests="5">
    <testcase name="[BeforeSuite]" classname="jobp" status="passed"></testcase>
    <testcase name="[It] Jobs Scale down" classname="jobp" status="failed">
      <failure message="Expected&#xA;    &lt;int&gt;: 1&#xA;to equal 2">details</failure>
    </testcase>
    <testcase name="[It] Jobs Scale up" classname="jobp" status="passed"></testcase>
    <testcase name="[It] MPI E2E Test run" classname="jobp" status="skipped">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[It] Queue pending spec" classname="jobp" status="pending">
    </testcase>
    <testcase name="[AfterSuite]" classname="jobp" status="failed">
      <failure message="cleanup failed" type="failed"></failure>
    </testcase>
  </testsuite>
</testsuites>
"""


def test_specs_and_failed_suite_nodes_are_read(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(REPORT)
    specs = volcano_e2e.parse_junit(report)
    assert [(s.name, s.status) for s in specs] == [
        ("Jobs Scale down", "failed"),
        ("Jobs Scale up", "passed"),
        ("MPI E2E Test run", "skipped"),
        ("Queue pending spec", "pending"),
        ("[AfterSuite]", "failed"),
    ]
    assert specs[0].message.startswith("Expected")


def test_the_table_counts_each_suite_and_lists_the_failures(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(REPORT)
    result = volcano_e2e.SuiteResult("jobp", volcano_e2e.parse_junit(report), seconds=90)
    broken = volcano_e2e.SuiteResult("cronjob", error="no JUnit report; see suite.log")
    lines = volcano_e2e.table([result, broken]).splitlines()
    assert lines[0].split() == ["suite", "passed", "failed", "skipped", "minutes"]
    assert lines[2].split() == ["jobp", "1", "2", "2", "1.5"]
    assert lines[3].split() == ["cronjob", "0", "error", "0", "0.0"]
    details = volcano_e2e.failures([result, broken])
    assert "jobp: [failed] Jobs Scale down\n    Expected <int>: 1 to equal 2" in details
    assert "cronjob: no JUnit report; see suite.log" in details


def test_the_vcctl_suite_runs_only_with_volcanos_vcctl(tmp_path: Path) -> None:
    src = tmp_path / "volcano"
    (src / "test/e2e").mkdir(parents=True)
    everything = volcano_e2e.parse_args(["--volcano-src", str(src)])
    assert everything.suite == ["admission", "jobp", "jobseq", "cronjob"]
    with_vcctl = volcano_e2e.parse_args(["--volcano-src", str(src), "--vcctl", "/bin/vcctl"])
    assert with_vcctl.suite == ["admission", "jobp", "jobseq", "cronjob", "vcctl"]
    with pytest.raises(SystemExit):
        volcano_e2e.parse_args(["--volcano-src", str(src), "--suite", "vcctl"])


def test_the_scheduling_suites_run_only_with_volcanos_scheduler(tmp_path: Path) -> None:
    src = tmp_path / "volcano"
    (src / "test/e2e").mkdir(parents=True)
    lane = volcano_e2e.parse_args(["--volcano-src", str(src), "--volcano-scheduler"])
    assert lane.suite == [
        "admission", "jobp", "jobseq", "cronjob", "schedulingbase", "schedulingaction",
    ]  # fmt: skip
    with pytest.raises(SystemExit):
        volcano_e2e.parse_args(["--volcano-src", str(src), "--suite", "schedulingbase"])


@pytest.mark.parametrize(
    ("flags", "cpu", "memory", "system_pods"),
    [
        ([], "8", "32Gi", False),
        # Volcano's scheduler: the nodes of Volcano's CI, kind workers on a 4-CPU runner
        (["--volcano-scheduler"], "4", "16Gi", True),
        (["--volcano-scheduler", "--node-cpu", "6"], "6", "16Gi", True),
        (["--node-memory", "8Gi"], "8", "8Gi", False),
    ],
)
def test_the_nodes_take_the_shape_of_the_lane(
    tmp_path: Path, flags: list[str], cpu: str, memory: str, system_pods: bool
) -> None:
    src = tmp_path / "volcano"
    (src / "test/e2e").mkdir(parents=True)
    args = volcano_e2e.parse_args(["--volcano-src", str(src), *flags])
    assert (args.node_cpu, args.node_memory, args.system_pods) == (cpu, memory, system_pods)


def test_the_system_pods_ask_on_every_node_what_kindnet_asks() -> None:
    manifest = volcano_e2e.system_pods_manifest()
    assert (manifest["kind"], manifest["metadata"]["namespace"]) == ("DaemonSet", "kube-system")
    pod = manifest["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"operator": "Exists"}]  # the tainted nodes too, as kind's
    (container,) = pod["containers"]
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "50Mi"}


def test_the_scheduler_configmap_is_the_one_the_suites_rewrite() -> None:
    configmap = volcano_e2e.scheduler_configmap("actions: enqueue")
    assert configmap["metadata"] == {
        "name": "integration-scheduler-configmap",
        "namespace": "volcano-system",
    }
    assert configmap["data"] == {"volcano-scheduler-ci.conf": "actions: enqueue"}


def test_the_scheduler_configuration_is_alone_in_the_folder_the_scheduler_watches(
    tmp_path: Path,
) -> None:
    # vc-scheduler reloads its configuration on any write in the configuration's folder.
    paths = volcano_e2e.scheduler_paths(tmp_path)
    watched = paths.conf_file.parent
    assert paths.conf_file.name == "volcano-scheduler-ci.conf"
    for written in (paths.log, paths.cache_dump_dir, paths.plugins_dir):
        assert watched not in (written, *written.parents), written
