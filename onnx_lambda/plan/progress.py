"""A progress display for long benchmark runs (rich), or plain lines when not on a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(title: str, total: int) -> Iterator[Callable[[str], None]]:
    """Yields ``advance(label)``: one step done, ``label`` says which."""
    if not sys.stderr.isatty():
        done = 0

        def plain(label: str) -> None:
            nonlocal done
            done += 1
            print(f"[{done}/{total}] {title}: {label}", file=sys.stderr, flush=True)

        yield plain
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                  transient=False) as bar:
        task = bar.add_task(title, total=total)

        def advance(label: str) -> None:
            bar.update(task, advance=1, description=f"{title}: {label}")

        yield advance
