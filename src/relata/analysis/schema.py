"""A small JSON-Schema validator for the subset the analysis tasks use.

Supported keywords: ``type`` (one name or a list), ``properties``, ``required``,
``additionalProperties: false``, ``items``, ``enum``, ``minimum``, ``maximum``, ``minLength``,
``maxLength``, ``minItems``, ``maxItems``, plus the annotations ``description`` and ``title``.
``check_schema`` refuses any other keyword, so a task cannot silently rely on something this
module does not enforce. Errors name a JSON path (``$.citations[2]``), never the value: the
value is model output, which may echo document content.

Validation walks a value that came from ``json`` parsing of a bounded payload, so recursion
depth is bounded by the schema's own depth (a value deeper than the schema stops at the first
node the schema does not describe).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relata.analysis.errors import SCHEMA_VIOLATION, UNKNOWN_FIELD, InvalidModelOutput

_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "description",
        "title",
    }
)
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


def check_schema(schema: Mapping[str, Any], path: str = "$") -> None:
    """Raise ``ValueError`` if ``schema`` uses anything outside the supported subset."""
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise ValueError(f"schema at {path} uses unsupported keywords {sorted(unknown)}")
    types = _type_list(schema)
    if not types or not set(types) <= _TYPES:
        raise ValueError(f"schema at {path} needs a type from {sorted(_TYPES)}")
    if "additionalProperties" in schema and schema["additionalProperties"] is not False:
        raise ValueError(f"schema at {path}: additionalProperties may only be false")
    props = schema.get("properties", {})
    if not isinstance(props, Mapping):
        raise ValueError(f"schema at {path}: properties must be an object")
    for name, sub in props.items():
        check_schema(sub, f"{path}.{name}")
    missing = set(schema.get("required", ())) - set(props)
    if missing:
        raise ValueError(f"schema at {path}: required names undeclared {sorted(missing)}")
    if "items" in schema:
        check_schema(schema["items"], f"{path}[]")


def validate(value: Any, schema: Mapping[str, Any], path: str = "$") -> None:
    """Raise ``InvalidModelOutput`` unless ``value`` satisfies ``schema``."""
    types = _type_list(schema)
    if not any(_is_type(value, t) for t in types):
        raise InvalidModelOutput(SCHEMA_VIOLATION, f"{path} is not of type {'/'.join(types)}")
    if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
        raise InvalidModelOutput(SCHEMA_VIOLATION, f"{path} is not one of the allowed values")
    if isinstance(value, dict):
        _validate_object(value, schema, path)
    elif isinstance(value, list):
        _validate_array(value, schema, path)
    elif isinstance(value, str):
        _validate_string(value, schema, path)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _validate_number(value, schema, path)


def _validate_object(value: dict[str, Any], schema: Mapping[str, Any], path: str) -> None:
    props: Mapping[str, Any] = schema.get("properties", {})
    if schema.get("additionalProperties") is False:
        for key in value:
            if key not in props:
                raise InvalidModelOutput(UNKNOWN_FIELD, f"unexpected field in {path}")
    for name in schema.get("required", ()):
        if name not in value:
            raise InvalidModelOutput(SCHEMA_VIOLATION, f"{path}.{name} is required")
    for name, sub in props.items():
        if name in value:
            validate(value[name], sub, f"{path}.{name}")


def _validate_array(value: list[Any], schema: Mapping[str, Any], path: str) -> None:
    if "minItems" in schema and len(value) < schema["minItems"]:
        raise InvalidModelOutput(SCHEMA_VIOLATION, f"{path} has too few items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        raise InvalidModelOutput(SCHEMA_VIOLATION, f"{path} has too many items")
    if "items" in schema:
        for i, item in enumerate(value):
            validate(item, schema["items"], f"{path}[{i}]")


def _validate_string(value: str, schema: Mapping[str, Any], path: str) -> None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        raise InvalidModelOutput(SCHEMA_VIOLATION, f"{path} is too short")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise InvalidModelOutput(SCHEMA_VIOLATION, f"{path} is too long")


def _validate_number(value: float, schema: Mapping[str, Any], path: str) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        raise InvalidModelOutput(SCHEMA_VIOLATION, f"{path} is below the minimum")
    if "maximum" in schema and value > schema["maximum"]:
        raise InvalidModelOutput(SCHEMA_VIOLATION, f"{path} is above the maximum")


def _type_list(schema: Mapping[str, Any]) -> list[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list) and all(isinstance(x, str) for x in t):
        return list(t)
    return []


def _is_type(value: Any, name: str) -> bool:
    match name:
        case "object":
            return isinstance(value, dict)
        case "array":
            return isinstance(value, list)
        case "string":
            return isinstance(value, str)
        case "boolean":
            return isinstance(value, bool)
        case "null":
            return value is None
        case "integer":
            # 2.0 is an integer in JSON Schema; True is not.
            if isinstance(value, bool):
                return False
            return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        case "number":
            return isinstance(value, int | float) and not isinstance(value, bool)
    return False


def _same(value: Any, member: Any) -> bool:
    # JSON equality: true is not 1, and 1 equals 1.0.
    if isinstance(value, bool) or isinstance(member, bool):
        return isinstance(value, bool) and isinstance(member, bool) and value == member
    return bool(type(value) is type(member) and value == member) or (
        isinstance(value, int | float) and isinstance(member, int | float) and value == member
    )
