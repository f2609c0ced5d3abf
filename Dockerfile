# hermes-server: a local, faithful Hermes Agent session API (hermes-agent 0.19.0) for
# connector tests and CI. State lives in the /data volume (HERMES_HOME/state.db).
#
#   docker build -t hermes-server .
#   docker run -p 8642:8642 -e API_SERVER_KEY=change-me-0123456789abcdef -v hermes-data:/data hermes-server
#
# Configure with the environment variables of `hermes-server serve --help` (README table).
# tests/test_container.py replays the install and start steps below and lints this file;
# tests/test_container_docker.py (`make test-container`) builds and runs it where Docker is.
# Without an image registry, build the base from Debian's packages (docs/container.md) and
# pass it with --build-arg BASE=hermes-server-base:bookworm.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Every package pinned (requirements.lock); dependencies first, so a source change
# does not reinstall them.
COPY requirements.lock ./
RUN pip install --no-cache-dir --no-deps -r requirements.lock

COPY pyproject.toml README.md ./
COPY migrations/ migrations/
COPY hermes_server/ hermes_server/
RUN pip install --no-cache-dir --no-deps --no-build-isolation . && pip check

# The group is made first, with the gid `USER` names: `useradd --system --user-group` would
# give it a system gid (below 1000), and the files the server writes in /data would carry
# gid 10001 with no group of that id.
RUN groupadd --system --gid 10001 hermes \
    && useradd --system --uid 10001 --gid hermes --home-dir /data --no-create-home hermes \
    && mkdir -p /data \
    && chown hermes:hermes /data

# Listen on every interface of the container; state.db in the volume. Without
# API_SERVER_KEY a key is generated, printed, and kept in /data/hermes-server.key. A stop
# takes at most the grace period (open requests and streams) plus the turn drain (chat
# turns still running, so they are stored): 4 + 2 = 6 s, which leaves 4 s of `docker stop`'s
# default 10 s before SIGKILL for closing state.db on a loaded machine (a stop with turns
# running once took 9.3 s of 6 + 3). Raise them only with `docker stop -t` / compose
# stop_grace_period.
ENV HERMES_HOME=/data \
    API_SERVER_HOST=0.0.0.0 \
    API_SERVER_PORT=8642 \
    HERMES_SERVER_SHUTDOWN_GRACE=4 \
    HERMES_SERVER_TURN_DRAIN=2

USER 10001:10001
VOLUME ["/data"]
EXPOSE 8642

# Stdlib-only readiness probe (GET /health/detailed) on this container's own port:
# unhealthy while state.db cannot be opened in /data, not only when the process is gone.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
    CMD ["hermes-server", "healthcheck", "--ready"]

ENTRYPOINT ["hermes-server"]
CMD ["serve"]
