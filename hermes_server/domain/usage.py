"""Token accounting of a turn: what agents report, what the store adds up, what clients see."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    """Token counts summed over the turn's model calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    api_calls: int = 1

    def public(self) -> dict[str, int]:
        """The `usage` object of the chat response and `run.completed`."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens,
        }

    def openai(self) -> dict[str, int]:
        """The `usage` object of a chat completion: `public`'s counts under OpenAI's names."""
        counts = self.public()
        return {"prompt_tokens": counts["input_tokens"], "completion_tokens": counts["output_tokens"],
                "total_tokens": counts["total_tokens"]}
