"""What vcjob's tests share: one in-memory API (`FakeKube`, a `kubeio.kubelike.KubeLike`) and one
poll with a deadline (`wait_for`, `wait_until`: `localcluster.testing`'s, which the cluster
fixtures use too).

    from tests.support import FakeKube, wait_until
"""

from localcluster.testing import wait_for, wait_until
from tests.support.fakekube import FakeKube

__all__ = ["FakeKube", "wait_for", "wait_until"]
