"""vcjob's one layer between its processes and the Kubernetes API (and the process itself).

- `client`: `Kube`, plain-dict CRUD, merge patches, status writes, paged lists and watches over
  the official `ApiClient`, configured by the `kubernetes` package's kubeconfig and in-cluster
  loaders (so exec and OIDC auth work; `load_user_configuration` for command-line tools: the
  kubeconfig context and its namespace); every failure is translated into `errors`.
- `errors`: the retry decision each failure carries (transient, conflict, not found, permanent).
- `kubelike`: `KubeLike`, what the shells need of an API client; `Kube` is the one that talks to a
  server, the tests' in-memory `FakeKube` the other.
- `informer`: list + watch reflectors (resourceVersion, bookmarks, re-list on 410 Gone).
- `workqueue`: a deduplicating work queue with per-key exponential backoff and rate limits.
- `events`: the Event recorder (client-go's time-ordered names, repeats counted on one Event).
- `clock`: the clock the I/O shells hand to the pure planners.
- `signals`: stop signals that cannot deadlock (a self-pipe, no lock in the handler).

Every process package may import it; it imports none of them (import-linter).
"""
