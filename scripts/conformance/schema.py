"""The frozen AG-UI 1.1 JSON Schema (draft 2020-12), with one validator per event type: an event
is judged against the definition its `type` names, which gives the same verdict as the schema's
`Event` union and says which field is at fault."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry, Resource

SPEC_DIR = Path(__file__).with_name("spec-1.1")
SCHEMA_PATH = SPEC_DIR / "schema.json"
# The versions this specification publishes, in order; the last is the one this suite checks.
PUBLISHED = ("1.0", "1.1")
# Fields new in 1.1 (spec changelog "Changes in 1.1"): a run declaring 1.0 never carries them.
ONLY_IN_1_1 = ("encryptedValueType",)


class Schema:
    def __init__(self, path: Path = SCHEMA_PATH):
        self.document = json.loads(path.read_text())
        self.id = self.document["$id"]
        self.defs = self.document["$defs"]
        self.registry = Registry().with_resource(self.id, Resource.from_contents(self.document))

    def validator(self, definition: str) -> Draft202012Validator:
        return Draft202012Validator({"$ref": f"{self.id}#/$defs/{definition}"}, registry=self.registry)

    @cached_property
    def event_definitions(self) -> dict[str, str]:
        """`EventType` value → the definition of that event."""
        names = {}
        for member in self.defs["Event"]["oneOf"]:
            name = member["$ref"].rsplit("/", 1)[-1]
            const = self.defs[name].get("properties", {}).get("type", {}).get("const")
            if const:
                names[const] = name
        return names

    @cached_property
    def event_validators(self) -> dict[str, Draft202012Validator]:
        return {kind: self.validator(name) for kind, name in self.event_definitions.items()}

    @cached_property
    def input_validator(self) -> Draft202012Validator:
        return self.validator("RunAgentInput")

    def required(self, kind: str) -> set[str]:
        """The fields an event of this type must have (its own and `BaseEvent`'s)."""
        definition = self.defs.get(self.event_definitions.get(kind, ""), {})
        required = set(definition.get("required", []))
        for part in definition.get("allOf", []):
            ref = part.get("$ref", "").rsplit("/", 1)[-1]
            required |= set(self.defs.get(ref, {}).get("required", []))
        return required

    def event_errors(self, event: dict) -> list[str]:
        """Why `event` is not a valid 1.1 event (empty when it is)."""
        kind = event.get("type")
        validator = self.event_validators.get(kind) if isinstance(kind, str) else None
        if validator is None:
            return [f"type {kind!r} is not one of the {len(self.event_validators)} event types"]
        errors = sorted(validator.iter_errors(event), key=lambda error: list(error.absolute_path))
        return [describe(error) for error in errors]

    def input_errors(self, run_input: dict) -> list[str]:
        errors = sorted(self.input_validator.iter_errors(run_input), key=lambda e: list(e.absolute_path))
        return [describe(error) for error in errors]


def describe(error) -> str:
    # The most relevant cause names the field; a oneOf over many shapes hides it otherwise.
    if error.context:
        error = best_match([error])
    path = "/".join(str(part) for part in error.absolute_path) or "(the event)"
    return f"{path}: {error.message[:300]}"
