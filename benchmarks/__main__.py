"""``python -m benchmarks [--quick] [--only NAME] [--json PATH]``: every system side by side, one table per scenario.

Installs nothing: peers that are not installed are reported as skipped
(``pip install -r benchmarks/requirements-peers.txt`` to measure them).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path

import anyio

from benchmarks._harness import Table, render_table, tables_from_json, tables_to_json, write_json
from benchmarks.scenarios import SCENARIOS
from benchmarks.scenarios._common import RunConfig

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "latest.json"


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="fewer repetitions and a smaller 300 MB pass (< 3 min)"
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(SCENARIOS),
        metavar="NAME",
        help=f"run only this scenario (repeatable): {', '.join(SCENARIOS)}",
    )
    parser.add_argument(
        "--json", type=Path, default=DEFAULT_JSON, help=f"results file (default {DEFAULT_JSON})"
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        metavar="PATH",
        help="print the tables of an earlier results file (runs nothing)",
    )
    return parser.parse_args(argv)


async def _run(names: list[str], cfg: RunConfig) -> list[Table]:
    tables: list[Table] = []
    for name in names:
        module = importlib.import_module(SCENARIOS[name])
        begin = time.perf_counter()
        table: Table = await module.run(cfg)
        table.notes.append(f"scenario took {time.perf_counter() - begin:.0f} s.")
        print(render_table(table), end="\n\n", flush=True)
        tables.append(table)
    return tables


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    if args.from_json is not None:
        document = json.loads(args.from_json.read_text())
        for table in tables_from_json(document):
            print(render_table(table), end="\n\n")
        mode = " (--quick)" if document.get("quick") else ""
        machine = dict(document.get("machine", {}))
        load = ", ".join(f"{x:.1f}" for x in machine.pop("loadavg_at_end", None) or [])
        print(f"recorded{mode} in {document.get('elapsed_s', 0):.0f} s at commit {document.get('commit')};")
        print(f"machine: {machine}; load average at the end: {load or 'unknown'}")
        print(f"versions: {document.get('versions')}")
        return 0
    names = args.only or list(SCENARIOS)
    cfg = RunConfig(quick=args.quick)
    begin = time.perf_counter()
    tables = anyio.run(_run, names, cfg)
    elapsed = time.perf_counter() - begin
    write_json(args.json, tables_to_json(tables, quick=args.quick, elapsed_s=elapsed, peers=peer_versions()))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"{len(tables)} table(s) in {elapsed:.0f} s{' (--quick)' if args.quick else ''}; load average {load}; JSON: {args.json}"
    )
    return 0


def peer_versions() -> dict[str, str | None]:
    """Installed versions of the peers and optional parsers (None when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {}
    for dist in ("shellrt", "swe-rex", "inspect-ai", "bashlex", "tree-sitter", "tree-sitter-bash"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = None
    return found


if __name__ == "__main__":
    sys.exit(main())
