#!/usr/bin/env bash
# README's test command: install everything from scratch, then lint, type-check and test.
#
#   bash scripts/test.sh            # everything (what CI runs)
#   bash scripts/test.sh -k docker  # extra arguments go to pytest
#
# Needs root for apt-get and dockerd (CI and the dev machines run as root).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

step "system packages"
bash scripts/install-system-deps.sh

step "docker daemon"
bash scripts/start-dockerd.sh

step "docker test images (built locally, no registry)"
bash scripts/build-test-images.sh

step "python package (editable, with dev and ray extras)"
# compat mode puts the repo on sys.path through a .pth file, so the top-level
# packages `shellrt` and `sandbox` always win over a same-named directory in the
# current directory (setuptools' default editable finder comes after it).
python3 -m pip install --quiet --disable-pip-version-check \
    --config-settings editable_mode=compat -e '.[dev,ray]'

step "ruff"
python3 -m ruff check shellrt sandbox tests benchmarks

step "mypy --strict"
python3 -m mypy

step "pytest"
set +e
python3 -m pytest -q -p no:cacheprovider "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: treating as a failure" >&2
    exit 1
fi
exit "$status"
