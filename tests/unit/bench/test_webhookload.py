"""The pure parts of the webhook's real-load benchmark (`bench/_webhookload.py`): its Jobs, the
webhook configurations of both contenders, wrk's report and kube-apiserver's histogram."""

from __future__ import annotations

import json
import math

import pytest

from tests.unit.bench.conftest import load
from webhook.job.create import validate_create
from webhook.settings import Settings

webhookload = load("_webhookload")

WRK_REPORT = """Running 2s test @ https://127.0.0.1:41234
  2 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.87ms  300.00us   5.00ms   90.00%
    Req/Sec     1.10k    50.00     1.20k    70.00%
  Latency Distribution
     50%  812.00us
     75%    2.00ms
     90%    2.50ms
     99%    1.20s
  4400 requests in 2.00s, 1.00MB read
  Socket errors: connect 0, read 1, write 0, timeout 2
  Non-2xx or 3xx responses: 3
Requests/sec:   2200.00
"""


def test_parse_wrk_reads_total_percentiles_and_failures() -> None:
    part = webhookload.parse_wrk(WRK_REPORT)
    assert part.requests == 4400
    assert part.seconds == 2.0
    assert part.p50 == pytest.approx(812e-6)
    assert part.p99 == pytest.approx(1.2)
    assert part.errors == 3 + 3


def test_parse_wrk_refuses_a_report_without_a_total() -> None:
    with pytest.raises(RuntimeError, match="no total"):
        webhookload.parse_wrk("unable to connect to 127.0.0.1:1 Connection refused")


INF = math.inf


@pytest.mark.parametrize(
    ("histogram", "q", "expected"),
    [
        ({}, 0.5, math.nan),
        ({0.005: 0.0, INF: 0.0}, 0.5, math.nan),
        # All in the first bucket: linear from 0.
        ({0.005: 10.0, 0.025: 10.0, INF: 10.0}, 0.5, 0.0025),
        # Rank 9.9 of 10 falls in (0.005, 0.025], which holds 9 of them from count 1.
        ({0.005: 1.0, 0.025: 10.0, INF: 10.0}, 0.99, 0.005 + 0.02 * (8.9 / 9)),
        # In +Inf: the largest finite bound.
        ({0.005: 1.0, 0.025: 2.0, INF: 10.0}, 0.99, 0.025),
    ],
)
def test_histogram_quantile_as_prometheus(
    histogram: dict[float, float], q: float, expected: float
) -> None:
    got = webhookload.histogram_quantile(histogram, q)
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected)


def test_admission_histograms_sum_each_webhook_over_its_other_labels() -> None:
    bucket = f"{webhookload.METRIC}_bucket"
    create = 'operation="CREATE",type="admit"'
    text = "\n".join(
        [
            f"# HELP {webhookload.METRIC} Admission webhook latency",
            f'{bucket}{{name="m.a",{create},rejected="false",le="0.005"}} 2',
            f'{bucket}{{name="m.a",{create},rejected="false",le="+Inf"}} 3',
            f'{bucket}{{name="m.a",{create},rejected="true",le="0.005"}} 1',
            f'{bucket}{{name="m.a",{create},rejected="true",le="+Inf"}} 1',
            f'{bucket}{{name="v.b",operation="UPDATE",type="validating",le="+Inf"}} 7',
            f'{webhookload.METRIC}_sum{{name="m.a",{create},rejected="false"}} 0.1',
            'apiserver_request_total{verb="POST"} 9',
        ]
    )
    assert webhookload.admission_histograms(text) == {
        "m.a": {0.005: 3.0, INF: 4.0},
        "v.b": {INF: 7.0},
    }


def test_histogram_delta_and_sum() -> None:
    before = {0.005: 1.0, INF: 2.0}
    after = {0.005: 4.0, INF: 6.0}
    assert webhookload.histogram_delta(after, before) == {0.005: 3.0, INF: 4.0}
    assert webhookload.histogram_add(before, {INF: 1.0}) == {0.005: 1.0, INF: 3.0}


