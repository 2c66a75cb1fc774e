#!/usr/bin/env python3
"""Checks the relative links and anchors of README.md, CHANGELOG.md and docs/*.md, offline.

    python3 scripts/check_links.py

A link `[text](target)` whose target is not a URL (no `scheme:`) must name a file or directory
of the repository, relative to the document; a `#anchor` (alone, or after a Markdown file) must
be a heading of that document, slugged as GitHub slugs them (lower case, punctuation dropped,
spaces to hyphens, `-1`, `-2` … for repeats). Links inside code blocks and inline code are not
links. Exits non-zero, naming each broken link with its file and line.
"""

from __future__ import annotations

import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"`+[^`]*`+")


def documents() -> list[str]:
    found = [os.path.join(ROOT, name) for name in ("README.md", "CHANGELOG.md")]
    found += sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return [path for path in found if os.path.exists(path)]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks, inline code removed."""
    lines = []
    fence = None
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.lstrip()
        if fence is None and (stripped.startswith("```") or stripped.startswith("~~~")):
            fence = stripped[:3]
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        lines.append((number, INLINE_CODE.sub(lambda m: "x" * len(m.group(0)), line)))
    return lines


def slug(heading: str) -> str:
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    fence = None
    for line in text.split("\n"):
        stripped = line.lstrip()
        if fence is None and (stripped.startswith("```") or stripped.startswith("~~~")):
            fence = stripped[:3]
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        match = re.match(r"(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    for explicit in re.findall(r'<a (?:name|id)="([^"]+)"', text):
        found.add(explicit)
    return found


def check(path: str, cache: dict[str, set[str]]) -> list[str]:
    problems = []
    text = open(path, encoding="utf-8").read()
    rel = os.path.relpath(path, ROOT)
    for number, line in prose_lines(text):
        for match in LINK.finditer(line):
            target = match.group(1) or match.group(2)
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue  # a URL (https:, mailto:): not checked offline
            file_part, _, anchor = target.partition("#")
            where = f"{rel}:{number}: {target}"
            dest = path if not file_part else os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            dest_rel = os.path.relpath(dest, ROOT)
            if not os.path.exists(dest):
                problems.append(f"{where}: no such file {dest_rel}")
                continue
            if not anchor:
                continue
            if not dest.endswith(".md"):
                problems.append(f"{where}: an anchor into a file that is not Markdown")
                continue
            if dest not in cache:
                cache[dest] = anchors(open(dest, encoding="utf-8").read())
            if anchor not in cache[dest]:
                problems.append(f"{where}: no heading #{anchor} in {dest_rel}")
    return problems


def main() -> int:
    cache: dict[str, set[str]] = {}
    problems, checked = [], 0
    for path in documents():
        problems += check(path, cache)
        checked += 1
    for problem in problems:
        print(f"BROKEN {problem}")
    print(f"links: {checked} documents checked, {len(problems)} broken links")
    print(f"links: {checked - min(checked, len({p.split(':')[0] for p in problems}))} passed, "
          f"{len({p.split(':')[0] for p in problems})} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
