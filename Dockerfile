# hermes-server: a local, faithful Hermes Agent session API (hermes-agent 0.19.0) for connector
# tests and CI, with upstream's container contract: home at /opt/data, user hermes (uid and gid
# 10000, remapped by HERMES_UID/HERMES_GID or PUID/PGID), `gateway run` as upstream's command.
#
#   docker build -t hermes-server .
#   docker run -p 8642:8642 -e API_SERVER_KEY=change-me-0123456789abcdef -v "$PWD/hermes:/opt/data" hermes-server gateway run
#
# Configure with the environment variables of `hermes-server serve --help` (README table), or
# in /opt/data/.env as upstream reads it. docs/container.md has the whole contract.
# tests/test_container.py replays the install and start steps below and lints this file;
# tests/test_container_docker.py (`make test-container`) builds and runs it where Docker is.
# Without a registry: `make wheelhouse` and a base made from Debian's packages (docs/container.md),
# passed with --build-arg BASE=hermes-server-base:bookworm: then the build reaches nothing.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Debian's curl and wget, so the health checks compose files wrote for upstream's image
# (curl -f / -fsS / -sf, wget -q -O- / --spider on /health) pass unchanged. A base made by
# tools/make_base_image.sh has both already, and then no Debian mirror is asked. Whatever
# bookworm's security updates ship, not a pinned version: a pin would break every build once
# the mirror moves on.
# hadolint ignore=DL3008
RUN if ! command -v curl >/dev/null || ! command -v wget >/dev/null; then \
        apt-get update && apt-get install -y --no-install-recommends curl wget \
        && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin; \
    fi

WORKDIR /app

# Every package pinned (requirements.lock); dependencies first, so a source change does not
# reinstall them. From the wheels `make wheelhouse` downloaded when there are any (then without
# asking an index at all), else from the package registry.
COPY requirements.lock ./
COPY wheelhouse/ wheelhouse/
RUN if [ -n "$(find wheelhouse -name '*.whl' -print -quit)" ]; then set -- --no-index; fi \
    && pip install --no-cache-dir --no-deps --find-links wheelhouse "$@" -r requirements.lock \
    && rm -rf wheelhouse

COPY pyproject.toml README.md ./
COPY migrations/ migrations/
COPY hermes_server/ hermes_server/
RUN pip install --no-cache-dir --no-deps --no-build-isolation . && pip check

# Upstream's user and home. The group is made first with the gid the user gets (`useradd
# --user-group` would give it a system gid below 1000). Its passwd home is not /opt/data:
# remapping the uid (usermod) would then re-own everything under the mounted home. /opt/data
# is writable by any uid (sticky, as /tmp), so a container started with --user keeps its
# state.db there too; the entrypoint gives it to the server's user when it starts as root.
RUN groupadd --system --gid 10000 hermes \
    && useradd --system --uid 10000 --gid hermes --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin hermes \
    && mkdir -p /opt/data \
    && chown hermes:hermes /opt/data \
    && chmod 1777 /opt/data

COPY docker/entrypoint.sh /usr/local/bin/hermes-server-entrypoint

# Listen on every interface of the container; state in /opt/data. Without API_SERVER_KEY (in
# the environment or /opt/data/.env) a key is generated, printed, and kept in
# /opt/data/hermes-server.key. A stop takes at most the grace period (open requests and
# streams) plus the turn drain (chat turns still running, so they are stored): 4 + 2 = 6 s,
# which leaves 4 s of `docker stop`'s default 10 s before SIGKILL for closing state.db on a
# loaded machine (a stop with turns running once took 9.3 s of 6 + 3). Raise them only with
# `docker stop -t` / compose stop_grace_period.
ENV HERMES_HOME=/opt/data \
    API_SERVER_HOST=0.0.0.0 \
    API_SERVER_PORT=8642 \
    HERMES_SERVER_SHUTDOWN_GRACE=4 \
    HERMES_SERVER_TURN_DRAIN=2

EXPOSE 8642

# Stdlib-only readiness probe (GET /health/detailed) on this container's own port, with the key
# from the environment, /opt/data/.env or the kept key file: unhealthy while state.db cannot be
# opened in the home, not only when the process is gone.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
    CMD ["hermes-server", "healthcheck", "--ready"]

# Starts as root only to remap the user and hand over the home; then runs the command as that
# user (docker/entrypoint.sh).
ENTRYPOINT ["hermes-server-entrypoint"]
CMD ["serve"]
