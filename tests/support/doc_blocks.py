"""The shell and Python blocks of a documentation page, and a reader who runs them in order in
one terminal of a fresh clone (tests/e2e/test_docs_as_written.py).

A fenced block runs when its language is ``bash``, ``sh``, ``shell`` or ``python``; the words
after the language (the fence's info string, invisible once rendered) say how:

- ``server``: a command that serves until stopped (``./scripts/run``, ``onnx-lambda serve``):
  started in the background, ready once it prints ``READY URL`` (``./scripts/run``: ``ready
  on URL``), stopped with SIGINT (Ctrl-C) when the page ends or the next ``server`` block
  starts; that block must say so (``Ctrl-C``), as the reader has to stop the first;
- ``deploy``: needs an AWS account (and Docker for ``sam build``): checked for syntax only;
- ``needs=WHAT``: needs something a fresh clone does not have (``needs=checkpoint``: a
  language model's folder): checked for syntax only;
- ``slow``: runs, and marks the page's test ``slow``.

Blocks of other languages (``json``, ``yaml``, output) are not run. A shell block runs with
``bash -e -o pipefail`` in the state the blocks before it left (environment, working folder;
``set -a``, so a plain assignment carries over as it does in one terminal); a Python block runs
as ``python -`` from ``PATH``. Port 3000 and the ports after it (a Function URL's) are moved to
free ones, and a ``server`` command gets ``--port``: tests never take fixed ports.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SHELL = ("bash", "sh", "shell")
FENCE = re.compile(r"^(\s*)```(.*)$")
READY = re.compile(r"READY (\S+)|ready on (\S+?)\. Try")
DOC_PORT = 3000
PORTS = 10  # 3000 … 3009: the HTTP front and the Function URLs after it
SERVER_COMMAND = re.compile(r"(\./scripts/run|onnx-lambda serve)\b")


@dataclass(frozen=True)
class Block:
    page: str  # the page's path, relative to the checkout
    line: int  # the line of its opening fence
    language: str  # bash | python
    code: str
    server: bool = False
    slow: bool = False
    syntax_only: str = ""  # why it is only checked for syntax ("deploy", "needs=…"), or ""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(path: Path, page: str) -> list[Block]:
    """The runnable blocks of ``path`` in page order (``page`` names it in messages)."""
    found: list[Block] = []
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, info = opening.group(1), opening.group(2).split()
        end = next((k for k in range(index + 1, len(lines))
                    if lines[k].strip() == "```"), len(lines))
        code = "\n".join(line[len(indent):] if line.startswith(indent) else line
                         for line in lines[index + 1:end]) + "\n"
        language = info[0] if info else ""
        if language in (*SHELL, "python"):
            words = info[1:]
            needs = [w for w in words if w.startswith("needs=")]
            unknown = [w for w in words if w not in ("server", "deploy", "slow") and w not in needs]
            if unknown:
                raise ValueError(f"{page}:{index + 1}: unknown block mark(s) {unknown} "
                                 "(server, deploy, needs=WHAT, slow)")
            found.append(Block(
                page, index + 1, "python" if language == "python" else "bash", code,
                server="server" in words, slow="slow" in words,
                syntax_only=" ".join([w for w in words if w == "deploy"] + needs)))
        index = end + 1
    return found


def free_ports(count: int = PORTS) -> int:
    """A first port ``p`` such that ``p … p + count - 1`` are free now."""
    import socket

    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = probe.getsockname()[1]
        if first + count > 65535:
            continue
        taken = []
        try:
            for port in range(first, first + count):
                sock = socket.socket()
                taken.append(sock)
                sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for sock in taken:
                sock.close()
        return first
    raise RuntimeError("no run of free ports")


def moved(code: str, first_port: int, server: bool) -> str:
    """``code`` on the test's ports: ``:3000`` … ``:3009`` moved, a server command given
    ``--port``."""
    code = re.sub(r"(?<=:)300(\d)\b", lambda m: str(first_port + int(m.group(1))), code)
    if server:
        code = SERVER_COMMAND.sub(lambda m: f"{m.group(1)} --port {first_port}", code, count=1)
    return code


class DocError(AssertionError):
    pass


@dataclass
class Reader:
    """One terminal of a reader following a page: its environment and working folder carry
    from block to block; servers run in the background until stopped."""

    checkout: Path
    env: dict[str, str]
    scratch: Path  # for the reader's state files and server logs
    first_port: int = field(default_factory=free_ports)
    cwd: Path | None = None
    servers: list[tuple[Block, subprocess.Popen[bytes], Path]] = field(default_factory=list)
    timeout_s: float = 240.0

    timings: list[tuple[str, float]] = field(default_factory=list)  # (where, seconds)

    def run(self, block: Block) -> None:
        start = time.monotonic()
        if block.syntax_only:
            self._syntax(block)
        elif block.server:
            self._serve(block)
        else:
            self._command(block)
        self.timings.append((block.where, time.monotonic() - start))

    def stop(self) -> None:
        """Ctrl-C every server still running, as a reader closing the terminal would."""
        while self.servers:
            _block, process, _log = self.servers.pop()
            _interrupt(process)

    def _script(self, block: Block, state: bool) -> tuple[str, int]:
        """The bash text that runs ``block`` (a Python block through ``python -``), and how
        many lines come before the block's own first line."""
        code = moved(block.code, self.first_port, block.server)
        if block.language == "python":
            code = f"python - <<'__DOC_PYTHON__'\n{code}__DOC_PYTHON__\n"
        save = ('trap \'env -0 > "$DOC_STATE/env"; pwd > "$DOC_STATE/cwd"\' EXIT\n'
                if state else "")
        prelude = ("set -a\n" + save +
                   "trap 'echo \"DOC-FAILED-AT $LINENO\" >&2' ERR\n"
                   "set -eE -o pipefail\n")
        return prelude + code, prelude.count("\n")

    def _launch(self, block: Block, state: bool, **kwargs: object) -> subprocess.Popen[bytes]:
        script, _ = self._script(block, state)
        path = self.scratch / f"block-{block.line}.sh"
        path.write_text(script)
        env = {**self.env, "DOC_STATE": str(self.scratch)}
        return subprocess.Popen(["bash", str(path)], cwd=self.cwd or self.checkout, env=env,
                                **kwargs)  # type: ignore[call-overload]

    def _command(self, block: Block) -> None:
        process = self._launch(block, True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            out, _ = process.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
            self._fail(block, f"still running after {self.timeout_s:.0f} s", out)
        if process.returncode != 0:
            self._fail(block, f"exit status {process.returncode}", out)
        self._load_state()

    def _serve(self, block: Block) -> None:
        if self.servers and "ctrl-c" not in block.code.lower():
            running = ", ".join(b.where for b, _p, _l in self.servers)
            raise DocError(f"{block.where}: starts a server while the one from {running} still "
                           "runs on the same port: the block must say to stop it (Ctrl-C)")
        self.stop()
        log = self.scratch / f"server-{block.line}.log"
        with log.open("wb") as sink:
            process = self._launch(block, False, stdout=sink, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        self.servers.append((block, process, log))
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            if READY.search(log.read_text(errors="replace")):
                return
            if process.poll() is not None:
                self._fail(block, f"the server exited ({process.returncode}) before it was "
                           "ready", log.read_bytes())
            time.sleep(0.1)
        self._fail(block, f"not ready after {self.timeout_s:.0f} s", log.read_bytes())

    def _syntax(self, block: Block) -> None:
        if block.language == "python":
            try:
                compile(block.code, block.where, "exec")
            except SyntaxError as error:
                raise DocError(f"{block.where} ({block.syntax_only}): {error}") from None
            return
        checked = subprocess.run(["bash", "-n"], input=block.code.encode(),
                                 capture_output=True, check=False)
        if checked.returncode != 0:
            raise DocError(f"{block.where} ({block.syntax_only}): not valid bash: "
                           f"{checked.stderr.decode(errors='replace')}")

    def _load_state(self) -> None:
        raw = (self.scratch / "env").read_bytes()
        self.env = dict(item.split("=", 1) for item in raw.decode().split("\0")
                        if "=" in item)
        for name in ("DOC_STATE", "SHLVL", "_", "OLDPWD", "PWD"):
            self.env.pop(name, None)
        self.cwd = Path((self.scratch / "cwd").read_text().strip())

    def _fail(self, block: Block, what: str, output: bytes) -> None:
        text = output.decode(errors="replace")
        _, before = self._script(block, True)
        line = None  # the failing line within the block (1: the line after the fence)
        if block.language == "bash" and (found := re.findall(r"DOC-FAILED-AT (\d+)", text)):
            line = int(found[-1]) - before
        elif found := re.findall(r'File "<stdin>", line (\d+)', text):
            line = int(found[-1])
        where = f"{block.page}:{block.line + line}" if line else block.where
        servers = "".join(f"\n--- server {b.where} (log tail) ---\n"
                          + log.read_text(errors="replace")[-1500:]
                          for b, _p, log in self.servers if b is not block)
        tail = re.sub(r"DOC-FAILED-AT \d+\n?", "", text)[-4000:]
        raise DocError(f"{where}: {what} (block at {block.where})\n--- output (tail) ---\n"
                       f"{tail}{servers}")


def _interrupt(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
