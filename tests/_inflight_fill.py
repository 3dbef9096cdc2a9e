"""Probe text shared by the fd-budget attacks (rounds 47-48): a command's Python that queues 253
copies of one descriptor a message on stream pairs until the kernel refuses (ETOOMANYREFS at the
uid's in-flight limit), and then holds them until the test writes ``done`` (30 s at most)."""

from __future__ import annotations

#: Sends; leaves ``pairs`` (held), ``sent`` and ``why`` (the refusal's text, "none" when 400 pairs
#: took them all). Imports ``array``, ``os``, ``socket`` and ``time`` for the text after it.
SEND_UNTIL_REFUSED = r"""
import array, os, socket, time
pairs, sent, why = [], 0, "none"
fds = array.array("i", [0] * 253)
while why == "none" and len(pairs) < 400:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    a.setblocking(False)
    pairs.append((a, b))
    while True:
        try:
            a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
            sent += 253
        except BlockingIOError:
            break
        except OSError as exc:
            why = os.strerror(exc.errno)
            break
"""

#: Says it is ready (a ``ready`` file in the cwd), then holds everything until ``done`` appears.
HOLD_UNTIL_DONE = r"""
open("ready", "w").close()
end = time.monotonic() + 30
while not os.path.exists("done") and time.monotonic() < end:
    time.sleep(0.05)
"""
