"""Wire formats of the docker backend, kept free of the docker SDK so they can be unit-tested.

Two formats meet here:

* The executor's event lines (see ``_executor.sh``); `parse_event` reads them.
* The request file the executor sources: sh single-quoted assignments, which
  carry any byte but NUL (and argv/env cannot contain NUL), so the shell needs
  no decoding step and no fork to read a request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

__all__ = [
    "EVENT_LINE_MAX",
    "EXECUTOR_PROTOCOL_VERSION",
    "EXECUTOR_SHELLS",
    "Event",
    "LineSplitter",
    "executor_script",
    "parse_event",
    "parse_number",
    "render_request",
    "sh_quote",
    "task_marker",
]

#: Version the executor announces in its ``H`` line.
EXECUTOR_PROTOCOL_VERSION = "2"
#: The shells the executor chooses from (``SHELLP`` in ``executor.sh``). Its hello names one; the
#: image's ``/bin/sh`` writes the hello, so any other word is a lie the host must not carry into
#: an argv, a log or a command line an operator runs (red team round 11).
EXECUTOR_SHELLS = frozenset(("/bin/sh", "/bin/bash", "/usr/bin/bash"))
#: Longest event line the host reads (its newline excluded): ``PIPE_BUF``. The executor writes each
#: line in one ``write`` below it (its longest, an exit with a 1,000-byte cwd, is ~1,040 bytes), so
#: a longer one is the image's ``/bin/sh``'s and is dropped unread: at 1 MiB each, a few hundred
#: held gigabytes of the host's memory (red team round 36).
EVENT_LINE_MAX = 4096
#: Largest pid the kernel hands out (``PID_MAX_LIMIT`` on 64-bit).
PID_MAX = 1 << 22


def executor_script() -> str:
    """The executor's POSIX sh source (package data ``sandbox/docker/executor.sh``)."""
    return resources.files("sandbox.docker").joinpath("executor.sh").read_text(encoding="utf-8")


class LineSplitter:
    """Splits a byte stream into complete lines (without the newline)."""

    def __init__(self, max_line: int = 1 << 20) -> None:
        self._buf = bytearray()
        self._max = max_line
        #: Inside a runaway line: everything up to its newline is dropped too (its tail is
        #: no line of its own, whatever it looks like).
        self._skipping = False
        #: Bytes dropped so far as parts of runaway lines (their newlines included).
        self.dropped = 0

    def feed(self, data: bytes) -> list[str]:
        """Add bytes; return the complete lines they finish, decoded as UTF-8 (replacing errors)."""
        self._buf += data
        lines: list[str] = []
        while True:
            nl = self._buf.find(b"\n")
            if nl > self._max:  # a whole runaway line in one piece: dropped as well
                self._skipping = True
            if nl < 0:
                if len(self._buf) > self._max:  # a runaway line: drop it rather than grow forever
                    self.dropped += len(self._buf)
                    self._buf.clear()
                    self._skipping = True
                return lines
            if not self._skipping:
                lines.append(self._buf[:nl].decode("utf-8", "replace"))
            else:
                self.dropped += nl + 1
            self._skipping = False
            del self._buf[: nl + 1]


@dataclass(frozen=True, slots=True)
class Event:
    """One executor event line: ``kind`` (H S E X K P Z), the command ``id`` and the remaining fields."""

    kind: str
    id: str
    #: Everything after the id, unsplit (a final cwd may contain spaces).
    rest: str

    @property
    def fields(self) -> tuple[str, ...]:
        """The words of `rest`, split when asked for: a filed event holds one string, never one per
        word (a line of ``ab ab ...`` held ~25 bytes of the host's memory per byte; round 36)."""
        return tuple(self.rest.split(" ")) if self.rest else ()


def parse_event(line: str) -> Event | None:
    """Parse one event line; None for lines that are not events (noise is ignored, not fatal)."""
    parts = line.split(" ", 2)
    if not parts or parts[0] not in {"H", "S", "E", "X", "K", "P", "Z"} or len(parts) < 2:
        return None
    rest = parts[2] if len(parts) > 2 else ""
    return Event(kind=parts[0], id=parts[1], rest=rest)


