"""Version profiles: which Hermes release this server answers as (`serve --hermes-version`).

A profile is plain data, chosen once when the app is built: the version `/health` reports,
the capability flags `/v1/capabilities` lists and the order of its endpoints, upstream's
order of the routes, and the units the release is made of beyond 0.19.0 (`Addition`). Each
unit is one module of hermes_server/units/ that supplies everything its change needs
(routes, OpenAPI, error rows, columns, the behaviour handlers are given); the app composes
them once, and no handler asks which release it answers as. The default, 0.19.0, has none
and answers byte for byte as before. docs/versions.md lists every behaviour by profile with
its source; docs/architecture.md says how a release is added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from hermes_server.domain import route_ids as r
from hermes_server.domain.route_ids import RouteId
from hermes_server.domain.run_keys import RETENTION_SECONDS

# A flag's value: a boolean, a header name, or (0.21) an object (read-only mappings and tuples,
# answered as JSON objects and arrays).
Features = tuple[tuple[str, bool | str | Mapping[str, object]], ...]

# 0.19.0's feature flags, in its order, with the value each has when served.
FEATURES_0_19: Features = (
    ("chat_completions", True),
    ("chat_completions_streaming", True),
    ("responses_api", True),
    ("responses_streaming", True),
    ("run_submission", True),
    ("run_status", True),
    ("run_events_sse", True),
    ("run_stop", True),
    ("run_approval_response", True),
    ("tool_progress_events", True),
    ("approval_events", True),
    ("session_resources", True),
    ("session_chat", True),
    ("session_chat_streaming", True),
    ("session_fork", True),
    ("admin_config_rw", True),
    ("jobs_admin", True),
    ("memory_write_api", True),
    ("skills_api", True),
    ("audio_api", True),
    ("realtime_voice", True),
    ("session_continuity_header", "X-Hermes-Session-Id"),
    ("session_key_header", "X-Hermes-Session-Key"),
)

# The 0.21.2 probe's order (the only newer release whose full capabilities JSON is public),
# without the two object-valued flags 0.21 adds; 0.20.4 is taken to share it.
FEATURES_0_20: Features = (
    *FEATURES_0_19[:8],
    ("run_steer", True),
    *FEATURES_0_19[8:12],
    ("model_options", True),
    *FEATURES_0_19[12:15],
    ("session_model_lock", True),
    *FEATURES_0_19[15:],
)

# 0.21.2's `browser_extension_control` as the V4 probe shows it with no browser extension
# configured (`enabled: false`), which is what hermes-server has: its routes answer 501 here.
BROWSER_EXTENSION_CONTROL: Mapping[str, object] = MappingProxyType({
    "enabled": False,
    "protocol_version": 1,
    "capabilities": ("browser_back", "browser_click", "browser_navigate", "browser_press", "browser_screenshot",
                     "browser_scroll", "browser_snapshot", "browser_tab_activate", "browser_tabs", "browser_type",
                     "controller.noop"),
    "artifact_capabilities": ("browser_artifact_download", "browser_artifact_upload"),
    "developer_capabilities": ("browser_cdp", "browser_evaluate"),
    "developer_mode": False,
    "artifact_transport": MappingProxyType({
        "upload": MappingProxyType({"method": "POST", "path": "/v1/artifacts/upload"}),
        "download": MappingProxyType({"method": "GET", "path": "/v1/artifacts/download/{artifact_id}"}),
        "max_bytes": 10485760,
        "ttl_seconds": 300.0,
        "allowed_mime_types": ("application/json", "application/pdf", "image/gif", "image/jpeg", "image/png",
                               "image/webp", "text/plain"),
    }),
    "real_browser_actions": True,
    "transports": MappingProxyType({"local_vps": "websocket-subprotocol-ticket",
                                    "cloud": "authenticated-gateway-rpc"}),
})

# 0.21.2's: `runs_idempotency` (an object) after `run_submission`, and `browser_extension_control`
# after `cors`, as the V4 probe's full JSON lists them; `durable` says whether runs_idempotency.db
# could be opened (routes/discovery.py). `cors` holds its place here: the server's configuration
# sets its value (every release appends it after the header names).
FEATURES_0_21: Features = (
    *FEATURES_0_20[:5],
    ("runs_idempotency", MappingProxyType({"supported": True, "durable": True,
                                           "retention_seconds": RETENTION_SECONDS})),
    *FEATURES_0_20[5:],
    ("cors", False),
    ("browser_extension_control", BROWSER_EXTENSION_CONTROL),
)

def _after(order: tuple[RouteId, ...], anchor: RouteId, *added: RouteId) -> tuple[RouteId, ...]:
    """`order` with `added` right after `anchor`."""
    at = order.index(anchor) + 1
    return (*order[:at], *added, *order[at:])


# The Hermes routes in upstream's order (the route table, and so the OpenAPI document's paths).
ROUTES_0_19: tuple[RouteId, ...] = (
    r.HEALTH, r.V1_HEALTH, r.HEALTH_DETAILED, r.MODELS, r.CAPABILITIES, r.OPENAPI,
    r.SESSIONS, r.SESSION, r.SESSION_MESSAGES, r.SESSION_FORK, r.SESSION_CHAT, r.SESSION_CHAT_STREAM,
    r.CHAT_COMPLETIONS, r.RESPONSES, r.RESPONSE,
    r.RUNS, r.RUN_STATUS, r.RUN_EVENTS, r.RUN_APPROVAL, r.RUN_STOP,
    r.SKILLS, r.TOOLSETS, r.PLATFORM_EVENTS, r.CRON_FIRE,
    r.JOBS, r.JOB, r.JOB_PAUSE, r.JOB_RESUME, r.JOB_RUN,
)
ROUTES_0_20 = _after(_after(_after(ROUTES_0_19, r.MODELS, r.MODEL_OPTIONS), r.SESSION_CHAT_STREAM,
                            r.SESSION_MODEL_LOCK), r.RUN_APPROVAL, r.RUN_STEER)
_BROWSER = (r.BROWSER_CONTROL_REGISTER, r.BROWSER_CONTROL_WS, r.ARTIFACT_UPLOAD, r.ARTIFACT_DOWNLOAD)
_ROOMS = (r.ROOM_MEMBER_INVITATIONS, r.ROOM_MEMBER_CAPABILITIES, r.ROOM_MEMBER_GRANTS_REFRESH,
          r.ROOM_MEMBER_GRANTS_REVOKE)
ROUTES_0_21 = (*_after(ROUTES_0_20, r.OPENAPI, *_BROWSER), *_ROOMS)

# The routes `/v1/capabilities` `endpoints` lists, in each release's order (a route's methods in the
# document's order: GET, POST, PUT, PATCH, DELETE); an advertised one not listed comes last.
ENDPOINTS_0_19: tuple[RouteId, ...] = (
    r.HEALTH, r.HEALTH_DETAILED, r.MODELS, r.CHAT_COMPLETIONS, r.RESPONSES, r.RUNS, r.RUN_STATUS,
    r.RUN_EVENTS, r.RUN_APPROVAL, r.RUN_STOP, r.SKILLS, r.TOOLSETS, r.SESSIONS, r.SESSION, r.SESSION_MESSAGES,
    r.SESSION_FORK, r.SESSION_CHAT, r.SESSION_CHAT_STREAM,
)
ENDPOINTS_0_20 = (*_after(_after(ENDPOINTS_0_19, r.MODELS, r.MODEL_OPTIONS), r.RUN_APPROVAL, r.RUN_STEER),
                  r.SESSION_MODEL_LOCK)
ENDPOINTS_0_21 = (*ENDPOINTS_0_20, *_BROWSER)


class Addition(Enum):
    """One change a newer release made, served by a profile whose units include it; each is one
    module of hermes_server/units/ (units/__init__.py maps them)."""

    # The 401 `gateway_auth_failed` envelope (https://github.com/NousResearch/hermes-agent/pull/70169).
    GATEWAY_AUTH = "gateway_auth"
    # GET /api/model/options (0.20.0).
    MODEL_OPTIONS = "model_options"
    # POST /api/sessions/{session_id}/model (https://github.com/NousResearch/hermes-agent/pull/70950).
    SESSION_MODEL_LOCK = "session_model_lock"
    # POST /v1/runs/{run_id}/steer, `run.steered`, `pending_steer` (https://github.com/NousResearch/hermes-agent/pull/85226).
    RUN_STEER = "run_steer"
    # A session stream's run is a run: GET /v1/runs/{id}, stop and steer reach it (the same pull request).
    SESSION_STREAM_RUNS = "session_stream_runs"
    # GET /api/sessions/{id}/messages pages: limit/offset/order and `pagination` (0.20.4).
    MESSAGE_PAGING = "message_paging"
    # The `runtime` block on session chat answers and stream events (0.20.4).
    CHAT_RUNTIME = "chat_runtime"
    # POST /api/sessions: `source` normalised, the virtual model alias not stored (0.20.4).
    CREATE_FIELDS = "create_fields"
    # Session flags: `pinned`/`archived`/`hidden` on the session object, PATCH of them and of
    # `unread`, the list leaving hidden rows out and back-filling pinned ones (0.20.4;
    # https://github.com/NousResearch/hermes-agent/pull/86797), and the columns they are stored in.
    SESSION_FLAGS = "session_flags"
    # `has_system_prompt` counts the prompt a v25+ home keeps in `system_prompts` behind
    # `sessions.system_prompt_hash` (upstream's `COALESCE(sp.prompt, s.system_prompt)`).
    PROMPT_STORE = "prompt_store"
    # `last_active` is the freshest of `sessions.last_activity_at` and the newest message
    # (upstream's `_sql_freshest_of`), where a v25+ home has that column.
    ACTIVITY_CLOCK = "activity_clock"
    # 0.21's stop: a finished run answers 200 with its status, a run not live here 409 `run_not_active`.
    RUN_STOP_SETTLED = "run_stop_settled"
    # 0.21's durable Idempotency-Key on POST /v1/runs (runs_idempotency.db): the submit that replays
    # (`replayed`), the statuses kept across a restart (`interrupted`), the `runs_idempotency` capability.
    RUN_IDEMPOTENCY = "run_idempotency"
    # 0.21.2's browser-control, artifact and room-member routes: their 401, then 501 (not served).
    UNSERVED_0_21 = "unserved_0_21"
    # A route under `/p/<profile>/` naming a profile other than the server's own answers 404 "Unknown or
    # unconfigured profile" instead of serving the default profile
    # (https://github.com/NousResearch/hermes-agent/pull/92871).
    PROFILE_PREFIX_CLOSED = "profile_prefix_closed"
    # state.db's journal mode follows `database.journal_mode` of config.yaml (`wal` or `delete`; an
    # existing WAL file stays WAL) (https://github.com/NousResearch/hermes-agent/pull/74485).
    JOURNAL_MODE_CONFIG = "journal_mode_config"
    # The log says when a configured `delete` finds a WAL file, and when a file is switched to WAL
    # (https://github.com/NousResearch/hermes-agent/pull/96439).
    JOURNAL_MODE_TOLD = "journal_mode_told"
    # A session stream's completed run keeps its reply as `output`
    # (https://github.com/NousResearch/hermes-agent/pull/112305).
    SESSION_STREAM_OUTPUT = "session_stream_output"
    # A shutdown settles every live /v1/runs run `interrupted` before interrupting it
    # (https://github.com/NousResearch/hermes-agent/pull/114774).
    SHUTDOWN_INTERRUPTS_RUNS = "shutdown_interrupts_runs"
    # A home holding named profiles is served multiplexed: `/p/<name>/` is that profile's home and key
    # (https://github.com/NousResearch/hermes-agent/pull/112854).
    MULTIPLEX_PROFILES = "multiplex_profiles"


@dataclass(frozen=True)
class Profile:
    """One Hermes release as this server answers it: data only."""

    version: str
    features: Features = FEATURES_0_19
    endpoint_order: tuple[RouteId, ...] = ENDPOINTS_0_19
    route_order: tuple[RouteId, ...] = ROUTES_0_19
    # Its changes beyond 0.19.0, in the order they are composed (a unit may replace an OpenAPI
    # component an earlier one gave).
    units: tuple[Addition, ...] = ()

    def __hash__(self) -> int:
        # A release is named by its version; the features hold an object value (0.21's
        # `runs_idempotency`), which the generated hash could not take.
        return hash(self.version)


_UNITS_0_20 = (Addition.GATEWAY_AUTH, Addition.MODEL_OPTIONS, Addition.SESSION_MODEL_LOCK, Addition.RUN_STEER,
               Addition.SESSION_STREAM_RUNS, Addition.MESSAGE_PAGING, Addition.CHAT_RUNTIME, Addition.CREATE_FIELDS,
               Addition.SESSION_FLAGS, Addition.PROMPT_STORE, Addition.ACTIVITY_CLOCK, Addition.JOURNAL_MODE_CONFIG)

HERMES_0_19 = Profile("0.19.0")
HERMES_0_20 = Profile("0.20.4", FEATURES_0_20, ENDPOINTS_0_20, ROUTES_0_20, _UNITS_0_20)
HERMES_0_21 = Profile("0.21.2", FEATURES_0_21, ENDPOINTS_0_21, ROUTES_0_21, (
    *_UNITS_0_20, Addition.RUN_STOP_SETTLED, Addition.RUN_IDEMPOTENCY, Addition.UNSERVED_0_21,
    Addition.JOURNAL_MODE_TOLD, Addition.PROFILE_PREFIX_CLOSED))
# 0.21.6 (tag v0.21.6, 2026-10-08): 0.21.2 and the API-server changes merged for 0.21.4.
HERMES_0_21_6 = Profile("0.21.6", FEATURES_0_21, ENDPOINTS_0_21, ROUTES_0_21, (
    *HERMES_0_21.units, Addition.SESSION_STREAM_OUTPUT, Addition.SHUTDOWN_INTERRUPTS_RUNS,
    Addition.MULTIPLEX_PROFILES))

PROFILES: dict[str, Profile] = {p.version: p for p in (HERMES_0_19, HERMES_0_20, HERMES_0_21, HERMES_0_21_6)}
DEFAULT_VERSION = HERMES_0_19.version
