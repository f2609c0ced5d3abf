#!/bin/sh
# Make ready what tests/test_container_docker.py needs, where this machine allows it (CI runs as
# root on Debian bookworm): Debian's docker.io and docker-compose (Compose v1), Compose v2 (trixie's
# docker-compose package is a static plugin that runs here), a dockerd (overlay2 where containers
# can mount it, else vfs) on a data root of its own per storage driver, the local base image
# (tools/make_base_image.sh, as no image registry is reachable) and the wheelhouse (make
# wheelhouse), so the image builds without asking any index.
#
#   tools/ci_docker.sh            # prints what it did and how long it took
#
# Exits 0 when a daemon answers; else non-zero, saying why (the container tests then skip, each
# saying why). A daemon it started has its PID in /tmp/hermes-ci-dockerd.pid and logs to
# /tmp/hermes-ci-dockerd.log: stop it with `kill "$(cat /tmp/hermes-ci-dockerd.pid)"`.
set -eu
cd "$(dirname "$0")/.."
BASE_TAG=hermes-server-base:bookworm
PLUGINS=/usr/local/lib/docker/cli-plugins
began=$(date +%s)
say() { echo "ci_docker: $* ($(( $(date +%s) - began )) s)"; }

start_dockerd() {  # $1: the storage driver; waits until the daemon answers
    # A data root per driver: BuildKit keeps its cache records beside the layers, and records another
    # driver (or another daemon on /var/lib/docker) wrote name layers this one lacks, which fails a
    # later build at its first step ("failed to read dockerfile: stat /var/lib/docker/vfs/dir/…").
    dockerd --storage-driver "$1" --data-root "/var/lib/hermes-ci-docker/$1" >/tmp/hermes-ci-dockerd.log 2>&1 &
    echo $! >/tmp/hermes-ci-dockerd.pid
    tries=0
    until docker info >/dev/null 2>&1; do
        tries=$((tries + 1))
        if [ "$tries" -gt 60 ] || ! kill -0 "$(cat /tmp/hermes-ci-dockerd.pid)" 2>/dev/null; then
            say "dockerd ($1) did not start: $(tail -n 3 /tmp/hermes-ci-dockerd.log | tr '\n' ' ')"
            return 1
        fi
        sleep 0.5
    done
}

stop_dockerd() {  # the daemon this script started, by its PID
    pid=$(cat /tmp/hermes-ci-dockerd.pid 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
    rm -f /tmp/hermes-ci-dockerd.pid
}

containers_run() {  # whether a container starts on this daemon: /bin/true and its libraries as an image
    probe=$(mktemp -d /tmp/hermes-ci-probe.XXXXXX)
    for file in /bin/true $(ldd /bin/true | grep -o '/[^ ]*'); do
        mkdir -p "$probe$(dirname "$file")" && cp "$file" "$probe$file"
    done
    ok=1
    if tar -C "$probe" -c . | docker import - hermes-ci-probe:latest >/dev/null 2>&1 \
        && docker run --rm --network host hermes-ci-probe:latest /bin/true >/dev/null 2>&1; then
        ok=0
    fi
    docker rmi hermes-ci-probe:latest >/dev/null 2>&1 || true
    rm -rf "$probe"
    return $ok
}

if docker info >/dev/null 2>&1; then
    rm -f /tmp/hermes-ci-dockerd.pid  # a daemon someone else started: not this run's to stop
else
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        say "no Docker daemon answers, and only root with apt-get can start one here"
        exit 1
    fi
    missing=""
    for pair in dockerd:docker.io docker-compose:docker-compose debootstrap:debootstrap; do
        command -v "${pair%%:*}" >/dev/null 2>&1 || missing="$missing ${pair#*:}"
    done
    if [ -n "$missing" ]; then
        apt-get update -qq
        # shellcheck disable=SC2086 # one word per package
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
        say "installed$missing"
    fi
    # overlay2 where the kernel lets a container mount it (builds and starts are several times
    # faster than on vfs, which copies every layer); else vfs, which works anywhere.
    if start_dockerd overlay2 && containers_run; then
        driver=overlay2
    else
        stop_dockerd
        start_dockerd vfs || exit 1
        driver=vfs
    fi
    say "dockerd started (pid $(cat /tmp/hermes-ci-dockerd.pid), $driver)"
fi

if ! docker compose version >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    # Compose v2 from Debian trixie (bookworm has none): apt fetches it from trixie's lists in a folder
    # of its own, leaving this machine's sources and lists as they are.
    apt_dir=$(mktemp -d /tmp/hermes-ci-trixie.XXXXXX)
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    echo "deb http://deb.debian.org/debian trixie main" >"$apt_dir/sources.list"
    set -- -q -o Dir::Etc::sourcelist="$apt_dir/sources.list" -o Dir::Etc::sourceparts=- \
        -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache" -o APT::Get::List-Cleanup=0
    if apt-get "$@" update >/dev/null 2>&1 && (cd "$apt_dir" && apt-get "$@" download docker-compose >/dev/null 2>&1); then
        dpkg-deb -x "$apt_dir"/docker-compose_*.deb "$apt_dir/root"
        mkdir -p "$PLUGINS"
        cp "$apt_dir/root/usr/libexec/docker/cli-plugins/docker-compose" "$PLUGINS/"
        say "Compose v2 $(docker compose version --short 2>/dev/null) installed in $PLUGINS"
    else
        say "Compose v2 could not be fetched from Debian trixie: its compose tests run with v1 only"
    fi
    rm -rf "$apt_dir"
fi

if ! docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
    tools/make_base_image.sh "$BASE_TAG" >/tmp/hermes-ci-base.log 2>&1 \
        || { say "the base image could not be made: $(tail -n 3 /tmp/hermes-ci-base.log | tr '\n' ' ')"; exit 1; }
    say "base image $BASE_TAG made from Debian's packages"
fi

make -s wheelhouse >/dev/null
say "ready: Docker $(docker version --format '{{.Server.Version}}'), $(docker-compose version --short 2>/dev/null || echo 'no Compose v1'), wheelhouse of $(find wheelhouse -name '*.whl' | wc -l) wheels"
