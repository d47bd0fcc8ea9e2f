"""The local policy's tokenizer: one token per printable ASCII character plus a few specials.

The chat template is prefix-consistent: a conversation renders as, per message,
``[role token] + characters(content) + [end token]``; the generation prompt appends the assistant
role token, and an assistant reply ends with the end token. So the tokens of a conversation that
continues with the reply and a next message start with the tokens of the earlier prompt followed
by the reply's tokens, which multi-turn environments rely on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hermes_rl_mcp.errors import HermesRLError

TOKENIZER_NAME = "hermes-rl/char"

PAD = 0
UNK = 1
SYSTEM = 2
USER = 3
ASSISTANT = 4
END = 5

_SPECIAL_NAMES = ("<|pad|>", "<|unk|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>")
_CHARS = "\t\n" + "".join(chr(code) for code in range(32, 127))
ROLE_TOKENS = {"system": SYSTEM, "user": USER, "assistant": ASSISTANT}


class ChatTemplateError(HermesRLError, ValueError):
    """A chat message the template cannot render; the message says what is valid."""


class CharTokenizer:
    """Character-level tokenizer; characters outside printable ASCII map to ``<|unk|>``."""

    name = TOKENIZER_NAME

    def __init__(self) -> None:
        self.first_char_id = len(_SPECIAL_NAMES)
        self._char_to_id = {ch: self.first_char_id + i for i, ch in enumerate(_CHARS)}
        self._id_to_text = list(_SPECIAL_NAMES) + list(_CHARS)
        digits = {str(d): float(d) for d in range(10)}
        # Numeric value of digit tokens (others None): the policy reads it as an input feature.
        self.digit_values = [digits.get(text) for text in self._id_to_text]

    @property
    def vocab_size(self) -> int:
        return len(self._id_to_text)

    @property
    def end_id(self) -> int:
        return END

    def generatable_ids(self) -> list[int]:
        """Tokens the policy may emit: every character and the end token (never pad/unk/roles)."""
        return [END, *range(self.first_char_id, self.vocab_size)]

    def encode(self, text: str) -> list[int]:
        return [self._char_to_id.get(ch, UNK) for ch in text]

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``; special tokens contribute nothing."""
        return "".join(self._id_to_text[i] for i in ids if i >= self.first_char_id)

    def token_text(self, token_id: int) -> str:
        """The display form of one token (specials by name), as logprob entries show it."""
        return self._id_to_text[token_id]

    def render_messages(self, messages: Sequence[dict[str, Any]]) -> list[int]:
        """Tokens of a conversation; raises ChatTemplateError on a malformed message."""
        ids: list[int] = []
        for index, message in enumerate(messages):
            role = message.get("role")
            if role not in ROLE_TOKENS:
                raise ChatTemplateError(
                    f"messages[{index}].role is {role!r}; valid roles: {', '.join(ROLE_TOKENS)}"
                )
            ids.append(ROLE_TOKENS[role])
            ids.extend(self.encode(message_text(message.get("content"), index)))
            ids.append(END)
        return ids

    def generation_prompt(self, messages: Sequence[dict[str, Any]]) -> list[int]:
        """Tokens the assistant's reply is generated after."""
        return [*self.render_messages(messages), ASSISTANT]


def message_text(content: Any, index: int) -> str:
    """A message's content as text: a string, or a list of ``{"type": "text", "text": ...}`` parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                raise ChatTemplateError(
                    f"messages[{index}].content has a part that is not {{'type': 'text', 'text': str}}"
                )
        return "".join(parts)
    raise ChatTemplateError(f"messages[{index}].content must be a string or a list of text parts")
