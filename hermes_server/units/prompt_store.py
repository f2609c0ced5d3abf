"""0.20+'s `has_system_prompt` on a v25+ home: it counts the prompt `sessions.system_prompt_hash` points
to in `system_prompts` too (upstream's `COALESCE(sp.prompt, s.system_prompt)`), where the file has them."""

from __future__ import annotations

from hermes_server.store.schema import Reading
from hermes_server.units.unit import Unit

UNIT = Unit(name="prompt_store", reading=Reading(prompt_store=True))
