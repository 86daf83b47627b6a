"""The documentation keeps up with the command line.

- Every command (walked from the Typer app's Click tree) has a heading ``statectl <command>`` on a
  page under ``docs/commands/``, and every option of it is named in that heading's section; the
  global options are named in ``docs/commands/`` or the README.
- Every ``$ statectl ...`` line of a console block in the README and the docs names a real command
  and only options that command has.
- Every relative link in the README, the changelog and ``docs/`` points at a file that exists (and
  at a heading that exists, when it has an anchor); the README stays under 16 KB.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
COMMAND_DOCS = DOCS / "commands"
README_MAX_BYTES = 15_000


# ---------------------------------------------------------------- the command tree
def _root():
    import typer.main

    from statectl.cli.main import app

    return typer.main.get_command(app)


def _walk(group, path=()):
    """(path, command) for every visible command below ``group``, groups included, depth first."""
    for name, command in getattr(group, "commands", {}).items():
        if getattr(command, "hidden", False):
            continue
        yield path + (name,), command
        yield from _walk(command, path + (name,))


def _long_flags(command) -> list[str]:
    flags = []
    for param in command.params:
        if param.param_type_name != "option" or getattr(param, "hidden", False):
            continue
        flags += [o for o in param.opts + param.secondary_opts if o.startswith("--") and o != "--help"]
    return flags


ROOT = _root()
COMMANDS = list(_walk(ROOT))
OPTIONS = [(path, flag) for path, command in COMMANDS for flag in _long_flags(command)]


# ---------------------------------------------------------------- reading markdown
_FENCE = re.compile(r"^\s*(```|~~~)")


def _lines_outside_fences(text: str):
    """(line, inside_fence) for every line; the fence lines themselves count as inside."""
    inside = False
    for line in text.splitlines():
        if _FENCE.match(line):
            yield line, True
            inside = not inside
            continue
        yield line, inside


def _sections(text: str) -> list[tuple[int, str, str]]:
    """(level, heading, text) for every heading outside code blocks; the text runs to the next
    heading of the same or a higher level, subsections included."""
    lines = list(_lines_outside_fences(text))
    headings = [
        (i, len(m.group(1)), m.group(2).strip())
        for i, (line, fenced) in enumerate(lines)
        if not fenced and (m := re.match(r"^(#{1,6})\s+(.*)$", line))
    ]
    out = []
    for n, (i, level, heading) in enumerate(headings):
        end = next((j for j, lv, _ in headings[n + 1 :] if lv <= level), len(lines))
        out.append((level, heading, "\n".join(line for line, _ in lines[i:end])))
    return out


def _command_sections(path: tuple[str, ...]) -> list[tuple[Path, str, str]]:
    """(page, heading, section text) of every heading under docs/commands/ naming ``statectl <path>``."""
    pattern = re.compile(rf"statectl {re.escape(' '.join(path))}(?![\w-])")
    found = []
    for page in sorted(COMMAND_DOCS.glob("*.md")):
        for _, heading, body in _sections(page.read_text(encoding="utf-8")):
            if pattern.search(heading):
                found.append((page, heading, body))
    return found


def _mentions(text: str, flag: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


def _markdown_files() -> list[Path]:
    return [README, REPO / "CHANGELOG.md"] + sorted(DOCS.rglob("*.md"))


def _console_commands(path: Path) -> list[str]:
    """Every ``$ statectl ...`` line of the console blocks of ``path``."""
    out, block = [], None
    for line in path.read_text(encoding="utf-8").splitlines():
        fence = _FENCE.match(line)
        if fence:
            block = None if block is not None else line.strip().lstrip("`~").strip()
            continue
        if block == "console" and line.lstrip().startswith("$ statectl "):
            out.append(line.lstrip()[2:])
    return out


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


# ---------------------------------------------------------------- every command is documented
@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p))
def test_every_command_has_a_heading_in_docs_commands(path):
    assert _command_sections(path), (
        f"no page under docs/commands/ has a heading (a line starting with #) naming `statectl {' '.join(path)}`"
    )


@pytest.mark.parametrize("path,flag", OPTIONS, ids=[f"{' '.join(p)} {f}" for p, f in OPTIONS])
def test_every_option_is_named_in_its_command_section(path, flag):
    sections = _command_sections(path)
    assert sections, f"`statectl {' '.join(path)}` has no heading under docs/commands/"
    where = ", ".join(f"{_rel(page)} ({heading!r})" for page, heading, _ in sections)
    assert any(_mentions(body, flag) for _, _, body in sections), (
        f"`statectl {' '.join(path)}` option {flag} is not named in its section: {where}"
    )


ROOT_FLAGS = _long_flags(ROOT)


@pytest.mark.parametrize("flag", ROOT_FLAGS)
def test_global_options_are_documented(flag):
    texts = [README.read_text(encoding="utf-8")] + [p.read_text(encoding="utf-8") for p in COMMAND_DOCS.glob("*.md")]
    assert any(_mentions(t, flag) for t in texts), (
        f"global option {flag} is named neither in README.md nor in docs/commands/"
    )


# ---------------------------------------------------------------- examples name real commands
def _resolve(line: str) -> tuple[tuple[str, ...], object]:
    """The command a console line runs, and its options: raises AssertionError when a word that
    should name a command does not, or an option is not the command's (or a global one)."""
    words = []
    for word in shlex.split(line, comments=True):
        if word in ("&&", "||", "|", "&", ";"):
            break
        words.append(word)
    assert words[:1] == ["statectl"], f"not a statectl command: {line!r}"
    words = words[1:]
    while words and words[0] in ROOT_FLAGS:  # global options come before the command
        words.pop(0)
    command, path, rest = ROOT, (), []
    for i, word in enumerate(words):
        if word.startswith("-"):
            rest = words[i:]
            break
        subcommands = getattr(command, "commands", None)
        if not subcommands:
            rest = words[i:]
            break
        assert word in subcommands, (
            f"`{' '.join(('statectl',) + path + (word,))}` is not a command; "
            f"`{' '.join(('statectl',) + path)}` has: {', '.join(sorted(subcommands))}"
        )
        command, path = subcommands[word], path + (word,)
    assert path and not getattr(command, "commands", None), f"`statectl {' '.join(path)}` is a group, not a command"
    known = set(_long_flags(command)) | set(ROOT_FLAGS) | {"--help"}
    for word in rest:
        if word.startswith("--"):
            flag = word.split("=", 1)[0]
            assert flag in known, f"`statectl {' '.join(path)}` has no option {flag}"
    return path, command


