"""RFC 6902 JSON Patch application, atomic, for the state checks: a producer computes its
`STATE_DELTA`s against the consumer's current state (events/state#state_delta)."""

from __future__ import annotations

import copy


class PatchError(Exception):
    pass


def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"{pointer!r} is not a JSON Pointer")
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def _parent(document, tokens: list[str]):
    node = document
    for token in tokens[:-1]:
        node = _child(node, token)
    return node


def _child(node, token: str):
    if isinstance(node, dict):
        if token not in node:
            raise PatchError(f"no member {token!r}")
        return node[token]
    if isinstance(node, list):
        index = _index(node, token, allow_end=False)
        return node[index]
    raise PatchError(f"cannot descend into {type(node).__name__} with {token!r}")


def _index(node: list, token: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(node)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"{token!r} is not an array index")
    index = int(token)
    if index > len(node) or (index == len(node) and not allow_end):
        raise PatchError(f"index {index} out of range")
    return index


def _get(document, pointer: str):
    node = document
    for token in _tokens(pointer):
        node = _child(node, token)
    return node


def _add(document, pointer: str, value):
    tokens = _tokens(pointer)
    if not tokens:
        return value
    parent = _parent(document, tokens)
    if isinstance(parent, dict):
        parent[tokens[-1]] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, tokens[-1], allow_end=True), value)
    else:
        raise PatchError(f"cannot add into {type(parent).__name__}")
    return document


def _remove(document, pointer: str):
    tokens = _tokens(pointer)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _parent(document, tokens)
    if isinstance(parent, dict):
        if tokens[-1] not in parent:
            raise PatchError(f"no member {tokens[-1]!r} to remove")
        del parent[tokens[-1]]
    elif isinstance(parent, list):
        del parent[_index(parent, tokens[-1], allow_end=False)]
    else:
        raise PatchError("cannot remove from a scalar")
    return document


def apply(document, operations: list[dict]):
    """The patched copy of `document`; raises PatchError when any operation fails."""
    result = copy.deepcopy(document)
    for operation in operations:
        op, path = operation.get("op"), operation.get("path", "")
        if op == "add":
            result = _add(result, path, copy.deepcopy(operation.get("value")))
        elif op == "remove":
            result = _remove(result, path)
        elif op == "replace":
            _get(result, path)
            result = _add(_remove(result, path) if path else result, path, copy.deepcopy(operation.get("value")))
        elif op in ("move", "copy"):
            value = copy.deepcopy(_get(result, operation.get("from", "")))
            if op == "move":
                result = _remove(result, operation.get("from", ""))
            result = _add(result, path, value)
        elif op == "test":
            if _get(result, path) != operation.get("value"):
                raise PatchError(f"test of {path!r} failed")
        else:
            raise PatchError(f"unknown op {op!r}")
    return result
