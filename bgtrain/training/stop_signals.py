"""Ctrl-C (SIGINT) and SIGTERM during a training run: save the resumable state, then stop.

A long run must not lose its work to a Ctrl-C or to a scheduler's SIGTERM. While ``StopSignals`` is
installed, the first such signal only sets ``received`` (and says on standard error what will happen);
the training loop looks at it after each step, where its state is whole, writes ``latest.pt`` with the
full training state and raises ``StopRequested`` (``stopped``), which the command line reports in
one line with the status of the signal (130 for SIGINT, 143 for SIGTERM). A second signal stops at once
(a plain KeyboardInterrupt: the last checkpoint written stays, every file being written atomically).

One module for TD and supervised training alike: the loops only ask ``stop.received`` and, when it is
set, save and call ``stop.stopped(what was saved)``.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import NoReturn

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequested(KeyboardInterrupt):
    """A run stopped on a signal after saving its state; the text says what was saved and how to resume."""

    def __init__(self, signal_number: int, saved: str) -> None:
        super().__init__(f"{signal.Signals(signal_number).name}: {saved}")
        self.exit_status = 128 + signal_number


class StopSignals:
    """SIGINT and SIGTERM turned into a request the loop reads at a safe point, from ``install`` to
    ``restore``. Off the main thread (where Python cannot set handlers) it is inert: ``received`` stays None."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, object] = {}

    def install(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for number in SIGNALS:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def restore(self) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}

    def _handle(self, number: int, frame) -> None:
        if self.received is not None:  # the second signal: stop now
            self.restore()
            raise KeyboardInterrupt
        self.received = number
        # os.write, not print: a signal handler may run inside another write to stderr.
        os.write(2, f"\n{signal.Signals(number).name}: saving the run's state at the next step, then stopping "
                    "(send it again to stop at once)\n".encode())

    def stopped(self, saved: str) -> NoReturn:
        """Stop the run after a received signal, once its state is saved (``saved`` says what and where)."""
        raise StopRequested(self.received or signal.SIGINT, saved)


def resume_hint(latest, progress: str) -> str:
    """The message of a stopped run: what was saved, and the command that continues it."""
    return f"saved {latest} at {progress}; continue with bgtrain train --resume {latest}"
