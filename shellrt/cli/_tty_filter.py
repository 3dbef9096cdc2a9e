"""What of a command's output ``shellrt run`` passes to the operator's terminal.

The command is hostile and its output reaches a terminal outside the sandbox: OSC 52 wrote the
operator's clipboard (``curl …|sh`` to paste later), OSC 0/2 set the window title, OSC 8 made
links whose text lies, and queries (DSR, DA, window reports, DECRQSS, OSC ``?``) make the
terminal type its answer into the operator's shell once the command has ended; a DCS string
(tmux passthrough) carries any of them past a multiplexer (red team round 19). On a terminal,
text, colours (SGR), the cursor moves and erases progress bars use are kept; every other
escape sequence, every C1 control and ENQ (answerback) are left out, and the count is reported at the end (the
spool keeps every byte). Pipes and files get every byte as before.

What is kept outlives the command (round 23): conceal (``ESC[8m``) or black on black hid the lines
shellrt writes after the output ("left out …", "reverted: …"), ``ESC(0`` or SO drew them as
line-drawing glyphs, a hidden cursor stayed hidden in the operator's shell. So a terminal stream
that got an escape or SO is reset (`RESET`) when the output ends, before shellrt writes its own.
"""

from __future__ import annotations

import os
import re
import sys
from typing import BinaryIO

from shellrt.protocol.escapes import (
    ABORTS,
    BEL,
    C1_CONTROLS,
    C1_CSI,
    C1_LEAD,
    C1_STRINGS,
    CSI_BODY,
    CSI_INTERMEDIATES,
    ESC,
    ESC_CSI,
    ESC_STRINGS,
    FINALS,
    ST_7BIT,
    char_class,
)

__all__ = ["TerminalFilter", "TerminalOutput"]

_ENQ = 0x05
#: Where text stops: ESC, ENQ (the terminal types its answerback), or the lead byte of
#: U+0080..U+00BF (C1 controls among them).
_SPECIAL = re.compile(char_class((ESC, C1_LEAD, _ENQ)).encode("ascii"))
#: What ends a dropped string here: BEL, CAN or SUB for every kind (a terminal ends only an OSC
#: at BEL, but it never saw the string's start, so the rest is text to it too), and ``ESC \``
#: (`_ST_FINAL` after ESC); the C1 ST does not (it is dropped with the string), and a line end
#: does (`feed`).
_STRING_STOPS = frozenset({BEL, *ABORTS})
_ST_FINAL = ST_7BIT[1]
#: A whole kept CSI with plain parameters (the common case, judged without the state machine).
_PLAIN_CSI = re.compile(b"\x1b\\[(?:[0-9;:]{0,32}[mABCDEFGHfdKsu]|[012]?J)")
#: Erase in display kept with these parameters only: the screen, never ``3`` (the scrollback,
#: everything the operator's terminal showed before the command; round 55).
_SCREEN_ERASES = frozenset({b"", b"0", b"1", b"2"})
#: CSI final bytes kept: SGR, cursor moves, erase in line/display, save/restore cursor.
_CSI_KEPT = frozenset(b"mABCDEFGHfdKJsu")
_ERASE_DISPLAY = ord("J")
#: Private-mode CSI kept: show and hide the cursor (progress bars).
_CSI_PRIVATE_KEPT = frozenset({b"?25h", b"?25l"})
#: Longest CSI held while waiting for its final byte; longer ones are dropped.
_MAX_CSI = 64
#: Two-byte escapes kept: save/restore cursor (ESC 7/8); charset designations take one byte more.
_ESC_KEPT = frozenset(b"78")
_ESC_CHARSET = frozenset(b"()*+")


#: Undoes what a kept sequence leaves behind: SGR reset, G0 and G1 back to ASCII, shift-in, cursor shown.
RESET = b"\x1b[0m\x1b(B\x1b)B\x0f\x1b[?25h"


