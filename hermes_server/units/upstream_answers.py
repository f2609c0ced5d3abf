"""The deviations that are answers only (D1, D4, D5, D7, D8 of docs/differences.md): with
`--upstream-quirks`, each quirk's unit swaps in 0.19.0's answer to the errors it governs
(the rows of api/deviations.py's `SWAPS`)."""

from __future__ import annotations

from hermes_server.api.deviations import swap_rows
from hermes_server.domain.quirks import Quirk
from hermes_server.http.errors import ErrorMap
from hermes_server.units.unit import ErrorRows, Unit


def answers_of(quirk: Quirk) -> Unit:
    """The unit of a deviation that is an answer: its `SWAPS` rows, rendered through the table so far."""
    def rows(table: ErrorMap) -> ErrorRows:
        return swap_rows(quirk, table)
    return Unit(name=f"upstream {quirk.value}", errors=rows)


ANSWER_QUIRKS = (Quirk.TITLE_TOO_LONG_500, Quirk.CHUNKED_OVER_LIMIT_400, Quirk.UNDECODABLE_BEARER_500,
                 Quirk.AGENT_FAILURE_500, Quirk.STORAGE_FAILURE_500, Quirk.JOBS_BAD_INPUT_500)
UNITS = {quirk: answers_of(quirk) for quirk in ANSWER_QUIRKS}
