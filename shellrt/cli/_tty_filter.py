"""What of a command's output may reach the operator's terminal: text, colours and cursor moves.

``shellrt run`` relays a hostile command's bytes. A terminal obeys some of them by typing a reply
into its own input, which is the operator's shell once the command ends (a title report
``CSI 21t``, ``DECRQSS``, a status report ``CSI 6n``, ``ENQ``'s answerback), and others write the
clipboard (OSC 52) or the title. Red team round 19: keystroke injection with no fd at all. So when
the CLI writes to a terminal, every string control (OSC, DCS, APC, PM, SOS), every C1 control,
``ENQ`` and every CSI sequence but the allow-listed display ones are dropped; a pipe or a file
still gets every byte (the spool on disk always does).
"""

from __future__ import annotations

import re

__all__ = ["TerminalFilter"]

_ESC, _BEL, _CAN, _SUB, _ENQ = 0x1B, 0x07, 0x18, 0x1A, 0x05
#: ESC followed by these starts a string the terminal reads to its terminator: OSC, DCS, APC, PM, SOS.
_STRING_STARTS = frozenset(b"]P_^X")
#: CSI finals that only draw: SGR (colours), cursor moves, erases, scrolling, insert/delete.
_CSI_DRAWS = frozenset(b"mABCDEFGHJKSTfdXP@LMrsu")
#: CSI parameters allowed with a drawing final: digits and separators, nothing private.
_CSI_PARAMS = frozenset(b"0123456789;:")
#: A CSI sequence with more parameter bytes than this is dropped whole (no terminal needs more).
_CSI_MAX = 64
_NORMAL, _AFTER_ESC, _CSI, _STRING, _STRING_ESC, _AFTER_C2 = range(6)
#: The bytes that end a plain run (NORMAL) or a dropped string (STRING): everything between is copied
#: or skipped at once, so plain text costs a regex search, not a Python step per byte.
_NORMAL_STOPS = re.compile(rb"[\x1b\xc2\x05]")
_STRING_STOPS = re.compile(rb"[\x07\x18\x1a\x1b\n]")


class TerminalFilter:
    """One output stream's filter; `feed` takes chunks as they come (sequences may span chunks)."""

    def __init__(self) -> None:
        self._state = _NORMAL
        self._csi = bytearray()

    def feed(self, chunk: bytes) -> bytes:
        """What of ``chunk`` the terminal may see."""
        out = bytearray()
        pos, end = 0, len(chunk)
        while pos < end:
            if self._state in (_NORMAL, _STRING):
                found = (_NORMAL_STOPS if self._state == _NORMAL else _STRING_STOPS).search(chunk, pos)
                stop = found.start() if found else end
                if self._state == _NORMAL:
                    out += chunk[pos:stop]
                pos = stop
                if pos == end:
                    break
            self._step(chunk[pos], out)
            pos += 1
        return bytes(out)

    def _step(self, byte: int, out: bytearray) -> None:
        state = self._state
        if state == _NORMAL:
            if byte == _ESC:
                self._state = _AFTER_ESC
            elif byte == 0xC2:  # maybe a C1 control encoded in UTF-8 (U+0080..U+009F)
                self._state = _AFTER_C2
            elif byte != _ENQ:
                out.append(byte)
        elif state == _AFTER_C2:
            self._state = _NORMAL
            if byte < 0x80 or byte > 0x9F:  # not a C1 control: the byte pair was text
                out.append(0xC2)
                self._step(byte, out)
            elif byte == 0x9B:  # CSI
                self._state, self._csi = _CSI, bytearray()
            elif byte in (0x90, 0x98, 0x9D, 0x9E, 0x9F):  # DCS, SOS, OSC, PM, APC
                self._state = _STRING
        elif state == _AFTER_ESC:
            if byte == ord("["):
                self._state, self._csi = _CSI, bytearray()
            elif byte in _STRING_STARTS:
                self._state = _STRING
            else:  # a two-byte escape (charset, keypad mode, save cursor): its bytes go on as they are
                self._state = _NORMAL
                out.append(_ESC)
                self._step(byte, out)
        elif state == _CSI:
            if 0x40 <= byte <= 0x7E:  # the final byte: too long a sequence is dropped whole
                self._state = _NORMAL
                if len(self._csi) <= _CSI_MAX and self._draws(bytes(self._csi), byte):
                    out += b"\x1b[" + self._csi + bytes([byte])
            elif byte < 0x20:  # abandoned (CAN, SUB, ESC, a control): the terminal never saw its start
                self._state = _AFTER_ESC if byte == _ESC else _NORMAL
            elif len(self._csi) <= _CSI_MAX:
                self._csi.append(byte)
        elif state == _STRING:
            if byte == _ESC:
                self._state = _STRING_ESC
            elif byte in (_BEL, _CAN, _SUB):
                self._state = _NORMAL
            elif byte == ord("\n"):  # the terminal never saw the start: end the drop at a line
                self._state = _NORMAL
                out.append(byte)
        elif state == _STRING_ESC:
            self._state = _NORMAL if byte == ord("\\") else _STRING

    @staticmethod
    def _draws(params: bytes, final: int) -> bool:
        if final in (ord("h"), ord("l")):  # modes: only showing and hiding the cursor (progress bars)
            return params == b"?25"
        return final in _CSI_DRAWS and all(b in _CSI_PARAMS for b in params)
