#!/usr/bin/env bash
# README's test command: install everything from scratch, then lint, type-check and test.
#
#   bash scripts/test.sh            # everything (what CI runs)
#   bash scripts/test.sh -k docker  # extra arguments go to pytest
#
# Needs root for apt-get and dockerd (CI and the dev machines run as root).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s (%s)\n' "$*" "$(date -u +%T)" >&2; }

# pytest-xdist workers for the parallel lane (most tests wait on processes, containers and
# sockets, not on a core; 2 matches CI's 2 cores). SHELLRT_TEST_WORKERS=0 runs everything in one process.
workers="${SHELLRT_TEST_WORKERS:-2}"

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
SHELLRT_EXPECT_COMPILED=0 python3 -m pytest -q -p no:cacheprovider --durations=10 -n "$workers" tests/test_analysis_*.py

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

# Two lanes: every test not marked `serial` on $workers pytest-xdist workers (a module sharing a
# module-scoped fixture stays on one worker: tests/conftest.py), then the `serial` ones alone
# (they count or lease machine-wide things). Both always run; either failing fails the run, and
# a lane that collected nothing (exit 5) is a failure unless the other one ran tests (extra
# arguments such as -k may leave one lane empty).
lane() {
    local name=$1
    shift
    step "pytest, $name lane (compiled analyser)"
    set +e
    SHELLRT_EXPECT_COMPILED=1 python3 -m pytest -q -p no:cacheprovider --durations=25 --lane "$name" "$@"
    local status=$?
    set -e
    echo "pytest $name lane: exit $status" >&2
    return "$status"
}
if [ "$workers" -gt 0 ]; then
    parallel_status=0
    lane parallel -n "$workers" --dist loadgroup "$@" || parallel_status=$?
    serial_status=0
    lane serial "$@" || serial_status=$?
else
    parallel_status=0
    lane all "$@" || parallel_status=$?
    serial_status=5
fi
if [ "$parallel_status" -eq 5 ] && [ "$serial_status" -eq 5 ]; then
    echo "pytest collected no tests: treating as a failure" >&2
    exit 1
fi
for status in "$parallel_status" "$serial_status"; do
    if [ "$status" -ne 0 ] && [ "$status" -ne 5 ]; then
        exit "$status"
    fi
done
step "all tests passed"
