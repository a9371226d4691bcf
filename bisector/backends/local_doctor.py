"""What `bisector doctor` checks for the local backend: that each command can start.

Each `[backends.local]` command is bash text run in the candidate's worktree. Its
first word must be something bash can run: a builtin or keyword, a program on PATH,
or an absolute path that exists and is executable. A path relative to the worktree
(`./hack/local-up.sh`) can only be checked per candidate: doctor says so.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

from bisector.backends.registry import Finding
from bisector.config import Section

COMMANDS = ("build", "launch", "collect", "teardown")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_BASH_WORDS = {
    "cd", "echo", "exit", "export", "true", "false", "test", "[", "[[", "set", "source", ".",
    "if", "for", "while", "until", "case", "exec", "eval", "printf", "read", "sleep", "trap",
    "(", "{", "!", ":", "time", "command", "env",
}  # fmt: skip


def first_word(script: str) -> str | None:
    try:
        words = shlex.split(script, comments=True)
    except ValueError:
        return None
    for word in words:
        if not _ASSIGNMENT.match(word):
            return word
    return None


def _check_command(key: str, script: str) -> Finding:
    word = first_word(script)
    what = f"[backends.local] {key}"
    if word is None:
        return Finding(False, what, f"cannot read the command {script!r}; fix its quoting")
    if word in _BASH_WORDS or word.startswith("$"):
        return Finding(True, what, f"{word} (a shell word)")
    if "/" not in word:
        found = shutil.which(word)
        if found is None:
            return Finding(False, what, f"{word}: not found on PATH; install it or use a full path")
        return Finding(True, what, found)
    path = Path(word).expanduser()
    if not path.is_absolute():
        return Finding(True, what, f"{word} (relative to each candidate's worktree; checked there)")
    if not path.exists():
        return Finding(False, what, f"{word} does not exist; fix the path in the config")
    if not os.access(path, os.X_OK):
        return Finding(False, what, f"{word} is not executable; chmod +x it")
    return Finding(True, what, word)


def check(section: Section, tree: Path | None = None) -> list[Finding]:
    return [
        _check_command(key, section.get_str(key))
        for key in COMMANDS
        if isinstance(section.data.get(key), str)
    ]
