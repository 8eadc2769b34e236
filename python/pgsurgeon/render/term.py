"""Terminal output through rich, imported on first use: rich costs ~45 ms of import time, which a
quick command (a scan of a small directory, --help) should not pay."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table


def line(text: str, *, stderr: bool = False) -> None:
    """One line of plain text, as it is (no markup, no emoji codes, no wrapping), without importing rich: what a
    command that prints sentences only needs. sys.stderr is looked up now, so that a running progress display's
    redirection (rich.live) keeps the line above its bar."""
    print(text, file=sys.stderr if stderr else sys.stdout)


def console(*, stderr: bool = False, **kwargs: Any) -> Console:
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich exits silently with status 1; the CLI reports a closed pipe like every other error instead.
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "broken pipe")

    kwargs.setdefault("highlight", False)
    if (
        "width" not in kwargs
        and not os.environ.get("COLUMNS")
        and not _is_terminal(sys.stderr if stderr else sys.stdout)
    ):
        # Piped or redirected, rich would assume 80 columns and wrap tables mid-cell ("81… LP…"): a file or grep
        # wants each row on one line, as wide as it is.
        kwargs["width"] = PIPED_WIDTH
    return _Console(file=sys.stderr if stderr else None, **kwargs)


PIPED_WIDTH = 10_000


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def table(*columns: str, **kwargs: Any) -> Table:
    from rich.table import Table

    kwargs.setdefault("header_style", "bold")
    t = Table(**kwargs)
    for col in columns:
        t.add_column(col)
    return t


def transfer_progress(**kwargs: Any) -> Progress:
    """A progress bar for byte counts: bar, done/total, speed, time left."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        **kwargs,
    )


class Ticker:
    """-P progress where stderr is not a terminal (a log, CI, a pipe): a plain line per interval instead of a live
    bar, so that progress shows up at all. The interval is $PGSURGEON_PROGRESS_INTERVAL seconds (default 5)."""

    def __init__(self, label: str, interval: float | None = None) -> None:
        import os

        self.label = label
        env = os.environ.get("PGSURGEON_PROGRESS_INTERVAL", "")
        self.interval = interval if interval is not None else float(env) if env else 5.0
        self.last = float("-inf")

    def __call__(self, text: str, *, force: bool = False) -> None:
        import time

        now = time.monotonic()
        if force or now - self.last >= self.interval:
            self.last = now
            print(f"{self.label}: {text}", file=sys.stderr, flush=True)


def stderr_is_terminal() -> bool:
    return _is_terminal(sys.stderr)


def eta(done: float, total: float, elapsed: float) -> str:
    """'ETA 1 min 05 s' from the share done so far; empty before anything is done."""
    if done <= 0 or total <= 0 or done >= total:
        return ""
    left = int(elapsed * (total - done) / done)
    return f"ETA {left // 60} min {left % 60:02d} s" if left >= 60 else f"ETA {left} s"


@contextlib.contextmanager
def byte_progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """-P progress over a byte count: a live bar on a terminal, else a plain line per interval (see Ticker).
    Yields the callback ``(bytes_done, bytes_total)``."""
    if not stderr_is_terminal():
        import time

        tick, began = Ticker(label), time.monotonic()

        def line(done: int, total: int) -> None:
            elapsed = max(time.monotonic() - began, 1e-6)
            share = f" of {total / 1e6:.1f} MB ({100 * done / total:.0f}%)" if total else ""
            tick(f"{done / 1e6:.1f} MB{share}, {done / 1e6 / elapsed:.0f} MB/s {eta(done, total, elapsed)}".strip())

        yield line
        tick("done", force=True)
        return
    with transfer_progress(console=console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=None)

        def show(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total or None)

        yield show
