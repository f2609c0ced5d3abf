"""The identity of every Hermes route: one constant each.

A route's id is the name it is served under: the request journal records it, a fault names
it (`"route": "session_fork"`), and a release's route and capability order list it
(domain/profiles.py). Every table that names a route uses these constants, so a misspelt
name fails when the module is imported instead of matching nothing. What a route promises
(read or write, streamed or not, its documented operation name) is on its `Operation`
(http/routing.py), next to its handler.
"""

from __future__ import annotations

from typing import NewType

RouteId = NewType("RouteId", str)

# Discovery.
HEALTH = RouteId("health")
V1_HEALTH = RouteId("v1_health")
HEALTH_DETAILED = RouteId("health_detailed")
MODELS = RouteId("models")
CAPABILITIES = RouteId("capabilities")
OPENAPI = RouteId("openapi")
# Sessions and session chat.
SESSIONS = RouteId("sessions")
SESSION = RouteId("session")
SESSION_MESSAGES = RouteId("session_messages")
SESSION_FORK = RouteId("session_fork")
SESSION_CHAT = RouteId("session_chat")
SESSION_CHAT_STREAM = RouteId("session_chat_stream")
# OpenAI-compatible chat, the Responses API, structured runs.
CHAT_COMPLETIONS = RouteId("chat_completions")
RESPONSES = RouteId("responses")
RESPONSE = RouteId("response")
RUNS = RouteId("runs")
RUN_STATUS = RouteId("run_status")
RUN_EVENTS = RouteId("run_events")
RUN_APPROVAL = RouteId("run_approval")
RUN_STOP = RouteId("run_stop")
# Skills, toolsets and the callbacks of other platforms.
SKILLS = RouteId("skills")
TOOLSETS = RouteId("toolsets")
PLATFORM_EVENTS = RouteId("platform_events")
CRON_FIRE = RouteId("cron_fire")
# Cron jobs.
JOBS = RouteId("jobs")
JOB = RouteId("job")
JOB_PAUSE = RouteId("job_pause")
JOB_RESUME = RouteId("job_resume")
JOB_RUN = RouteId("job_run")
# Added by newer releases (each served only by a release whose units add it).
MODEL_OPTIONS = RouteId("model_options")
SESSION_MODEL_LOCK = RouteId("session_model_lock")
RUN_STEER = RouteId("run_steer")
BROWSER_CONTROL_REGISTER = RouteId("browser_control_register")
BROWSER_CONTROL_WS = RouteId("browser_control_ws")
ARTIFACT_UPLOAD = RouteId("artifact_upload")
ARTIFACT_DOWNLOAD = RouteId("artifact_download")
ROOM_MEMBER_INVITATIONS = RouteId("room_member_invitations")
ROOM_MEMBER_CAPABILITIES = RouteId("room_member_capabilities")
ROOM_MEMBER_GRANTS_REFRESH = RouteId("room_member_grants_refresh")
ROOM_MEMBER_GRANTS_REVOKE = RouteId("room_member_grants_revoke")
