"""Results kept per identical template or spec: never a different answer from working it out."""

from __future__ import annotations

import base64
import copy
import json
import math
from collections.abc import Callable
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared import jsoncodec
from shared.fielderrors import FieldError, Path
from tests.unit.webhook.test_review_properties import SETTINGS, mutated_jobs, valid_job
from webhook import admission, memo
from webhook.job import create, podtemplate, review
from webhook.job.defaulting import default_job
from webhook.settings import Settings

TEMPLATE: dict[str, Any] = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"x": None}, {"x": math.nan}),
        ({"x": None}, {"x": math.inf}),
        ({"x": math.inf}, {"x": -math.inf}),
        ({"x": 1}, {"x": 1.0}),
        ({"x": True}, {"x": 1}),
        ({"x": 2**64}, {"x": 2**64 + 1}),
        ({"x": "1"}, {"x": 1}),
        ({"x": []}, {"x": {}}),
        ([1, 2], [2, 1]),
    ],
)
def test_different_json_values_have_different_encodings(a: Any, b: Any) -> None:
    assert memo.encoding(a) != memo.encoding(b)


def test_equal_values_in_the_same_key_order_share_an_encoding_and_other_orders_do_not() -> None:
    value = {"a": 1, "b": {"c": 2, "d": [3, None]}}
    assert memo.encoding(value) == memo.encoding(copy.deepcopy(value))
    # Error order can follow key order: a result is only reused for the same order.
    assert memo.encoding(value) != memo.encoding({"b": {"d": [3, None], "c": 2}, "a": 1})


def test_a_value_that_is_not_json_has_no_encoding() -> None:
    assert memo.encoding({"x": object()}) is None


def test_a_value_too_large_to_remember_has_no_encoding() -> None:
    assert memo.encoding({"x": "a" * memo.MAX_VALUE_BYTES}) is None
    assert memo.encoding({"x": "a" * (memo.MAX_VALUE_BYTES - 8)}) is not None


def test_a_large_template_is_judged_without_the_memo() -> None:
    template = {"spec": {"containers": [{"name": "C", "image": "i" * memo.MAX_VALUE_BYTES}]}}
    table = memo.Memo(memo.ENTRIES)
    found = podtemplate.validate_template(template, Path.of("t"), table.recall)
    assert [e.field for e in found] == ["t.spec.containers[0].name"]
    assert len(table) == 0


def test_the_rules_remember_only_in_the_memo_they_are_given() -> None:
    table = memo.Memo(memo.ENTRIES)
    job = {"metadata": {"name": "j"}, "spec": {"tasks": [{"replicas": 1, "template": TEMPLATE}]}}
    assert create.validate_create(job, None, Settings()) == []
    assert len(table) == 0
    assert create.validate_create(job, None, Settings(), table.recall) == []
    # The spec's problems and its template's.
    assert len(table) == 2


def test_recall_works_out_once_per_key() -> None:
    table = memo.Memo(2)
    calls: list[int] = []

    def work() -> int:
        calls.append(1)
        return 7

    assert (table.recall(b"k", work), table.recall(b"k", work)) == (7, 7)
    assert calls == [1]
    assert memo.fresh(b"k", work) == 7
    assert calls == [1, 1]


def test_digests_keep_the_parts_apart() -> None:
    assert memo.digest(b"ab", b"c") != memo.digest(b"a", b"bc")


def test_the_memo_forgets_the_least_recently_used_entry() -> None:
    table = memo.Memo(2)
    table.put(b"a", 1)
    table.put(b"b", 2)
    assert table.get(b"a") == 1
    table.put(b"c", 3)
    assert (table.get(b"a"), table.get(b"b"), table.get(b"c")) == (1, None, 3)
    assert len(table) == 2


BROKEN_TEMPLATES: list[Any] = [
    {"spec": {"containers": [{"name": "Bad_Name", "ports": [{"containerPort": 0}]}]}},
    {"spec": {"containers": []}, "metadata": {"labels": {"a": 1}}},
    {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "x"}}}]}},
    {"spec": "nope"},
    {},
    {"spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Sometimes"}},
    {"spec": {"containers": [{"name": "c", "image": "i"}], "terminationGracePeriodSeconds": 1.5}},
]


@pytest.mark.parametrize("template", BROKEN_TEMPLATES)
@pytest.mark.parametrize(
    "path", [Path.of("spec").child("tasks").index(3).child("template"), Path(), Path.of("x")]
)
def test_remembered_template_problems_are_the_worked_out_ones(template: Any, path: Path) -> None:
    recall = memo.Memo(memo.ENTRIES).recall
    expected = podtemplate._template_problems(template, path)
    assert podtemplate.validate_template(template, path, recall) == expected
    # Again, now from the memo, and at another place in the Job.
    assert podtemplate.validate_template(copy.deepcopy(template), path, recall) == expected
    other = Path.of("spec").child("tasks").index(0).child("template")
    assert podtemplate.validate_template(template, other, recall) == podtemplate._template_problems(
        template, other
    )


