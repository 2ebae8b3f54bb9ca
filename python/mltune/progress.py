"""How Client.watch shows a job's progress: one line redrawn in place with a bar on a terminal,
else a plain line per state change and at most one a second (logs, pipes), as `mltune watch`
does (client/rpc_commands.cc)."""

import sys
import time

_BAR_WIDTH = 24


def steps_text(job):
    """'steps 420/1000  best 215'"""
    text = f"steps {job.steps_done}"
    if job.budget.steps > 0:
        text += f"/{job.budget.steps}"
    if job.best_score is not None:
        text += f"  best {job.best_score:g}"
    return text


def progress_text(job):
    """Fixed-width state and percentage, so a redrawn line does not jump about."""
    return f"job {job.job_id} {job.state:<9} {100 * job.progress:3.0f}%  {steps_text(job)}"


def _bar(fraction):
    filled = int(round(_BAR_WIDTH * min(max(fraction, 0.0), 1.0)))
    return "[" + "#" * filled + "-" * (_BAR_WIDTH - filled) + "]"


def live_text(job):
    return (f"job {job.job_id} {job.state:<9} {_bar(job.progress)} {100 * job.progress:3.0f}%  "
            f"{steps_text(job)}")


class Progress:
    """style: "live", "lines" or "none"; None picks "live" when `stream` is a terminal, else
    "lines". `stream` defaults to sys.stderr."""

    def __init__(self, style=None, stream=None):
        self._stream = stream if stream is not None else sys.stderr
        if style is None:
            isatty = getattr(self._stream, "isatty", None)
            style = "live" if isatty is not None and isatty() else "lines"
        if style not in ("live", "lines", "none"):
            raise ValueError(f"progress style {style!r}: live, lines or none")
        self.style = style
        self._last = float("-inf")
        self._last_state = None
        self._drawn = False

    def update(self, job):
        if self.style == "none":
            return
        now = time.monotonic()
        changed = job.state != self._last_state
        final = job.final
        if self.style == "live":
            # ~10 redraws a second are plenty for a human; the daemon may send one per step.
            if not changed and not final and now - self._last < 0.1:
                return
            # Back to the line's start, then clear to its end (the new text may be shorter).
            self._stream.write("\r" + live_text(job) + "\x1b[K" + ("\n" if final else ""))
            self._drawn = not final
        else:
            if not changed and not final and now - self._last < 1.0:
                return
            if final and not changed:
                return
            self._stream.write(progress_text(job) + "\n")
        self._stream.flush()
        self._last = now
        self._last_state = job.state

    def finish(self):
        """Ends a half-drawn live line, e.g. before an error."""
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()
        self._drawn = False
