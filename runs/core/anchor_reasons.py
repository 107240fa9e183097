"""Placeholder, filled below."""


def anchor_reason(reason: str) -> str:
    return reason
