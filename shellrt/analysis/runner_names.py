"""Names of options and settings whose value is a program the tool runs (``--pager``, ``CC``…).

Why a module of its own: the permission engine reads an option's run-time value as a command no rule
can read when the option's name says it is one (`permissions.embedded`), and the analysis reads the
same names inside an options variable (``GOFLAGS="-toolexec=$x"``, ``CFLAGS="-fuse-ld=$x"``,
``RUSTFLAGS="-C linker=$x"``): one list, so the two never disagree.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["OPTIONS_VARIABLE", "RUNS_NAME"]

#: The end of an option's or a setting's name that says its value is a program to run
#: (``--pager``, ``--photo-viewer``, ``ui.editor``, ``diff-cmd``, ``--run_under``, ``-toolexec``).
RUNS_NAME: Final = re.compile(
    r"(?i)(?:cmd|command|exec|pager|editor|shell|viewer|browser|httpd|preview|invoke|runner|run[-_]under|"
    r"askpass|helper|wrapper|sendmail|prepipe|rsh|"
    # Round 36 (analysis2): names that say "a program" without saying "run": `clang -fuse-ld=`,
    # `--ld-path=`, cmake's `CMAKE_C_COMPILER`, `…_LAUNCHER`, `CMAKE_MAKE_PROGRAM`, `CMAKE_LINKER`,
    # pytest's `--pdbcls` (a module it imports), hyperfine's `--prepare`/`--setup`/`--cleanup`,
    # lldb's `--one-line`, nano's `--speller`, git's `difftool --tool`, docker's `--entrypoint`,
    # maven's `exec.executable`, gpg's `--exec-path` (where its helper programs are found).
    r"compiler|launcher|linker|fuse-ld|ld-path|program|pdbcls|prepare|setup|cleanup|one-line|speller|tool|"
    r"entrypoint|executable|exec-path|"
    # Round 37: pandoc's `--pdf-engine`, git daemon's `--access-hook`, the JVM's `-XX:OnError=` and
    # `-XX:OnOutOfMemoryError=` (also inside `JAVA_TOOL_OPTIONS`), latexmk's `-pdflatex=`, `-dvipdf=`...
    r"engine|hook|onerror|onoutofmemoryerror|latex|dvipdf|ps2pdf|dvips|makeindex|bibtex|biber)[:'\"]*$"
)
#: Variables that hold options for a program (``GOFLAGS``, ``CFLAGS``, ``RUSTFLAGS``, ``MAKEOPTS``).
OPTIONS_VARIABLE: Final = re.compile(r"[A-Z0-9_]*(?:FLAGS|OPTS|OPTIONS|ARGS)")
