#!/bin/sh
# Make a Docker daemon usable for the docker sandbox tests (CI and local dev).
#
# Installs docker.io from Debian's packages when the client/daemon is missing,
# starts dockerd in the background when `docker info` fails, and waits up to
# ${DOCKERD_WAIT:-60} seconds for it to answer. Idempotent: a running daemon is
# left alone. The daemon log goes to ${DOCKERD_LOG:-/tmp/dockerd.log}.
set -eu

wait_s=${DOCKERD_WAIT:-60}
log=${DOCKERD_LOG:-/tmp/dockerd.log}

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    echo "start-dockerd: installing docker.io" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq docker.io >/dev/null
fi

if docker info >/dev/null 2>&1; then
    echo "start-dockerd: daemon already running" >&2
    exit 0
fi

echo "start-dockerd: starting dockerd (log: $log)" >&2
nohup dockerd >"$log" 2>&1 &

i=0
while [ "$i" -lt "$wait_s" ]; do
    if docker info >/dev/null 2>&1; then
        echo "start-dockerd: daemon up after ${i}s" >&2
        exit 0
    fi
    i=$((i + 1))
    sleep 1
done
echo "start-dockerd: dockerd did not answer within ${wait_s}s; last log lines:" >&2
tail -n 30 "$log" >&2 || true
exit 1
