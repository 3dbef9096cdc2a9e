"""Red team, round 26 (supervisor): where a non-root caller's budget holders meet, without
``XDG_RUNTIME_DIR``.

Every shellrt process of a non-root uid joins one budget namespace (round 22): the holders meet
at a rendezvous. Round 23 put it in the caller's ``XDG_RUNTIME_DIR`` when that is a 0700
directory of its own, and left the abstract socket name of the host's network namespace for
everyone else (service accounts, uid 65534 here): any uid binding that name first made each
process take its own half again (round 23 "Left"). Now such a caller meets in a directory of its
own in the temp dir, ``<temp>/shellrt-budget-<uid>``, made 0700 and opened ``O_NOFOLLOW`` and
checked by ``fstat`` (a directory, the caller's, no group or other bits); the holder works in it
by that fd (its cwd), never by a path someone could swap. One another user made first (any uid
can create a name in a shared temp dir), or a link there, was refused, so any user could stop
every sandbox of the caller; now the caller first tries ``~/.cache/shellrt/budget-<host>`` in a home of
its own, and with no place left its process takes its own half and says why (never a refusal).

The caller is uid 65534 (`tests._nonroot`'s shared tree); the hostile user is root and uid 65533.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import _nonroot
from tests.conftest import require

pytestmark = pytest.mark.bwrap

#: Another local user.
_HOSTILE = 65533

#: One shellrt process of the caller under the rendezvous ``argv[1]``: its budget namespace's
#: inode, or "refused" and why; then it holds the namespace until EOF.
_PROCESS = r"""
import os, sys
from sandbox import _ucounts
_ucounts._RENDEZVOUS = sys.argv[1]
try:
    prefix = _ucounts.budget_prefix()
except _ucounts.BudgetError as exc:
    print("refused", str(exc).replace("\n", " "), flush=True)
    sys.exit(0)
