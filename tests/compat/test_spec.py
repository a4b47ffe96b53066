"""Today's spec against the previous release's (compat/previous-release.toml; docs/compatibility.md, "what a release
may change"): no route, parameter, schema, field or enum value removed; no field made `required` that was not
(a response field added later must not be required: an SDK reading an older server, which does not send it, would
fail); no new required parameter or request field. New routes, schemas, optional fields and enum values are fine."""

from __future__ import annotations

import json
from typing import Any

from tests.compat.previous import ROOT, git_show, previous

Spec = dict[str, Any]


def specs() -> tuple[Spec, Spec]:
    """(previous release's, today's)."""
    return json.loads(git_show("spec/openapi.json")), json.loads((ROOT / "spec" / "openapi.json").read_text())


def breaks(before: Spec, now: Spec) -> list[str]:
    """What `now` breaks of `before`, one line each."""
    found: list[str] = []
    for path, operations in before["paths"].items():
        for method, operation in operations.items():
            current = now["paths"].get(path, {}).get(method)
            if current is None:
                found.append(f"{method.upper()} {path}: removed")
                continue
            found += [f"{method.upper()} {path}: {line}" for line in _parameter_breaks(operation, current)]
    schemas_now = now["components"]["schemas"]
    for name, schema in before["components"]["schemas"].items():
        if name not in schemas_now:
            found.append(f"schema {name}: removed")
            continue
        found += [f"schema {name}: {line}" for line in _schema_breaks(schema, schemas_now[name])]
        if not previous().sdks_keep_unknown_values:
            found += [f"schema {name}: {line}" for line in _new_values(name, schema, schemas_now[name])]
    return found


def _new_values(name: str, before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Enum values added to `name`'s fields, but for those whose SDKs are known to read them (the pin's
    `tolerated_new_values`)."""
    found = []
    for field, schema in before.get("properties", {}).items():
        if field in now.get("properties", {}) and f"{name}.{field}" not in previous().tolerated_new_values:
            added = _values(now["properties"][field]) - _values(schema)
            found += [f"field {field}: enum value {value}: added (its SDKs fail on it)" for value in sorted(added)]
    return found


def _parameter_breaks(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    def named(operation: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
        return {(p["in"], p["name"]): p for p in operation.get("parameters", [])}

    old, new = named(before), named(now)
    found = [f"parameter {name} ({where}): removed" for where, name in old.keys() - new.keys()]
    found += [
        f"parameter {key[1]} ({key[0]}): now required"
        for key, parameter in new.items()
        if parameter.get("required") and not old.get(key, {}).get("required")
    ]
    return found


def _schema_breaks(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    old_fields, new_fields = before.get("properties", {}), now.get("properties", {})
    found = [f"field {field}: removed" for field in old_fields.keys() - new_fields.keys()]
    found += [
        f"field {field}: now required (a field added later stays optional)"
        for field in set(now.get("required", ())) - set(before.get("required", ()))
    ]
    for field, schema in old_fields.items():
        if field in new_fields:
            found += [f"field {field}: {line}" for line in _enum_breaks(schema, new_fields[field])]
    found += _enum_breaks(before, now)
    return found


def _branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Where a schema may spell its enum: itself, or its `oneOf`/`anyOf` branches (a nullable enum)."""
    return [schema, *schema.get("oneOf", ()), *schema.get("anyOf", ())]


def _values(schema: dict[str, Any]) -> set[str]:
    """A schema's enum values, as JSON."""
    return {json.dumps(value) for value in _enum_values(schema)}


def _enum_breaks(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    return [f"enum value {value}: removed" for value in sorted(_values(before) - _values(now))]


def test_the_spec_keeps_what_the_previous_release_had() -> None:
    before, now = specs()
    assert breaks(before, now) == [], f"breaks the {previous().version} release's API (docs/compatibility.md)"


def test_the_check_catches_each_kind_of_break() -> None:
    before, _ = specs()
    job = before["components"]["schemas"]["Job"]
    status = "status"
    broken = json.loads(json.dumps(before))
    schemas = broken["components"]["schemas"]
    schemas["Job"]["properties"]["added_later"] = {"type": "string"}
    schemas["Job"]["required"] = [*job["required"], "added_later"]
    del schemas["Job"]["properties"]["metadata"]
    first, *rest = _enum_values(schemas["Job"]["properties"][status])
    _set_enum_values(schemas["Job"]["properties"][status], [*rest, "archived"])
    del broken["paths"]["/v1/jobs/{job_id}/cancel"]
    assert sorted(breaks(before, broken)) == sorted(
        [
            "POST /v1/jobs/{job_id}/cancel: removed",
            "schema Job: field metadata: removed",
            "schema Job: field added_later: now required (a field added later stays optional)",
            f"schema Job: field {status}: enum value {json.dumps(first)}: removed",
            *(
                []
                if previous().sdks_keep_unknown_values
                else ['schema Job: field status: enum value "archived": added (its SDKs fail on it)']
            ),
        ]
    )


def _enum_values(schema: dict[str, Any]) -> list[object]:
    return [value for branch in _branches(schema) for value in branch.get("enum", ())]


def _set_enum_values(schema: dict[str, Any], values: list[object]) -> None:
    for branch in _branches(schema):
        if "enum" in branch:
            branch["enum"] = values
            return
