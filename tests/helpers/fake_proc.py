"""A recording fake of `bisector.proc.run`: the one stand-in for external programs.

Install it with `fake = FakeProc.install(monkeypatch)`. Every call is recorded
as a `Call` (argv, cwd, env, timeout, stdin). Responses are scripted by rules
matched against the argv joined with spaces: the first rule whose pattern is a
substring of the command wins; a rule with `times` is used that many times,
then the next matching rule applies. Unmatched commands succeed with empty
output, so a test only scripts what matters to it.

With `log=`, the fake appends the same block the real `run` would (command
line, output, outcome), so tests of command logs need no real programs.

A rule can return output, fail with a code and stderr (raising
`proc.CommandError` when `check` is on, as the real `run` does), raise any
exception (e.g. KeyboardInterrupt), or run an `effect` (e.g. create the files a
real build would produce) before answering.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bisector import proc, proclog


@dataclass(frozen=True)
class Call:
    argv: list[str]
    cwd: str | None
    env: dict[str, str]
    timeout: float | None
    stdin: str | None
    log: Path | None = None

    @property
    def line(self) -> str:
        return shlex.join(self.argv)


@dataclass
class Rule:
    pattern: str
    code: int = 0
    stdout: str = ""
    stderr: str = ""
    raises: BaseException | None = None
    effect: Callable[[Call], object] | None = None
    times: int | None = None  # None: every time


@dataclass
class FakeProc:
    rules: list[Rule] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)

    @classmethod
    def install(cls, monkeypatch: pytest.MonkeyPatch) -> FakeProc:
        fake = cls()
        monkeypatch.setattr(proc, "run", fake.run)
        return fake

    def on(
        self,
        pattern: str,
        *,
        code: int = 0,
        stdout: str = "",
        stderr: str = "",
        raises: BaseException | None = None,
        effect: Callable[[Call], object] | None = None,
        times: int | None = None,
        first: bool = False,
    ) -> FakeProc:
        """Script a response; `first` puts the rule ahead of earlier ones."""
        rule = Rule(pattern, code, stdout, stderr, raises, effect, times)
        self.rules.insert(0, rule) if first else self.rules.append(rule)
        return self

    def run(
        self,
        cmd: Sequence[str],
        *,
        cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = proc.DEFAULT_TIMEOUT_S,
        check: bool = True,
        stdin: str | None = None,
        log: Path | None = None,
    ) -> proc.CmdResult:
        call = Call(
            list(cmd), None if cwd is None else str(cwd), dict(env or {}), timeout, stdin, log
        )
        self.calls.append(call)
        entry = proclog.begin(log, cmd, cwd)
        rule = self._match(call.line) or Rule("")
        if rule.effect is not None:
            rule.effect(call)
        if rule.raises is not None:
            entry.end("", "", f"interrupted ({type(rule.raises).__name__})", None)
            raise rule.raises
        entry.end(rule.stdout, rule.stderr, f"exited with code {rule.code}", 0.0)
        if check and rule.code != 0:
            raise proc.CommandError(call.argv, rule.code, rule.stdout, rule.stderr)
        return proc.CmdResult(rule.code, rule.stdout, rule.stderr)

    def _match(self, line: str) -> Rule | None:
        for rule in self.rules:
            if rule.pattern in line and (rule.times is None or rule.times > 0):
                if rule.times is not None:
                    rule.times -= 1
                return rule
        return None

    # -- assertions helpers -------------------------------------------------
    @property
    def lines(self) -> list[str]:
        return [c.line for c in self.calls]

    def find(self, pattern: str) -> list[Call]:
        return [c for c in self.calls if pattern in c.line]

    def index(self, pattern: str) -> int:
        for i, call in enumerate(self.calls):
            if pattern in call.line:
                return i
        raise AssertionError(f"no call matching {pattern!r} among:\n" + "\n".join(self.lines))