def test_nan_and_null_templates_are_judged_apart() -> None:
    null = {"spec": {**TEMPLATE["spec"], "terminationGracePeriodSeconds": None}}
    nan = {"spec": {**TEMPLATE["spec"], "terminationGracePeriodSeconds": math.nan}}
    assert podtemplate.validate_template(null, Path()) == []
    assert podtemplate.validate_template(nan, Path()) != []


def _job(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "j"}, "spec": spec}


@settings(max_examples=60, deadline=None)
@given(
    replicas=st.integers(-1, 4),
    queue=st.sampled_from([None, "", "q"]),
    plugins=st.sampled_from([None, {}, {"mpi": []}, {"pytorch": [], "svc": []}]),
    scheduler=st.sampled_from(["volcano", "other"]),
)
def test_remembered_patches_are_make_patch(
    replicas: int, queue: str | None, plugins: Any, scheduler: str
) -> None:
    spec: dict[str, Any] = {"tasks": [{"replicas": replicas, "template": TEMPLATE}]}
    if queue is not None:
        spec["queue"] = queue
    if plugins is not None:
        spec["plugins"] = plugins
    for obj in (_job(spec), _job(copy.deepcopy(spec))):  # worked out, then remembered
        encoded = review.encoded_patch(obj, scheduler)
        expected = jsonpatch.make_patch(obj, default_job(obj, scheduler))
        patched = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(encoded)))
        assert patched == jsonpatch.apply_patch(obj, expected)
        assert patched == default_job(obj, scheduler)


def test_the_same_spec_under_another_scheduler_name_gets_its_own_patch() -> None:
    obj = _job({"tasks": [{"replicas": 1, "template": TEMPLATE}]})
    ours = json.loads(base64.b64decode(review.encoded_patch(obj, "volcano")))
    theirs = json.loads(base64.b64decode(review.encoded_patch(obj, "other")))
    assert {"op": "add", "path": "/spec/schedulerName", "value": "other"} in theirs
    assert ours != theirs


@pytest.mark.parametrize(
    "body",
    [
        b'{"a": NaN}',
        b'{"a": 123456789012345678901234567890}',
        b'{"a": -9223372036854775809, "b": 18446744073709551616}',
        b'{"a": 1e400}',
        b'{"a": "\\ud800"}',
        '{"a": "é"}'.encode("utf-16"),
        b"[" * 2000 + b"]" * 2000,
    ],
)
def test_bodies_the_fast_decoder_refuses_decode_as_before(body: bytes) -> None:
    try:
        expected: Any = json.loads(body)
    except RecursionError:
        with pytest.raises(RecursionError):
            jsoncodec.loads(body)
        return
    got = jsoncodec.loads(body)
    assert json.dumps(got) == json.dumps(expected)


def test_bad_json_keeps_the_standard_error_message() -> None:
    answer = review.decode(b'{"request": ')
    assert isinstance(answer, admission.Answer)
    with pytest.raises(ValueError, match="Expecting value") as caught:
        json.loads(b'{"request": ')
    assert answer.body["error"] == f"the body is not JSON: {caught.value}"


def _fresh(validate: Callable[[], list[FieldError]]) -> list[FieldError]:
    """What `validate` finds with nothing remembered."""
    review.MEMO.clear()
    return validate()


def _create(obj: Any, queues: Any, settings: Settings) -> list[FieldError]:
    """Validation on CREATE as the review layer runs it: with its memo."""
    return create.validate_create(obj, queues, settings, review.MEMO.recall)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=mutated_jobs(), name=st.sampled_from(["j", "another-job", "Bad_Name", ""]))
def test_remembered_job_problems_are_the_worked_out_ones(obj: dict[str, Any], name: str) -> None:
    expected = _fresh(lambda: _create(obj, None, SETTINGS))
    other = _fresh(lambda: _create(valid_job(), None, SETTINGS))
    # Worked out beside another remembered spec, then remembered itself.
    assert _create(obj, None, SETTINGS) == expected
    assert _create(copy.deepcopy(obj), None, SETTINGS) == expected
    assert _create(valid_job(), None, SETTINGS) == other
    # Under another name, with a queue check, and under another scheduler name.
    renamed = {**obj, "metadata": {"name": name}}
    queues = _NoQueues()
    expected = _fresh(lambda: _create(renamed, queues, SETTINGS))
    _create(obj, queues, SETTINGS)
    assert _create(renamed, queues, SETTINGS) == expected
    elsewhere = Settings(scheduler_name="Not A Scheduler")
    expected = _fresh(lambda: _create(obj, None, elsewhere))
    _create(obj, None, SETTINGS)
    assert _create(obj, None, elsewhere) == expected


class _NoQueues:
    def get(self, name: str) -> None:
        return None

    def children(self, name: str) -> list[str]:
        return []


def test_the_same_spec_under_another_scheduler_name_is_judged_again() -> None:
    job = valid_job()
    assert "schedulerName" not in job["spec"]
    assert _create(job, None, SETTINGS) == []
    problems = _create(job, None, Settings(scheduler_name="Not A Scheduler"))
    assert [p.field for p in problems] == ["spec.schedulerName"]
