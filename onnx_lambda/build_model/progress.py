"""A ``rich`` progress display: a spinner while a step runs, then its outcome and duration."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape


class Note:
    """Prints a detail line under the running step; ``title`` may be changed to say how the
    step ended (e.g. what a quantization really applied)."""

    def __init__(self, console: Console, title: str) -> None:
        self.console = console
        self.title = title

    def __call__(self, text: str) -> None:
        self.console.print(f"    [dim]{escape(text)}[/dim]", soft_wrap=True)


class Steps:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.timings: dict[str, float] = {}

    @contextmanager
    def step(self, title: str) -> Iterator[Note]:
        """Run one step; the yielded ``Note`` prints a detail line under it."""
        start = time.perf_counter()
        note = Note(self.console, title)
        try:
            with self.console.status(f"{title}…"):
                yield note
        except BaseException:
            self.console.print(f"[red]✗[/red] {escape(note.title)} "
                               f"[dim]({time.perf_counter() - start:.2f} s)[/dim]")
            raise
        elapsed = time.perf_counter() - start
        self.timings[title] = elapsed
        self.console.print(f"[green]✓[/green] {escape(note.title)} [dim]({elapsed:.2f} s)[/dim]")
