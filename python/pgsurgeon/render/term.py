"""Terminal output through rich, imported on first use: rich costs ~45 ms of import time, which a
quick command (a scan of a small directory, --help) should not pay."""

from __future__ import annotations

import errno
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table


def console(*, stderr: bool = False, **kwargs: Any) -> Console:
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich exits silently with status 1; the CLI reports a closed pipe like every other error instead.
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "broken pipe")

    kwargs.setdefault("highlight", False)
    return _Console(file=sys.stderr if stderr else None, **kwargs)


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
