"""The base error of stream messages (its own module so validation and codec share it)."""

from __future__ import annotations


class MessageError(ValueError):
    """Base class of message encoding/decoding errors."""
