"""The Deployment and ReplicaSet controllers, as kube-controller-manager runs them (simplified).

A Deployment owns one ReplicaSet per distinct pod template, named `<deployment>-<hash>` where the
hash is a short stable digest of the template; the ReplicaSet's selector and template carry it as
the `pod-template-hash` label, and its `deployment.kubernetes.io/revision` annotation numbers the
rollouts. A template change gets a new ReplicaSet that is scaled up while the old ones are scaled
down — a rolling update within `maxSurge`/`maxUnavailable`, or `Recreate` — and the Deployment's
status and conditions follow the ReplicaSets'. Old ReplicaSets scaled to zero are kept up to
`revisionHistoryLimit`, so `kubectl rollout history` and `kubectl rollout undo` work.

A ReplicaSet creates and deletes the pods it controls (by ownerReference) until as many as
`spec.replicas` are active, and counts them, ready and available, in its status.

Simplifications: no adoption or release of objects by selector (only ownerReferences count), no
proportional scaling of several active ReplicaSets, no progress deadline (`Progressing` never
turns False), no pod creation in slow-start batches. Deleting a Deployment or ReplicaSet is left to
the garbage collector.

The decisions are pure functions of plain dicts (`templates`, `rollout`, `status`,
`replicasets`); `controllers` holds the two threads that list and watch, keep caches and carry
them out.
"""
