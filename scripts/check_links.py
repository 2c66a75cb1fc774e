#!/usr/bin/env python3
"""Checks the relative links and anchors of README.md, CHANGELOG.md and docs/*.md, offline, and
that the docs keep one index and plain words.

    python3 scripts/check_links.py

A link `[text](target)` whose target is not a URL (no `scheme:`) must name a file or directory
of the repository, relative to the document; a `#anchor` (alone, or after a Markdown file) must
be a heading of that document, slugged as GitHub slugs them (lower case, punctuation dropped,
spaces to hyphens, `-1`, `-2` … for repeats). Links inside code blocks and inline code are not
links. Then:
  - the README's reference table and docs/README.md list the same pages, and every docs/*.md
    page is in them;
  - no user document (these, and the examples' and clients' READMEs) names the project's rounds of work ("this round", "round 3") or a test
    function (a `snake_case_name_of_five_words_or_more` or a `…::tests::…` path): a reader
    cannot look either up;
  - the README, a front page, stays within 250 lines.
Exits non-zero, naming each problem with its file and line.
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


TABLE_LINK = re.compile(r"^\| \[[^\]]+\]\(([^)#]+\.md)\) \|")
ROUNDS = re.compile(r"\b(?:this|last|next|that|the|each|every) round\b(?![ -]trip)|\bround \d|\(round\b", re.IGNORECASE)
TEST_NAME = re.compile(r"`[^`]*(?:\b[a-z0-9]+(?:_[a-z0-9]+){4,}|::tests::)[^`]*`")
MAX_README_LINES = 250


def indexed(path: str, prefix: str) -> list[str]:
    """The pages a document's reference table links to, as paths relative to docs/."""
    pages = []
    for line in open(path, encoding="utf-8"):
        match = TABLE_LINK.match(line)
        if match and match.group(1).startswith(prefix):
            pages.append(match.group(1)[len(prefix):])
    return pages


def index_problems() -> list[str]:
    front = indexed(os.path.join(ROOT, "README.md"), "docs/")
    index = indexed(os.path.join(ROOT, "docs", "README.md"), "")
    pages = sorted(os.path.basename(path) for path in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    problems = []
    for page in sorted(set(front) ^ set(index)):
        where = "README.md's reference table" if page in front else "docs/README.md"
        problems.append(f"index: only {where} lists {page}; the two must list the same pages")
    for page in sorted(set(pages) - set(front) - set(index) - {"README.md"}):
        problems.append(f"index: docs/{page} is in neither README.md's reference table nor docs/README.md")
    return problems


def word_problems(path: str) -> list[str]:
    """Rounds of work and test-function names, which mean nothing to a reader."""
    rel = os.path.relpath(path, ROOT)
    if rel == "CHANGELOG.md":
        return []
    problems = []
    text = open(path, encoding="utf-8").read()
    for number, line in enumerate(text.split("\n"), start=1):
        if ROUNDS.search(line):
            problems.append(f"{rel}:{number}: names a round of work: {ROUNDS.search(line).group(0)!r}")
        for name in TEST_NAME.findall(line):
            problems.append(f"{rel}:{number}: names a test function: {name}")
    if rel == "README.md" and text.count("\n") > MAX_README_LINES:
        problems.append(f"README.md: {text.count(chr(10))} lines; the front page keeps to {MAX_README_LINES} (the rest goes in docs/)")
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
    words = index_problems()
    readmes = sorted(glob.glob(os.path.join(ROOT, "examples", "*", "README.md")))
    readmes += sorted(glob.glob(os.path.join(ROOT, "clients", "*", "README.md")))
    for path in documents() + readmes:
        words += word_problems(path)
    for problem in words:
        print(f"FAILED {problem}")
    print(f"docs words and index: {len(words)} problems")
    print(f"docs-words: {0 if words else 1} passed, {1 if words else 0} failed")
    return 1 if problems or words else 0


if __name__ == "__main__":
    sys.exit(main())
