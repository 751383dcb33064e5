"""Pastes the README's code blocks (or another Markdown file's: docs/tools.md
has one) into a copy of the repository, as a user following the README
would, so CI compiles what the README tells people to paste
(infra/fork-test.sh).

A block is announced by `<!-- paste: PATH -->` on the line before its
fence. For a file that does not exist yet the block is the whole file. For
`functions/<name>/src/tools/mod.rs` the block lists lines to add: `mod`
lines go beside the other `mod` lines, and a line whose comment says
`in all()`, `in task_tools()`, `in prompts()` or `in resources()` goes at
the end of that function's list.

    python3 infra/readme_snippets.py README.md DEST [OLD=NEW ...]
    python3 infra/readme_snippets.py --check-copies README.md

A block announced by `<!-- same as: PATH -->` shows a file of the repository
whole; `--check-copies` fails when one differs from its file (the test
command runs the files themselves).

    python3 infra/readme_snippets.py --commands README.md NAME

A block announced by `<!-- commands: NAME -->` holds shell commands a user
types; `--commands` prints them one a line, continuation lines joined, so a
script can run them as written (infra/inspector.sh).

OLD=NEW pairs, if any, are replaced in paths and code first (a copy whose
README still names other paths than its own).
"""

import pathlib
import re
import sys

MARKER = re.compile(r"^<!-- paste: (\S+) -->$")
COPY = re.compile(r"^<!-- same as: (\S+) -->$")
COMMANDS = re.compile(r"^<!-- commands: (\S+) -->$")


def blocks(readme, marker_pattern=MARKER):
    """(path, code) for every announced block, in README order."""
    lines = readme.splitlines()
    found = []
    for index, line in enumerate(lines):
        marker = marker_pattern.match(line.strip())
        if not marker:
            continue
        if index + 1 >= len(lines) or not lines[index + 1].startswith("```"):
            raise SystemExit(f"readme: the paste marker for {marker.group(1)} is not followed by a code block")
        end = next((i for i in range(index + 2, len(lines)) if lines[i].startswith("```")), None)
        if end is None:
            raise SystemExit(f"readme: the block for {marker.group(1)} is not closed")
        found.append((marker.group(1), "\n".join(lines[index + 2:end]) + "\n"))
    return found


def add_to_list(text, function, line):
    """`line` at the end of the list `fn function()` builds (before the
    list's name, returned on the function's last line)."""
    start = text.index(f"fn {function}()")
    end = re.compile(r"\n    \w+\n}").search(text, start).start()
    return text[:end] + "\n" + line + text[end:]


def register(mod_rs, block):
    text = mod_rs.read_text()
    for raw in block.splitlines():
        line = raw.split("//")[0].rstrip()
        if not line:
            continue
        if line.startswith("mod "):
            mods = [m.end() for m in re.finditer(r"^(pub )?mod \w+;$", text, re.M)]
            if mods:
                text = text[:mods[-1]] + "\n" + line + text[mods[-1]:]
            else:
                # No tools left (a fork that deleted the examples): before the imports.
                first_use = re.search(r"^use ", text, re.M).start()
                text = text[:first_use] + line + "\n\n" + text[first_use:]
        elif "in all()" in raw:
            text = add_to_list(text, "all", line)
        elif "in task_tools()" in raw:
            text = add_to_list(text, "task_tools", line)
        elif "in prompts()" in raw:
            text = add_to_list(text, "prompts", line)
        elif "in resources()" in raw:
            text = add_to_list(text, "resources", line)
        else:
            raise SystemExit(f"readme: do not know where this line goes in {mod_rs}: {raw!r}")
    mod_rs.write_text(text)


def check_copies(readme_path):
    root = pathlib.Path(readme_path).resolve().parent
    stale = [path for path, code in blocks(pathlib.Path(readme_path).read_text(), COPY)
             if (root / path).read_text() != code]
    for path in stale:
        print(f"readme: the block shown as {path} differs from the file; copy the file into the README", file=sys.stderr)
    return 1 if stale else 0


def commands(readme_path, name):
    found = [code for block, code in blocks(pathlib.Path(readme_path).read_text(), COMMANDS) if block == name]
    if not found:
        raise SystemExit(f"readme: no block announced as <!-- commands: {name} -->")
    for block in found:
        print(block.replace("\\\n", " "), end="")


def main():
    if sys.argv[1:2] == ["--check-copies"]:
        sys.exit(check_copies(sys.argv[2]))
    if sys.argv[1:2] == ["--commands"]:
        commands(sys.argv[2], sys.argv[3])
        return
    readme, dest, *renames = sys.argv[1:]
    pairs = [pair.split("=", 1) for pair in renames]

    def renamed(text):
        for old, new in pairs:
            text = text.replace(old, new)
        return text

    pasted = []
    for path, code in blocks(pathlib.Path(readme).read_text()):
        target = pathlib.Path(dest) / renamed(path)
        if target.name == "mod.rs":
            register(target, renamed(code))
        elif target.exists():
            raise SystemExit(f"readme: {target} exists already; the README's block would replace it")
        else:
            target.write_text(renamed(code))
        pasted.append(renamed(path))
    if not pasted:
        raise SystemExit("readme: no paste markers found")
    print(" ".join(dict.fromkeys(pasted)))


if __name__ == "__main__":
    main()
