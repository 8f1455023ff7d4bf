"""The container root's pure rules: which installation paths a shadow (a volume's mount path, the
private /tmp) would hide and so are bound back, which host directories are mirrored entry by entry
so that mount points are made inside the root, and the order volumes are mounted in."""

from __future__ import annotations

import pytest

from localcluster.simulator.launch import Mount, covered, mirrored_directories, mount_order


@pytest.mark.parametrize(
    ("paths", "shadows", "hidden"),
    [
        (["/tmp/ci/main/.venv", "/usr/lib/python3"], ["/tmp"], ["/tmp/ci/main/.venv"]),
        (["/tmp/ci/main", "/tmp/ci/main/.venv"], ["/tmp"], ["/tmp/ci/main"]),
        (["/work/main/.venv"], ["/tmp", "/etc/certs"], []),
        (["/tmp"], ["/tmp"], []),  # the shadow itself is the volume, not an ancestor
        (["/tmpfoo/x"], ["/tmp"], []),
        (["/srv/app/lib"], ["/srv/"], ["/srv/app/lib"]),
    ],
)
def test_covered(paths: list[str], shadows: list[str], hidden: list[str]) -> None:
    assert covered(paths, shadows) == hidden


@pytest.mark.parametrize(
    ("paths", "private", "mirrored"),
    [
        # A path that does not exist: every directory on the way, down to its parent.
        (["/nonexistent-vcjob/a/b"], [], {"/nonexistent-vcjob", "/nonexistent-vcjob/a"}),
        # Under the private /tmp nothing is mirrored: the root's /tmp is its own.
        (["/tmp/x/y"], ["/tmp"], set()),
        # A volume inside another volume is made inside the outer one.
        (["/data", "/data/conf/app"], ["/data", "/data/conf/app"], set()),
        (["/etc/volcano"], ["/etc/volcano"], {"/etc"}),
        (["/"], [], set()),
    ],
)
def test_mirrored_directories(paths: list[str], private: list[str], mirrored: set[str]) -> None:
    assert mirrored_directories(paths, private) == mirrored


def test_mirrored_directories_follow_symlinks_as_the_root_will(tmp_path: object) -> None:
    from pathlib import Path

    base = Path(str(tmp_path)).resolve()
    (base / "real").mkdir()
    (base / "link").symlink_to(base / "real")
    got = mirrored_directories([str(base / "link" / "secrets" / "token")], [])
    assert str(base / "real" / "secrets") in got
    assert str(base / "real") in got
    assert str(base / "link") not in got


def test_mount_order_shallow_first() -> None:
    mounts = [Mount("s", "/a/b/c", False), Mount("s", "/a", False), Mount("s", "/a/b", True)]
    assert [m.target for m in mount_order(mounts)] == ["/a", "/a/b", "/a/b/c"]
