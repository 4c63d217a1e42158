"""A ``rich`` progress display: a spinner while a step runs, then its outcome and duration."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape


class Steps:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.timings: dict[str, float] = {}

    @contextmanager
    def step(self, title: str) -> Iterator[Callable[[str], None]]:
        """Run one step; the yielded function prints a detail line under it."""
        start = time.perf_counter()

        def note(text: str) -> None:
            self.console.print(f"    [dim]{escape(text)}[/dim]", soft_wrap=True)

        try:
            with self.console.status(f"{title}…"):
                yield note
        except BaseException:
            self.console.print(f"[red]✗[/red] {title} [dim]({time.perf_counter() - start:.2f} s)"
                               "[/dim]")
            raise
        elapsed = time.perf_counter() - start
        self.timings[title] = elapsed
        self.console.print(f"[green]✓[/green] {title} [dim]({elapsed:.2f} s)[/dim]")