class TerminalFilter:
    """Incremental: sequences split across chunks are judged whole."""

    def __init__(self) -> None:
        self.dropped = 0
        #: An escape or SO went by: the terminal may keep a state shellrt's own lines would inherit.
        self.touched = False
        self._state = "text"
        self._held = bytearray()

    def feed(self, data: bytes) -> bytes:
        if not self.touched and (b"\x1b" in data or b"\x0e" in data):
            self.touched = True
        if self._state == "text" and _SPECIAL.search(data) is None:
            return data  # the common chunk: text only
        out = bytearray()
        held = self._held
        index, end = 0, len(data)
        while index < end:
            state = self._state
            if state == "text":  # copy up to the next ESC or C1 lead byte at once
                found = _SPECIAL.search(data, index)
                stop = end if found is None else found.start()
                out += data[index:stop]
                index = stop
                if index == end:
                    break
                kept = _PLAIN_CSI.match(data, index)  # colours and cursor moves, whole: at once
                if kept is not None:
                    out += kept.group()
                    index = kept.end()
                    continue
            byte = data[index]
            index += 1
            if state == "text":
                if byte == ESC:
                    held[:] = b"\x1b"
                    self._state = "esc"
                elif byte == C1_LEAD:
                    held[:] = bytes([C1_LEAD])
                    self._state = "c2"
                elif byte == _ENQ:
                    self.dropped += 1
                else:
                    out.append(byte)
            elif state == "c2":  # U+0080..U+009F (C1 controls, as some terminals read them) dropped
                self._state = "text"
                if byte in C1_CONTROLS:
                    self.dropped += 1
                    self._state = "string" if byte in C1_STRINGS else "text"
                    if byte == C1_CSI:
                        held[:] = b""
                        self._state = "csi_drop"
                else:
                    out.append(C1_LEAD)
                    self._reenter(byte, out)
            elif state == "esc":
                self._after_esc(byte, out)
            elif state == "charset":
                out += held
                out.append(byte)
                self._state = "text"
            elif state == "esc_skip":  # the final byte of a dropped ESC <intermediate> sequence
                self._state = "text"
            elif state in ("csi", "csi_drop"):
                if byte in FINALS:  # the final byte
                    held.append(byte)
                    body = bytes(held[2:-1])
                    if state == "csi" and (
                        (byte in _CSI_KEPT and body[:1] not in (b"?", b">", b"<", b"=")
                         and not any(b in CSI_INTERMEDIATES for b in body)
                         and (byte != _ERASE_DISPLAY or body in _SCREEN_ERASES))
                        or body + bytes([byte]) in _CSI_PRIVATE_KEPT
                    ):
                        out += held
                    elif state == "csi":
                        self.dropped += 1
                    self._state = "text"
                elif byte not in CSI_BODY:  # malformed: dropped, the byte read as text again
                    if state == "csi":
                        self.dropped += 1
                    self._reenter(byte, out)
                elif len(held) > _MAX_CSI:  # too long: dropped whole, up to its final byte
                    if state == "csi":
                        self.dropped += 1
                        self._state = "csi_drop"
                else:
                    held.append(byte)
            elif state == "string":  # OSC, DCS, SOS, PM, APC: dropped to BEL, ST, CAN or SUB
                if byte == ESC:
                    self._state = "string_esc"
                elif byte in _STRING_STOPS:
                    self._state = "text"
                elif byte == 0x0A:  # unterminated: the terminal never saw its start, so a line ends it
                    self._state = "text"
                    out.append(byte)
            elif state == "string_esc":
                self._state = "text"
                if byte != _ST_FINAL:
                    self._reenter(byte, out) if byte != ESC else self._start_esc()
        return bytes(out)

    def _start_esc(self) -> None:
        self._held[:] = b"\x1b"
        self._state = "esc"

    def _reenter(self, byte: int, out: bytearray) -> None:
        """Read ``byte`` again as text (it ended or broke a sequence)."""
        self._state = "text"
        if byte == ESC:
            self._start_esc()
        elif byte == C1_LEAD:
            self._held[:] = bytes([C1_LEAD])
            self._state = "c2"
        elif byte == _ENQ:
            self.dropped += 1
        else:
            out.append(byte)

    def _after_esc(self, byte: int, out: bytearray) -> None:
        held = self._held
        if byte == ESC_CSI:
            held.append(byte)
            self._state = "csi"
        elif byte in ESC_STRINGS:
            self.dropped += 1
            self._state = "string"
        elif byte in _ESC_KEPT:
            out += b"\x1b"
            out.append(byte)
            self._state = "text"
        elif byte in _ESC_CHARSET:
            held.append(byte)
            self._state = "charset"
        elif byte == ESC:
            self.dropped += 1
        elif byte in CSI_INTERMEDIATES:  # ESC # 8 (fill the screen with E), ESC % ...: one byte more
            self.dropped += 1
            self._state = "esc_skip"
        else:
            self.dropped += 1  # ESC c (reset), ESC # 8 (fill the screen), keypad modes...
            self._state = "text"
            if not 0x20 <= byte <= 0x7E:
                self._reenter(byte, out)


class TerminalOutput:
    """Per stream (stdout, stderr): filtered when it is a terminal, every byte otherwise."""

    def __init__(self) -> None:
        self._filters: dict[int, TerminalFilter | None] = {}
        self._targets: dict[int, BinaryIO] = {}

    def __call__(self, target: BinaryIO, chunk: bytes) -> bytes:
        try:
            key = target.fileno()
        except (AttributeError, OSError, ValueError):
            return chunk
        if key not in self._filters:
            self._filters[key] = TerminalFilter() if os.isatty(key) else None
            self._targets[key] = target
        found = self._filters[key]
        return chunk if found is None else found.feed(chunk)

    def reset(self) -> None:
        """`RESET` on each terminal stream whose output may have left a state (at most once each)."""
        for key, found in self._filters.items():
            if found is not None and found.touched:
                found.touched = False
                try:
                    self._targets[key].write(RESET)
                    self._targets[key].flush()
                except (OSError, ValueError):
                    pass  # the terminal is gone: nothing of ours reaches it either

    def report(self) -> None:
        """The terminal reset (`reset`), then one line on stderr when sequences were left out (the
        spool has them all). Called once the command's output has ended, before shellrt's own lines."""
        self.reset()
        dropped = sum(f.dropped for f in self._filters.values() if f is not None)
        if dropped:
            print(
                f"shellrt run: left out {dropped:,} terminal control sequence(s) of the command's output "
                "(clipboard, title, links, queries: they act on your terminal, outside the sandbox); "
                "pipe the output (| cat -v) or use --json to see every byte",
                file=sys.stderr,
            )