def test_every_variant_is_a_job_vcjob_admits() -> None:
    settings = Settings(queue_check=False)
    for index in range(webhookload.BODY_VARIANTS):
        job = webhookload.varied_job(index, f"b-r0-{index}", "bench-vcjob")
        assert validate_create(job, None, settings) == [], index


def test_the_variants_differ_in_shape_not_only_in_name() -> None:
    jobs = [webhookload.varied_job(i, "same", "ns") for i in range(webhookload.BODY_VARIANTS)]
    specs = {json.dumps(job["spec"], sort_keys=True) for job in jobs}
    assert len(specs) == len(jobs)
    assert {len(job["spec"]["tasks"]) for job in jobs} == {1, 2, 3}
    assert {tuple(sorted(job["spec"].get("plugins", {}))) for job in jobs} == {
        ("env", "svc"),
        ("ssh", "svc"),
        ("env",),
        (),
    }


def test_each_request_body_carries_its_own_id() -> None:
    placeholder = webhookload.ID_PLACEHOLDER
    created = webhookload.body_templates("bench-vcjob", direct=False)
    reviews = webhookload.body_templates("bench-vcjob", direct=True)
    assert len(created) == len(reviews) == webhookload.BODY_VARIANTS
    job = json.loads(created[0].replace(placeholder, "r0-0-1"))
    assert job["metadata"]["name"] == "b-r0-0-1"
    # The name reaches the template too, so no two Jobs share a spec (the memo's miss path).
    assert "b-r0-0-1" in json.dumps(job["spec"]["tasks"][0]["template"])
    review = json.loads(reviews[0].replace(placeholder, "r0-0-1"))
    assert review["request"]["uid"] == "r0-0-1"
    assert review["request"]["object"]["metadata"]["name"] == "b-r0-0-1"
    assert review["request"]["namespace"] == "bench-vcjob"


def test_contenders_get_the_same_rules_each_for_its_own_namespace() -> None:
    ca = b"-----BEGIN CERTIFICATE-----\n"
    ours = webhookload.webhook_configurations(webhookload.VCJOB, 9443, ca)
    theirs = webhookload.webhook_configurations(webhookload.VOLCANO, 8443, ca)
    # vc-webhook-manager looks its configurations up by these names.
    assert [c["metadata"]["name"] for c in theirs] == [
        "volcano-admission-service-jobs-mutate",
        "volcano-admission-service-jobs-validate",
    ]
    assert theirs[0]["webhooks"][0]["clientConfig"]["url"] == "https://127.0.0.1:8443/jobs/mutate"
    for mine, other in zip(ours, theirs, strict=True):
        ((hook,), (other_hook,)) = mine["webhooks"], other["webhooks"]
        assert hook["namespaceSelector"] == {"matchLabels": {webhookload.ADMISSION_LABEL: "vcjob"}}
        assert other_hook["namespaceSelector"] == {
            "matchLabels": {webhookload.ADMISSION_LABEL: "volcano"}
        }
        for key in ("rules", "failurePolicy", "sideEffects", "timeoutSeconds"):
            assert hook[key] == other_hook[key], key


def test_the_wrk_script_sends_every_body_in_turn_with_an_id() -> None:
    script = webhookload._lua_script(
        ['{"a":"@ID@"}', '{"b":"@ID@"}'], "/apis/x", {"Authorization": "Bearer t"}, "r1c4"
    )
    assert '[==[{"a":"@ID@"}]==]' in script
    assert '[==[{"b":"@ID@"}]==]' in script
    assert 'wrk.headers["Authorization"] = "Bearer t"' in script
    assert 'string.format("r1c4-%d-%d", tid, counter)' in script
    assert 'wrk.format(nil, "/apis/x", nil, body)' in script
