"""The shape of the machinery at a commit, by the measures issue-style
restructurings are judged on: the largest files, the edge's largest file,
the places that decide a request's era, the lists of method names, the SSE
framing sites and the environment reads. Reads the commit's files from git,
test code left out (`tests.rs` files and `#[cfg(test)]` modules).

    python3 infra/structure_report.py [REV ...]     # default: HEAD

Several revisions print side by side, one column each.
"""

import re
import subprocess
import sys

SOURCES = "functions"


def files(rev):
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "--", SOURCES],
                            capture_output=True, text=True, check=True).stdout.split()
    for path in listed:
        if path.endswith(".rs") and not path.endswith("/tests.rs"):
            text = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=True).stdout
            yield path, text


def code_of(text):
    """The text before its test module, comments dropped."""
    cut = re.search(r"^#\[cfg\(test\)\]\s*\nmod tests", text, re.M)
    text = text[:cut.start()] if cut else text
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))


ERA = re.compile(r"\bEra::(Modern|Legacy)\b|\.era\s*[!=]=|Claimed::|is_legacy|legacy::shape")
METHOD_NAME = re.compile(r'"(tools|prompts|resources|tasks|completion|server|subscriptions|logging)/[A-Za-z/]+"')
FRAMING = re.compile(r'\\n\\n"|b":\\n|":\\n')
ENV = re.compile(r"\benv::var(_os)?\(|std::env::var")


def measure(rev):
    sizes, era, lists, framing, env = [], 0, 0, 0, {}
    for path, text in files(rev):
        lines = text.count("\n")
        sizes.append((lines, path))
        code = code_of(text)
        era += len({n for n, line in enumerate(code.splitlines()) if ERA.search(line)})
        # A list: three or more method names within five lines of each other.
        names = [n for n, line in enumerate(code.splitlines()) if METHOD_NAME.search(line)]
        runs, run = 0, []
        for n in names:
            run = [m for m in run if n - m <= 5] + [n]
            if len(run) == 3:
                runs += 1
        lists += runs
        if not path.endswith("edge/sse.rs"):
            framing += len(FRAMING.findall(code))
        reads = len(ENV.findall(code))
        if reads:
            crate = path.split("/")[1]
            env.setdefault(crate, set()).add(path)
    sizes.sort(reverse=True)
    edge = [s for s in sizes if "/edge/" in s[1]]
    return {
        "largest files": ", ".join(f"{p.split('/src/')[-1]} {n}" for n, p in sizes[:3]),
        "edge's largest file": f"{edge[0][1].split('/src/')[-1]} {edge[0][0]}" if edge else "-",
        "lines that decide or test the era": str(era),
        "lists of method names": str(lists),
        "SSE framing sites outside sse.rs": str(framing),
        "modules reading the environment": ", ".join(f"{crate} {len(paths)}" for crate, paths in sorted(env.items())),
    }


def main():
    revs = sys.argv[1:] or ["HEAD"]
    results = [measure(rev) for rev in revs]
    print("measure | " + " | ".join(revs))
    for key in results[0]:
        print(f"{key} | " + " | ".join(result[key] for result in results))


if __name__ == "__main__":
    main()