print(os.stat(prefix[1].split("=", 1)[1]).st_ino, flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def nobody() -> Iterator[_nonroot.NonRootRun]:
    require(os.geteuid() == 0, "running processes as uid 65534 needs root")
    require(shutil.which("setpriv") is not None and shutil.which("nsenter") is not None, "setpriv and nsenter")
    with _nonroot.shared_run(_nonroot.with_requirements([])) as run:
        yield run


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A temp dir every user may create names in, as /tmp is (sticky, 1777)."""
    where = Path(tempfile.mkdtemp(prefix="r26-tmp-", dir="/tmp"))
    where.chmod(0o1777)
    try:
        yield where
    finally:
        shutil.rmtree(where)


def _name() -> str:
    """A rendezvous of the test's own: CI's other processes of uid 65534 keep the uid's."""
    return f"shellrt-budget-test-{uuid.uuid4().hex[:12]}"


#: A home the caller cannot use (uid 65534's own in /etc/passwd): the temp dir's path is next.
_NO_HOME = "/nonexistent"


def _start(
    run: _nonroot.NonRootRun, name: str, tmp: Path, home: str = _NO_HOME
) -> tuple[subprocess.Popen[str], str]:
    env = {**run.env(), "TMPDIR": str(tmp), "HOME": home}  # no XDG_RUNTIME_DIR (run.env() sets none)
    started = subprocess.Popen(
        run.argv("-c", _PROCESS, name),
        cwd=run.repo,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert started.stdout is not None
    return started, started.stdout.readline().strip()


def _warned(process: subprocess.Popen[str]) -> str:
    """What ``process`` said on stderr (after `_end`)."""
    assert process.stderr is not None
    return process.stderr.read()


def _end(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=60)


def _two_starts(
    run: _nonroot.NonRootRun, name: str, tmp: Path, home: str = _NO_HOME
) -> tuple[subprocess.Popen[str], str, str]:
    """Two processes of the caller, the second started while the first holds: the first (ended)
    and what each said."""
    first, said_first = _start(run, name, tmp, home)
    try:
        second, said_second = _start(run, name, tmp, home)
        _end(second)
    finally:
        _end(first)
    return first, said_first, said_second


def _left_in(meet: Path, name: str) -> list[str]:
    """What stays in ``meet`` once the holders are gone: a holder unlinks its socket the moment
    after its owner exits (it reads EOF first), so a look right after `_end` can be too early
    (round 23's twin of this check failed so in CI63). Waits up to 10 s for the socket ``name`` to go."""
    deadline = time.monotonic() + 10
    while name in (names := sorted(os.listdir(meet))) and time.monotonic() < deadline:
        time.sleep(0.02)
    return names


def _kept(name: str) -> list[str]:
    """What a rendezvous keeps once its holders are gone: the server's lock and the holders'
    liveness lock (round 54)."""
    return [f"{name}.live", f"{name}.lock"]


def _home(run: _nonroot.NonRootRun) -> Path:
    """A home of the caller's own (0755, as most are), new for each test."""
    home = run.owned / "home" / f"h-{uuid.uuid4().hex[:8]}"
    home.mkdir(mode=0o755)
    os.chown(home, _nonroot.NOBODY, _nonroot.NOBODY)
    return home


def test_another_user_making_the_temp_path_cannot_stop_a_start(nobody: _nonroot.NonRootRun, shared_tmp: Path) -> None:
    """Failed before (2 of 2): root made ``<temp>/shellrt-budget-65534`` first and every start
    of the caller was refused. Now the caller meets in its own home (``~/.cache/shellrt/budget-<host>``,
    which no other user can create) and its processes still share one namespace."""
    meet = shared_tmp / "shellrt-budget-65534"
    meet.mkdir(mode=0o700)  # root's: the caller may not even enter it
    home = _home(nobody)
    name = _name()
    first, ns_first, ns_second = _two_starts(nobody, name, shared_tmp, str(home))
    assert ns_first.isdigit(), f"another user's directory in the temp dir stopped the start: {ns_first!r}"
    assert ns_second == ns_first, "the caller's processes no longer share one budget namespace"
    assert _warned(first) == "", "a start that found a place of its own to meet warned"
    budget = home / ".cache" / "shellrt" / f"budget-{os.uname().nodename}"
    info = budget.lstat()
    assert (info.st_uid, info.st_mode & 0o7777) == (_nonroot.NOBODY, 0o700)
    assert _left_in(budget, name) == _kept(name), "the serving holder left its socket behind"
    assert os.listdir(meet) == []


def test_with_no_place_of_its_own_a_start_goes_on_alone_and_says_why(
    nobody: _nonroot.NonRootRun, shared_tmp: Path
) -> None:
    """Failed before (with the previous test, 2 of 2): no usable home and the temp path another
    user's, the start was refused. Now its process takes its own half (the degraded mode before
    round 22) and says which path stopped the sharing and how to fix it."""
    meet = shared_tmp / "shellrt-budget-65534"
    meet.mkdir(mode=0o700)
    process, said = _start(nobody, _name(), shared_tmp)
    _end(process)
    assert said.isdigit(), f"another user's directory in the temp dir stopped the start: {said!r}"
    warning = _warned(process)
    assert str(meet) in warning and "XDG_RUNTIME_DIR" in warning, warning
    assert len(warning.strip().splitlines()) == 1, warning
    assert os.listdir(meet) == []


def test_another_user_on_the_abstract_name_cannot_stop_the_sharing(
    nobody: _nonroot.NonRootRun, shared_tmp: Path
) -> None:
    """Failed before (1 of 1): root listening on the name, each process made its own namespace."""
    name = _name()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as squatter:
        squatter.bind("\0" + name)  # the abstract name the caller's holders met under
        squatter.listen(16)
        _first, ns_first, ns_second = _two_starts(nobody, name, shared_tmp)
    assert ns_first.isdigit(), ns_first
    assert ns_second == ns_first, "another user's listener made each process of the caller take its own half"
    meet = shared_tmp / "shellrt-budget-65534"
    info = meet.lstat()
    assert (info.st_uid, info.st_mode & 0o7777) == (_nonroot.NOBODY, 0o700)
    assert _left_in(meet, name) == _kept(name), "the serving holder left its socket behind"


def _planted_dir(tmp: Path, meet: Path) -> None:
    meet.mkdir()
    meet.chmod(0o777)  # welcoming: the caller could work in it, and so could its maker
    os.chown(meet, _HOSTILE, _HOSTILE)


def _planted_private_dir(tmp: Path, meet: Path) -> None:
    meet.mkdir(mode=0o700)
    os.chown(meet, _HOSTILE, _HOSTILE)


def _planted_link(tmp: Path, meet: Path) -> None:
    target = tmp / "looks-like-yours"  # the caller's own 0700 directory, reached by a link
    target.mkdir(mode=0o700)
    os.chown(target, _nonroot.NOBODY, _nonroot.NOBODY)
    meet.symlink_to(target)


def _loose_own_dir(tmp: Path, meet: Path) -> None:
    meet.mkdir()
    meet.chmod(0o755)  # the caller's, but others may enter it (a careless umask)
    os.chown(meet, _nonroot.NOBODY, _nonroot.NOBODY)


@pytest.mark.parametrize("plant", [_planted_dir, _planted_private_dir, _planted_link, _loose_own_dir])
def test_a_rendezvous_made_by_someone_else_is_never_used(
    nobody: _nonroot.NonRootRun, shared_tmp: Path, plant: object
) -> None:
    """The path in the shared temp dir made first (a directory of another user's, a link, one
    others may enter), no usable home: never used, and no start refused (round 26 refused them,
    which let any user stop every sandbox of the caller). Each process takes its own half and
    says which path stopped the sharing."""
    meet = shared_tmp / "shellrt-budget-65534"
    assert callable(plant)
    plant(shared_tmp, meet)
    name = _name()
    first, said, said_second = _two_starts(nobody, name, shared_tmp)
    assert said.isdigit(), f"a rendezvous someone else made stopped the start: {said!r}"
    assert said_second != said, "two processes met at a rendezvous someone else made"
    warning = _warned(first)
    assert str(meet) in warning and "XDG_RUNTIME_DIR" in warning, warning
    if meet.is_dir() and not meet.is_symlink():
        assert os.listdir(meet) == [], "the caller left a socket or lock in another user's directory"
    else:
        assert os.listdir(meet.resolve()) == []


def _home_of(owner: int, mode: int) -> object:
    def plant(home: Path) -> None:
        os.chown(home, owner, owner)
        home.chmod(mode)

    return plant


@pytest.mark.parametrize(
    "plant",
    [_home_of(_HOSTILE, 0o755), _home_of(_HOSTILE, 0o777), _home_of(_nonroot.NOBODY, 0o777)],
    ids=["another-users", "another-users-open", "own-open"],
)
def test_a_home_others_may_write_or_own_is_never_used(
    nobody: _nonroot.NonRootRun, shared_tmp: Path, plant: object
) -> None:
    """A HOME another user owns, or one others may write (they could make ``.cache/shellrt``
    first): nothing is made in it; the start meets at the temp dir's path instead."""
    home = _home(nobody)
    assert callable(plant)
    plant(home)
    name = _name()
    process, said = _start(nobody, name, shared_tmp, str(home))
    _end(process)
    assert said.isdigit(), said
    assert os.listdir(home) == [], "the caller made its rendezvous in a home others control"
    assert _left_in(shared_tmp / "shellrt-budget-65534", name) == _kept(name)


def test_a_start_as_the_serving_holder_ends_joins_the_survivor(nobody: _nonroot.NonRootRun, shared_tmp: Path) -> None:
    """Failed before (1 of 1, 3 of 3 rounds): a process that started just after the serving
    holder's owner ended found nobody serving (the survivor bound the name at its next 2 s poll)
    and made a namespace of its own: a third half (round 22 "Left"; CI51's flake)."""
    name = _name()
    current, ns = _start(nobody, name, shared_tmp)
    try:
        for round_ in range(3):
            survivor, ns_survivor = _start(nobody, name, shared_tmp)
            assert ns_survivor == ns
            _end(current)  # the serving holder ends with its owner
            current = survivor
            late, ns_late = _start(nobody, name, shared_tmp)
            _end(late)
            assert ns_late == ns, f"round {round_}: a start as the server ended made its own namespace"
    finally:
        _end(current)
