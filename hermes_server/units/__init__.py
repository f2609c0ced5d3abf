"""The units a served release is made of: one module per change of a newer Hermes release, and one per
deviation of docs/differences.md.

A version profile (domain/profiles.py) names its changes (`Addition`); `--upstream-quirks` switches
the deviations (`Quirk`) to 0.19.0's answers. Each is one `Unit` (units/unit.py) that supplies
everything the change needs; this registry maps each name to its unit, and `units_of` gives the
units of one server, in the order the app composes them. docs/architecture.md, "Adding a release",
says how a new one is made.
"""

from __future__ import annotations

from collections.abc import Mapping

from hermes_server.domain.profiles import Addition, Profile
from hermes_server.domain.quirks import Quirk, Quirks
from hermes_server.units import (
    activity_clock,
    bad_input_500,
    chat_runtime,
    create_fields,
    duplicated_response_history,
    fork_takes_over_messages,
    gateway_auth,
    head_limits_text_400,
    journal_mode_config,
    journal_mode_told,
    lax_create_ids,
    message_paging,
    model_options,
    multiplex_profiles,
    no_content_part_events,
    profile_prefix_closed,
    prompt_store,
    run_idempotency,
    run_steer,
    run_stop_settled,
    session_flags,
    session_model_lock,
    session_stream_output,
    session_stream_runs,
    shutdown_interrupts_runs,
    unserved_0_21,
    upstream_answers,
)
from hermes_server.units.unit import Unit

RELEASE_UNITS: Mapping[Addition, Unit] = {
    Addition.GATEWAY_AUTH: gateway_auth.UNIT,
    Addition.MODEL_OPTIONS: model_options.UNIT,
    Addition.SESSION_MODEL_LOCK: session_model_lock.UNIT,
    Addition.RUN_STEER: run_steer.UNIT,
    Addition.SESSION_STREAM_RUNS: session_stream_runs.UNIT,
    Addition.MESSAGE_PAGING: message_paging.UNIT,
    Addition.CHAT_RUNTIME: chat_runtime.UNIT,
    Addition.CREATE_FIELDS: create_fields.UNIT,
    Addition.SESSION_FLAGS: session_flags.UNIT,
    Addition.PROMPT_STORE: prompt_store.UNIT,
    Addition.ACTIVITY_CLOCK: activity_clock.UNIT,
    Addition.RUN_STOP_SETTLED: run_stop_settled.UNIT,
    Addition.RUN_IDEMPOTENCY: run_idempotency.UNIT,
    Addition.UNSERVED_0_21: unserved_0_21.UNIT,
    Addition.JOURNAL_MODE_CONFIG: journal_mode_config.UNIT,
    Addition.JOURNAL_MODE_TOLD: journal_mode_told.UNIT,
    Addition.PROFILE_PREFIX_CLOSED: profile_prefix_closed.UNIT,
    Addition.SESSION_STREAM_OUTPUT: session_stream_output.UNIT,
    Addition.SHUTDOWN_INTERRUPTS_RUNS: shutdown_interrupts_runs.UNIT,
    Addition.MULTIPLEX_PROFILES: multiplex_profiles.UNIT,
}

QUIRK_UNITS: Mapping[Quirk, Unit] = {
    **upstream_answers.UNITS,
    Quirk.FORK_TAKES_OVER_MESSAGES: fork_takes_over_messages.UNIT,
    Quirk.LAX_CREATE_IDS: lax_create_ids.UNIT,
    Quirk.BAD_INPUT_500: bad_input_500.UNIT,
    Quirk.DUPLICATED_RESPONSE_HISTORY: duplicated_response_history.UNIT,
    Quirk.NO_CONTENT_PART_EVENTS: no_content_part_events.UNIT,
    Quirk.HEAD_LIMITS_TEXT_400: head_limits_text_400.UNIT,
}


def units_of(profile: Profile, quirks: Quirks) -> tuple[Unit, ...]:
    """The units of a server answering as `profile` with `quirks`: the release's, in its order, then
    the deviations switched to 0.19.0's answers."""
    return (*(RELEASE_UNITS[change] for change in profile.units),
            *(QUIRK_UNITS[quirk] for quirk in Quirk if quirk in quirks))
