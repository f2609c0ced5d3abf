"""The checks Hermes runs on a cron job's prompt before storing it.

A cron prompt is later fed to an agent unattended, so Hermes refuses prompts carrying
invisible Unicode, prompt-injection directives, secret reads or secret exfiltration
(the client gets a 400 naming the pattern), and jobs that would restart or stop the
gateway they run in. The patterns match what 0.19.0 matches, case-insensitively, so a
prompt refused there is refused here with the same words.
"""

from __future__ import annotations

import re

# Invisible and bidirectional-control characters that can hide text from a reviewer.
INVISIBLE = frozenset(
    "\u200b\u200c\u200d\u2060\u2062\u2063\u2064\ufeff"
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_ZWJ = "\u200d"
_VARIATION_SELECTOR = "\ufe0f"
_EMOJI_RANGES = ((0x1F000, 0x1FFFF), (0x2600, 0x27BF), (0x2300, 0x23FF), (0x1F1E6, 0x1F1FF), (0x20E3, 0x20E3))

# A shell variable whose name suggests a secret: $API_KEY, ${GITHUB_TOKEN} …
_SECRET = r"\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|API)\w*\}?"

# (pattern id, regex), checked in this order; the first match names the refusal.
_THREATS: tuple[tuple[str, str], ...] = (
    ("prompt_injection", r"ignore\s+(?:\w+\s+)*(?:previous|all|above|prior)\s+(?:\w+\s+)*instructions"),
    ("deception_hide", r"do\s+not\s+tell\s+the\s+user"),
    ("sys_prompt_override", r"system\s+prompt\s+override"),
    ("disregard_rules", r"disregard\s+(your|all|any)\s+(instructions|rules|guidelines)"),
    ("read_secrets", r"cat\s+[^\n]*(\.env|credentials|\.netrc|\.pgpass)"),
    ("ssh_backdoor", r"authorized_keys"),
    ("sudoers_mod", r"/etc/sudoers|visudo"),
    ("destructive_root_rm", r"rm\s+-rf\s+/"),
    ("exfil_curl_url", rf"curl\s+[^\n]*https?://[^\s\"'`]*{_SECRET}"),
    ("exfil_wget_url", rf"wget\s+[^\n]*https?://[^\s\"'`]*{_SECRET}"),
    ("exfil_curl_data", rf"curl\s+[^\n]*(?:--data(?:-raw|-binary|-urlencode)?|-d|--form|-F)\s+[^\n]*{_SECRET}"),
    ("exfil_wget_post", rf"wget\s+[^\n]*--post-(?:data|file)=[^\n]*{_SECRET}"),
    ("exfil_curl_auth_header",
     rf"curl\s+[^\n]*(?:-H|--header)\s+[\"']Authorization:\s*(?:Bearer|token)\s+{_SECRET}[\"']"),
)
_COMPILED = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in _THREATS)

# The one authenticated call Hermes's bundled GitHub skill makes is allowed.
_GITHUB_AUTH = re.compile(
    rf"curl\s+[^\n]*(?:-H|--header)\s+[\"']Authorization:\s*token\s+{_SECRET}[\"']"
    r"\s+[\"']?https://api\.github\.com(?:/|\b)",
    re.IGNORECASE,
)

_LIFECYCLE = re.compile(
    r"(?:hermes\s+gateway\s+(?:restart|stop))"
    r"|(?:launchctl\s+(?:kickstart|unload|load|stop|restart)\b[^\n]*\bhermes[.\-]?gateway)"
    r"|(?:systemctl\s+(?:-\S+\s+)*(?:restart|stop|start)\b[^\n]*\bhermes[.\-]?gateway)"
    r"|(?:p?kill\b[^\n]*\bhermes\b[^\n]*\bgateway)"
    r"|(?:p?kill\b[^\n]*\bgateway\b[^\n]*\bhermes)",
    re.IGNORECASE,
)

LIFECYCLE_BLOCKED = (
    "Blocked: cron job contains a gateway lifecycle command (restart/stop/kill). This is blocked "
    "to prevent agent-driven SIGTERM-respawn loops under launchd/systemd supervision (#30719). "
    "Run `hermes gateway restart` from a shell outside the running gateway instead."
)


def _is_emoji(char: str) -> bool:
    return any(low <= ord(char) <= high for low, high in _EMOJI_RANGES)


def _emoji_joiner(text: str, index: int) -> bool:
    """A zero-width joiner between two emoji (variation selectors skipped) is part of the emoji."""
    left, right = index - 1, index + 1
    while left >= 0 and text[left] == _VARIATION_SELECTOR:
        left -= 1
    while right < len(text) and text[right] == _VARIATION_SELECTOR:
        right += 1
    return left >= 0 and right < len(text) and _is_emoji(text[left]) and _is_emoji(text[right])


def scan_prompt(prompt: str) -> str | None:
    """Why `prompt` is refused, or None. A non-string raises the TypeError Hermes's scan raises."""
    github = _GITHUB_AUTH.search(prompt)
    if github:
        prompt = prompt.replace(github.group(0), "curl https://api.github.com/user")
    for index, char in enumerate(prompt):
        if char in INVISIBLE and not (char == _ZWJ and _emoji_joiner(prompt, index)):
            return f"Blocked: prompt contains invisible unicode U+{ord(char):04X} (possible injection)."
    for name, pattern in _COMPILED:
        if pattern.search(prompt):
            return (f"Blocked: prompt matches threat pattern '{name}'. "
                    "Cron prompts must not contain injection or exfiltration payloads.")
    return None


def has_lifecycle_command(text: str) -> bool:
    """Whether `text` restarts, stops or kills the Hermes gateway."""
    return bool(text) and bool(_LIFECYCLE.search(text))
