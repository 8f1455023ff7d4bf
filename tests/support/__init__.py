"""What vcjob's tests share: one in-memory API (`FakeKube`, a `kubeio.kubelike.KubeLike`) and one
poll with a deadline (`wait_for`, `wait_until`, from `tests.support.polling`).

    from tests.support import FakeKube, wait_until
"""

from tests.support.fakekube import FakeKube
from tests.support.polling import wait_for, wait_until

__all__ = ["FakeKube", "wait_for", "wait_until"]