def parse_number(text: str, high: int, *, low: int = 0) -> int | None:
    """``text`` as an integer in [``low``, ``high``] when it is plain ASCII digits, else None.

    ``int()`` also takes signs, spaces, underscores and any script's digits (``"\u0663"`` is 3),
    and a 4,300-digit string makes it raise: a number on the channel is the image's word."""
    if not text or len(text) > len(str(high)) or not all("0" <= c <= "9" for c in text):
        return None
    value = int(text)
    return value if low <= value <= high else None


def parse_exit(event: Event) -> tuple[int, bool, str | None, bool]:
    """Decode an ``X`` event's rest (``<rc> <oom>[s] [<cwd>]``) into (exit code, oom, cwd, signalled).

    ``signalled``: the helper saw the command die by a signal (``s``); without it an exit code of
    128+N is the command's own ``exit`` (round 38: ``exit 137`` read as SIGKILL).
    Raises `ValueError` for an exit code that is not 0-255 in ASCII digits or an oom flag
    other than 0 or 1 (sh's ``$?`` is never anything else: the line is forged). A cwd holding
    U+FFFD is not reported: the line's bytes were not UTF-8 there (`LineSplitter` replaced them),
    so it names another directory than the command's (``/tmp/\\xff`` came out as ``/tmp/\\ufffd``,
    which a command may make too: red team round 27)."""
    rc_s, _, tail = event.rest.partition(" ")
    oom_s, _, cwd = tail.partition(" ")
    rc = parse_number(rc_s, 255)
    if rc is None or oom_s not in ("0", "1", "0s", "1s"):
        raise ValueError(f"malformed exit event {event.rest[:80]!r}")
    oom, signalled = oom_s[0] == "1", oom_s.endswith("s")
    if "\ufffd" in cwd:
        return rc, oom, None, signalled
    return rc, oom, cwd or None, signalled


def sh_quote(value: str) -> str:
    """Quote ``value`` as one sh word (single quotes; embedded quotes as ``'\\''``)."""
    return "'" + value.replace("'", "'\\''") + "'"


def task_marker(task_id: str) -> str:
    """The environment entry that tags every process of a command (the kill path looks for it)."""
    return f"SHELLRT_TASK=x{task_id}x"


def render_request(
    task_id: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    cwd_file: str | None,
    user: tuple[int, int],
    call_user: str | None = None,
    private_uid: bool = False,
) -> str:
    """Render the request file the executor sources before starting a command.

    ``user`` is the session's (uid, gid) the command runs as (``priv drop``,
    no supplementary groups). ``call_user`` (``name``, ``uid``, ``name:group``,
    ``uid:gid``) replaces it for this command: the executor resolves it
    through the image's ``/etc/passwd`` and ``/etc/group`` (``CL=1``).
    ``private_uid``: ``user`` is the session's leased uid, held by nothing else on the host
    (``CP=1``): only then may the command make inotify instances, which the kernel counts per
    host uid (any other uid is shared with the host's programs; red team round 22).
    The command runs as ``priv drop UID GID GROUPS -- argv``: its environment
    is exactly the request's (plus the marker the kill path looks for),
    whatever the executor's own is, handed to the helper as exported
    ``SHELLRT_E<n>='NAME=VALUE'`` variables: in the environment, which only
    the executor's identity may read, never on a command line, which every
    process in the container may read (commands of other per-call users too).
    """
    entries = [task_marker(task_id), *(f"{k}={v}" for k, v in env.items())]
    exports = " ".join(f"SHELLRT_E{i}={sh_quote(e)}" for i, e in enumerate(entries))
    if call_user is None:
        who = [f"CU={int(user[0])}", f"CG={int(user[1])}", *(["CP=1"] if private_uid else [])]
    else:
        name, _, group = call_user.partition(":")
        who = [f"CU={sh_quote(name)}", f"CG={sh_quote(group)}", "CL=1"]
    lines = [
        f"C={sh_quote(cwd)}",
        f"CWDF={sh_quote(cwd_file or '')}",
        *who,
        f"export {exports}",
        "set -- " + " ".join(sh_quote(w) for w in argv),
    ]
    return "\n".join(lines) + "\n"
