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

# Bytecode is written (some CI images set PYTHONDONTWRITEBYTECODE=1): otherwise every pytest
# process (the analysis step, each worker, the serial lane) and every child interpreter compiles
# the sources and rewrites the test modules' asserts again; a full collection here took 18.2 s of
# CPU without bytecode, 10.7 s with it. __pycache__ is git-ignored.
unset PYTHONDONTWRITEBYTECODE

# pytest-xdist workers for the parallel lane: most tests wait on bwrap, Docker, child interpreters
# and sockets, not on a core, so 3 keep CI's 2 cores busier than 2 did (docs/performance.md, "Suite
# time, round 21"). SHELLRT_TEST_WORKERS=0 runs everything in one process.
workers="${SHELLRT_TEST_WORKERS:-3}"

# Set-up steps that only the final pytest lanes need run in the background, each logging to a
# file, while the package is installed, linted, type-checked and compiled; `await_job` waits
# for one, prints its log, and fails the run when it failed (set -e does not see a `&` job).
jobs_dir="$(mktemp -d)"
trap 'rm -rf "$jobs_dir"' EXIT
declare -A job_pids=()
background() {
    local name=$1
    shift
    step "started in the background: $name"
    "$@" >"$jobs_dir/$name.log" 2>&1 &
    job_pids[$name]=$!
}
await_job() {
    local name=$1 status=0
    step "wait for: $name"
    wait "${job_pids[$name]}" || status=$?
    cat "$jobs_dir/$name.log" >&2
    if [ "$status" -ne 0 ]; then
        echo "background step '$name' failed (exit $status): its log is above" >&2
        exit 1
    fi
}

step "system packages"
bash scripts/install-system-deps.sh

# After install-system-deps.sh: these use apt-get too (the VM script for qemu, e2fsprogs and the
# kernel package; the git build with its own lists and cache), never while another apt-get installs.
background vm-kernel sh scripts/install-cgroup-v2-vm.sh  # qemu + a kernel: tests/test_cgroup_v2_vm.py
# A git newer than the system's, built from source (tests/test_tools_bash_git.py).
background newer-git sh scripts/install-newer-git.sh /opt/shellrt-git
# The docker daemon, then the test images (built locally, no registry).
background docker sh -c 'bash scripts/start-dockerd.sh && bash scripts/build-test-images.sh'

step "python package (editable, with dev and ray extras)"
# compat mode puts the repo on sys.path through a .pth file, so the top-level
# packages `shellrt` and `sandbox` always win over a same-named directory in the
# current directory (setuptools' default editable finder comes after it).
python3 -m pip install --quiet --disable-pip-version-check \
    --config-settings editable_mode=compat -e '.[dev,ray]'

# An editable install runs the analyser interpreted; extension modules left by an
# earlier in-place build would shadow the sources, so they go first.
remove_inplace_build() { find shellrt -name '*.so' -delete; rm -f shellrt_*__mypyc*.so; }
remove_inplace_build

# The command analyser compiled by mypyc (what 'pip install .' ships), built meanwhile into a
# directory of its own (its C sources, objects and mypy cache too, apart from the mypy run
# below), and copied next to the sources only after the pure-Python analysis tests.
mypyc_dir="$jobs_dir/mypyc"
mkdir -p "$mypyc_dir/lib"
background mypyc env MYPY_CACHE_DIR="$mypyc_dir/mypy-cache" python3 setup.py --quiet build_ext --force \
    --build-lib "$mypyc_dir/lib" --build-temp "$mypyc_dir/temp"

step "ruff"
python3 -m ruff check shellrt sandbox tests benchmarks

step "mypy --strict"
python3 -m mypy

step "pytest: the analysis tests on the pure-Python analyser (the build without a compiler)"
SHELLRT_EXPECT_COMPILED=0 python3 -m pytest -q -p no:cacheprovider --durations=10 -n "$workers" tests/test_analysis_*.py

await_job mypyc
step "the compiled command analyser, in place"
# The extension modules land next to the sources and stay there (benchmarks then
# measure the shipped build), as `setup.py build_ext --inplace` leaves them. They shadow
# the sources: after editing an analysis module, rebuild (that command) or delete them
# (remove_inplace_build above); pytest refuses to start, and importing shellrt.analysis
# warns, while they are stale.
built="$(cd "$mypyc_dir/lib" && find . -name '*.so' | sort)"
if [ -z "$built" ]; then
    echo "the mypyc build left no extension modules (its log is above)" >&2
    exit 1
fi
repo="$PWD"
(cd "$mypyc_dir/lib" && find . -name '*.so' -exec cp --parents {} "$repo" \;)
printf '%s\n' "$built" >&2

await_job newer-git
await_job vm-kernel
await_job docker

# Two lanes: every test not marked `serial` on $workers pytest-xdist workers (each file stays on one
# worker, the costly files handed out first: tests/conftest.py), then the `serial` ones alone
# (they count or lease machine-wide things). Both always run; either failing fails the run, and
# a lane that collected nothing (exit 5) is a failure unless the other one ran tests (extra
# arguments such as -k may leave one lane empty).
# Whether a lane is CPU-bound (more workers would not help) or waits (they would) is the first
# question of every suite-time round, and per-test CPU logs cannot answer it (dockerd, containers
# and kernel work are nobody's test): each lane's line says how busy the machine's cores were.
cpu_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }
# The Docker side's CPU (centiseconds), which no test's CPU log holds: dockerd and containerd (with
# what they reaped), and the containers (cgroup v1's cpuacct `docker` group; 0 where there is none).
docker_cs() {
    local cs=0 pid stat
    for pid in $(pidof dockerd containerd 2>/dev/null); do
        stat="$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pid/stat" 2>/dev/null)" || stat=0
        cs=$((cs + ${stat:-0} * 100 / $(getconf CLK_TCK)))
    done
    local usage=/sys/fs/cgroup/cpuacct/docker/cpuacct.usage containers=0
    [ -r "$usage" ] && containers=$(($(cat "$usage") / 10000000))
    echo "$cs $containers"
}
lane() {
    local name=$1 busy0 idle0 busy1 idle1 daemons0 containers0 daemons1 containers1
    shift
    step "pytest, $name lane (compiled analyser)"
    read -r busy0 idle0 < <(cpu_ticks)
    read -r daemons0 containers0 < <(docker_cs)
    set +e
    SHELLRT_EXPECT_COMPILED=1 python3 -m pytest -q -p no:cacheprovider --durations=25 --lane "$name" "$@"
    local status=$?
    set -e
    read -r busy1 idle1 < <(cpu_ticks)
    read -r daemons1 containers1 < <(docker_cs)
    echo "pytest $name lane: exit $status; the $(nproc) cores were busy" \
        "$(( 100 * (busy1 - busy0) / (busy1 - busy0 + idle1 - idle0 + 1) ))% of the time (whole machine);" \
        "CPU seconds of dockerd and containerd $(( (daemons1 - daemons0) / 100 )), of containers $(( (containers1 - containers0) / 100 ))" >&2
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