README_TOUR = _console_commands(README)


def test_the_readme_has_a_tour():
    assert len(README_TOUR) >= 5, (
        f"README.md's console blocks run {len(README_TOUR)} statectl commands; the tour wants five"
    )


@pytest.mark.parametrize("line", README_TOUR)
def test_readme_tour_commands_exist(line):
    _resolve(line)


DOC_EXAMPLES = [(page, line) for page in sorted(DOCS.rglob("*.md")) for line in _console_commands(page)]


@pytest.mark.parametrize("page,line", DOC_EXAMPLES, ids=[f"{_rel(p)}: {ln}" for p, ln in DOC_EXAMPLES])
def test_docs_examples_name_real_commands(page, line):
    _resolve(line)


# ---------------------------------------------------------------- size and links
def test_readme_is_short():
    size = len(README.read_bytes())
    assert size < README_MAX_BYTES, (
        f"README.md is {size:,} bytes; keep it under {README_MAX_BYTES:,} (move detail to docs/)"
    )


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: links become their text, lower case, punctuation dropped,
    spaces become hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for _, heading, _ in _sections(page.read_text(encoding="utf-8")):
        slug = _slug(heading)
        anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _links(page: Path) -> list[str]:
    text = "\n".join(line for line, fenced in _lines_outside_fences(page.read_text(encoding="utf-8")) if not fenced)
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return [m.group(1) for m in _LINK.finditer(text)]


LINKS = [
    (page, target)
    for page in _markdown_files()
    if page.exists()
    for target in _links(page)
    if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target)
]


def test_the_docs_link_to_each_other():
    assert LINKS, "no relative links found: the link check would check nothing"


@pytest.mark.parametrize("page,target", LINKS, ids=[f"{_rel(p)} -> {t}" for p, t in LINKS])
def test_relative_links_resolve(page, target):
    file_part, _, anchor = target.partition("#")
    linked = (page.parent / file_part).resolve() if file_part else page
    assert linked.exists(), f"{_rel(page)} links to {target}, which does not exist"
    if anchor and linked.suffix == ".md":
        assert anchor in _anchors(linked), (
            f"{_rel(page)} links to {target}, but {linked.name} has no heading with the anchor #{anchor}"
        )


# ---------------------------------------------------------------- every page can be found
DOC_PAGES = sorted(p for p in DOCS.rglob("*.md"))


def _linked_pages(page: Path) -> set[Path]:
    return {
        (page.parent / t.partition("#")[0]).resolve()
        for t in _links(page)
        if t.partition("#")[0] and not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", t)
    }


@pytest.mark.parametrize("doc", [p for p in DOC_PAGES if p != DOCS / "index.md"], ids=_rel)
def test_docs_index_lists_every_page(doc):
    assert doc.resolve() in _linked_pages(DOCS / "index.md"), f"docs/index.md does not link to {_rel(doc)}"


@pytest.mark.parametrize("doc", DOC_PAGES, ids=_rel)
def test_readme_links_every_docs_page(doc):
    assert doc.resolve() in _linked_pages(README), f"README.md does not link to {_rel(doc)}"
