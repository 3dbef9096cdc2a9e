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
sh scripts/install-cgroup-v2-vm.sh  # qemu + a kernel: tests/test_cgroup_v2_vm.py

step "a git newer than the system's, built from source in the background (tests/test_tools_bash_git.py)"
newer_git_log="$(mktemp)"
sh scripts/install-newer-git.sh /opt/shellrt-git >"$newer_git_log" 2>&1 &
newer_git_pid=$!

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

step "pytest: the analysis tests on the pure-Python analyser (the build without a compiler)"
# An editable install runs the analyser interpreted; extension modules left by an
# earlier in-place build would shadow the sources, so they go first.
remove_inplace_build() { find shellrt -name '*.so' -delete; rm -f shellrt_*__mypyc*.so; }
remove_inplace_build
SHELLRT_EXPECT_COMPILED=0 python3 -m pytest -q -p no:cacheprovider tests/test_analysis_*.py

step "compile the command analyser in place (mypyc: what 'pip install .' ships)"
# The extension modules land next to the sources and stay there (benchmarks then
# measure the shipped build). They shadow the sources: after editing an analysis
# module, rebuild (this command) or delete them (remove_inplace_build above);
# pytest refuses to start, and importing shellrt.analysis warns, while they are stale.
python3 setup.py --quiet build_ext --inplace --force

step "wait for the newer git"
if ! wait "$newer_git_pid"; then
    cat "$newer_git_log" >&2
    echo "building the newer git failed (scripts/install-newer-git.sh)" >&2
    exit 1
fi
tail -n 1 "$newer_git_log" >&2

step "pytest (compiled analyser)"
set +e
SHELLRT_EXPECT_COMPILED=1 python3 -m pytest -q -p no:cacheprovider "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: treating as a failure" >&2
    exit 1
fi
exit "$status"
