# hermes-server: a local, faithful Hermes Agent session API (hermes-agent 0.19.0) for
# connector tests and CI. State lives in the /data volume (HERMES_HOME/state.db).
#
#   docker build -t hermes-server .
#   docker run -p 8642:8642 -e API_SERVER_KEY=change-me-0123456789abcdef -v hermes-data:/data hermes-server
#
# Configure with the environment variables of `hermes-server serve --help` (README table).
# tests/test_container.py replays the install and start steps below and lints this file.
FROM python:3.11-slim-bookworm

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

RUN useradd --system --user-group --uid 10001 --home-dir /data --no-create-home hermes \
    && mkdir -p /data \
    && chown hermes:hermes /data

# Listen on every interface of the container; state.db in the volume. Without
# API_SERVER_KEY a key is generated and printed at start. The grace period stays
# under `docker stop`'s default 10 s, so open chat streams end cleanly, not killed.
ENV HERMES_HOME=/data \
    API_SERVER_HOST=0.0.0.0 \
    API_SERVER_PORT=8642 \
    HERMES_SERVER_SHUTDOWN_GRACE=8

USER 10001:10001
VOLUME ["/data"]
EXPOSE 8642

# Stdlib-only probe of GET /health on this container's own port.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
    CMD ["hermes-server", "healthcheck"]

ENTRYPOINT ["hermes-server"]
CMD ["serve"]
