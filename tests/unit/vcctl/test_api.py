"""vcctl's one-line API errors over kubeio's error classes, and its kubeconfig loading."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeio.client import Configuration, Kube, load_user_configuration, new_api_client
from kubeio.errors import KubeconfigError, KubeError, NotFoundError, PermanentError, TransientError
from vcctl.api import ApiError, VolcanoApi, connect


class FailingKube(Kube):
    def __init__(self, error: KubeError) -> None:
        configuration = Configuration()
        configuration.host = "https://127.0.0.1:6443"
        super().__init__(new_api_client(configuration), qps=0)
        self.error = error

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        raise self.error


def unreachable() -> TransientError:
    """What kubeio raises when no answer came: status 0, the socket error as the cause."""
    error = TransientError("GET /apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs/j: refused")
    error.__cause__ = ConnectionRefusedError(111, "Connection refused")
    return error


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (NotFoundError("GET: 404", 404, "NotFound", "jobs x not found"), 'job "j" not found'),
        (
            PermanentError("POST: 400", 400, "BadRequest", 'admission webhook denied: "bad"'),
            'admission webhook denied: "bad"',
        ),
        (TransientError("GET: 503", 503, ""), "503 Service Unavailable"),
        (
            unreachable(),
            "cannot reach the API server at https://127.0.0.1:6443: [Errno 111] Connection refused",
        ),
    ],
    ids=["not found names the job", "the server's message", "no message: the status", "no answer"],
)
def test_one_line_errors(error: KubeError, expected: str) -> None:
    api = VolcanoApi(FailingKube(error), "default")
    with pytest.raises(ApiError) as raised:
        api.get_job("default", "j")
    assert str(raised.value).startswith(expected)


def kubeconfig(tmp_path: Path) -> Path:
    cluster = {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True}
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [
            {"name": "plain", "context": {"cluster": "c", "user": "u"}},
            {"name": "team", "context": {"cluster": "c", "user": "u", "namespace": "team-a"}},
        ],
        "current-context": "team",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return path


def test_the_context_namespace(tmp_path: Path) -> None:
    path = str(kubeconfig(tmp_path))
    assert load_user_configuration(path)[1] == "team-a"
    assert load_user_configuration(path, "plain")[1] == "default"


def test_a_missing_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KubeconfigError):
        load_user_configuration(str(tmp_path / "absent"))
    with pytest.raises(ApiError, match=r"cannot load the kubeconfig .*absent: .*pass --kubeconfig"):
        connect(str(tmp_path / "absent"))


def test_master_overrides_the_server(tmp_path: Path) -> None:
    api = connect(str(kubeconfig(tmp_path)), master="127.0.0.1:7443")
    try:
        assert api.kube.api_client.configuration.host == "https://127.0.0.1:7443"
        assert api.namespace == "team-a"
    finally:
        api.close()


class RecordingKube(FailingKube):
    def __init__(self) -> None:
        super().__init__(KubeError("unused"))
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self.calls.append((method, path, kwargs))
        return kwargs.get("body")


def test_a_job_is_created_with_strict_field_validation() -> None:
    """The API server refuses unknown fields with their path, as for `kubectl create`."""
    kube = RecordingKube()
    VolcanoApi(kube, "default").create_job("ml", {"metadata": {"name": "j"}})
    ((method, path, kwargs),) = kube.calls
    assert (method, path) == ("POST", "/apis/batch.volcano.sh/v1alpha1/namespaces/ml/jobs")
    assert kwargs["query"] == {"fieldValidation": "Strict"}


def test_an_unknown_field_is_reported_with_its_path() -> None:
    message = 'Job in version "v1alpha1" cannot be handled as a Job: strict decoding error: '
    message += 'unknown field "spec.foo"'
    api = VolcanoApi(FailingKube(PermanentError("POST: 400", 400, "BadRequest", message)), "d")
    with pytest.raises(ApiError) as raised:
        api.create_job("d", {})
    assert str(raised.value).endswith('strict decoding error: unknown field "spec.foo"')
