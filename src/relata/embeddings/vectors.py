"""Checks every embedder applies to what a model or provider returned.

A wrong count or a wrong width is ``Permanent`` (repeating the call cannot fix it, and a
vector of another width must never reach the vector store); a value that is not a finite
number is a malformed envelope (``MalformedResponse``, transient).
"""

from __future__ import annotations

import math
from typing import Any

from relata.domain.errors import Permanent
from relata.providers.retry import MalformedResponse


def width_mismatch(model_id: str, got: int, expected: int) -> Permanent:
    return Permanent(
        f"embedding model {model_id!r} returned vectors of width {got}, expected {expected}: "
        f"set RELATA_EMBEDDING_DIMENSIONS={got} for this model, then re-embed the workspace "
        "(`relata reembed`), or switch back to the model the stored vectors were made with"
    )


def count_mismatch(model_id: str, got: int, expected: int) -> Permanent:
    return Permanent(f"embedding model {model_id!r} returned {got} vectors for {expected} inputs")


def checked_vectors(
    raw: Any, *, expected: int, dimensions: int, model_id: str, op: str
) -> list[list[float]]:
    """Validate a provider's list of vectors and return it as lists of Python floats."""
    if not isinstance(raw, list):
        raise MalformedResponse(f"{op}: the vectors are not a list")
    if len(raw) != expected:
        raise count_mismatch(model_id, len(raw), expected)
    out: list[list[float]] = []
    for vector in raw:
        if not isinstance(vector, list):
            raise MalformedResponse(f"{op}: a vector is not a list of numbers")
        if len(vector) != dimensions:
            raise width_mismatch(model_id, len(vector), dimensions)
        out.append(_floats(vector, op))
    return out


def _floats(vector: list[Any], op: str) -> list[float]:
    values: list[float] = []
    for x in vector:
        # bool is an int subclass; JSON true/false in a vector is a malformed envelope.
        if type(x) is float or type(x) is int:
            f = float(x)
            if math.isfinite(f):
                values.append(f)
                continue
        raise MalformedResponse(f"{op}: a vector holds a value that is not a finite number")
    return values
