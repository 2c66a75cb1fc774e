#!/usr/bin/env python3
"""Checks every A2UI operation in captured AG-UI streams against the A2UI v0.9 JSON Schema.

Each `ACTIVITY_SNAPSHOT` of `activityType: "a2ui-surface"` (and each `activity` message of a
`MESSAGES_SNAPSHOT`) in the given `.sse` files carries either a lifecycle state (`status`
building, retrying or failed, checked for its fields) or `a2ui_operations`. Operations of a
surface in the spec's form are validated against `server_to_client.json` with the basic catalog
standing in for `catalog.json` (the spec's files, tests/fixtures/a2ui-v0.9), formats checked.
Operations in assistant-ui's form (catalog id `assistant-ui.com:a2ui-v0.9`) are validated with
a catalog of the nine components assistant-ui paints, each a component of the basic catalog with
its documented departures (Button `label` and `action.name`, Card `children`, templates as
`{"template"}`, Image `alt`).

Usage: python scripts/check_a2ui_captures.py CAPTURE.sse...   (prints `a2ui-schema: N passed, M failed`)
"""

import copy
import json
import pathlib
import sys

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource

ROOT = pathlib.Path(__file__).resolve().parent.parent
SPEC = ROOT / "tests" / "fixtures" / "a2ui-v0.9"
BASE = "https://a2ui.org/specification/v0_9/"
ASSISTANT_UI_CATALOG_ID = "assistant-ui.com:a2ui-v0.9"
ASSISTANT_UI_COMPONENTS = ["Text", "Image", "Row", "Column", "Card", "Divider", "Button", "TextField", "CheckBox"]
LIFECYCLE = {"building": {"progressTokens"}, "retrying": {"attempt", "maxAttempts", "errors"},
             "failed": {"error", "attempts", "maxAttempts"}}


def load(name):
    return json.loads((SPEC / name).read_text())


def assistant_ui_catalog(basic):
    """The basic catalog cut to assistant-ui's components, with its departures allowed."""
    catalog = copy.deepcopy(basic)
    catalog["components"] = {name: catalog["components"][name] for name in ASSISTANT_UI_COMPONENTS}
    own = lambda name: catalog["components"][name]["allOf"][-1]
    button = own("Button")
    button["properties"].pop("child")
    button["properties"]["label"] = {"$ref": BASE + "common_types.json#/$defs/DynamicString"}
    button["properties"]["action"] = {"type": "object", "properties": {
        "name": {"type": "string"}, "context": {"type": "object"}}, "required": ["name"],
        "additionalProperties": False}
    button["required"] = ["component", "label", "action"]
    card = own("Card")
    card["properties"] = {"component": {"const": "Card"}, "children": {
        "type": "array", "items": {"type": "string"}}, "title": {"type": "string"}}
    card["required"] = ["component", "children"]
    own("Image")["properties"]["alt"] = {"$ref": BASE + "common_types.json#/$defs/DynamicString"}
    template = {"type": "object", "properties": {"template": {"type": "object", "properties": {
        "componentId": {"type": "string"}, "path": {"type": "string"}},
        "required": ["componentId", "path"], "additionalProperties": False}},
        "required": ["template"], "additionalProperties": False}
    for name in ("Row", "Column"):
        own(name)["properties"]["children"] = {"oneOf": [{"type": "array", "items": {"type": "string"}}, template]}
    catalog["$defs"]["anyComponent"]["oneOf"] = [{"$ref": f"#/components/{name}"} for name in ASSISTANT_UI_COMPONENTS]
    catalog["$id"] = BASE + "catalogs/assistant-ui/catalog.json"
    return catalog


def validator(catalog):
    registry = Registry().with_resources([
        (BASE + "common_types.json", Resource.from_contents(load("json/common_types.json"))),
        (catalog["$id"], Resource.from_contents(catalog)),
        (BASE + "catalog.json", Resource.from_contents(catalog)),
    ])
    return Draft202012Validator(load("json/server_to_client.json"), registry=registry, format_checker=FormatChecker())


def activities(path):
    """Every a2ui-surface activity content in a capture, with where it is."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:])
        if event.get("type") == "ACTIVITY_SNAPSHOT" and event.get("activityType") == "a2ui-surface":
            yield f"{path.name}:{number}", event.get("content")
        if event.get("type") == "MESSAGES_SNAPSHOT":
            for message in event.get("messages", []):
                if message.get("role") == "activity" and message.get("activityType") == "a2ui-surface":
                    yield f"{path.name}:{number} (snapshot)", message.get("content")


def check(where, content, spec, assistant_ui):
    if not isinstance(content, dict):
        return [f"{where}: content is not an object"]
    operations = content.get("a2ui_operations")
    if operations is None:
        status = content.get("status")
        extra = set(content) - {"status"} - LIFECYCLE.get(status, set())
        if status not in LIFECYCLE or extra:
            return [f"{where}: not a lifecycle state: {content}"]
        return []
    catalog_ids = {op["createSurface"]["catalogId"] for op in operations if "createSurface" in op}
    use = assistant_ui if catalog_ids == {ASSISTANT_UI_CATALOG_ID} else spec
    problems = []
    for operation in operations:
        for error in use.iter_errors(operation):
            problems.append(f"{where}: {error.message} at {list(error.absolute_path)}")
    return problems


def main(paths):
    basic = load("catalogs/basic/catalog.json")
    spec, assistant_ui = validator(basic), validator(assistant_ui_catalog(basic))
    passed = failed = 0
    for path in map(pathlib.Path, paths):
        for where, content in activities(path):
            problems = check(where, content, spec, assistant_ui)
            if problems:
                failed += 1
                print("\n".join(problems))
            else:
                passed += 1
    print(f"a2ui-schema: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
