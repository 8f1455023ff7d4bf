"""A generic Kubernetes API server for the local control plane.

Run it with `python -m localcluster.apiserver --port PORT --dir DIR`, or in-process::

    from localcluster.apiserver.server import APIServer, APIServerConfig

    server = APIServer(APIServerConfig(directory=tmp, port=0))
    server.start()          # serves on a background thread; DIR/kubeconfig is written
    ...                     # server.url, server.port, server.ca_pem, server.kubeconfig_path
    server.stop()

What it serves: discovery (`/api`, `/apis`, legacy lists; aggregated discovery requests get the
legacy documents, which kubectl accepts), OpenAPI v2 and v3 (built-in kinds from the Kubernetes
1.31 definitions, CRDs from their schemas), CRUD + watch for the built-in table in `registry.py`
and every established CRD, status/binding/finalize subresources, the four patch types, label and
field selectors, paging, finalizers and graceful deletion, Table output for `kubectl get`,
dry-run, field validation, admission webhooks and CRD schemas (via `admission.py` and
`crdschema.py`), SQLite persistence with `--data-dir`, and fault injection with `--fault-rate`.

Authentication and authorization as kube-apiserver does them (`security.py`): the kubeconfig's
token is the admin (`system:masters`), ServiceAccount tokens from TokenRequest are authorized by
RBAC with kube's 403 wording, impersonation headers and access reviews work, and `--audit-log`
writes one JSON line per request.
"""
