"""Round trip times: the average RTT that the latency window uses, and the minimum RTT.

Seed: server-selection.rst 1.5, section "Calculation of Average Round Trip Times":
the first sample is taken as is, then an exponentially-weighted moving average
with alpha 0.2; an unavailable server's average is cleared.

Also server-monitoring ("Measuring RTT"): the minimum RTT over at most the last 10
samples, reported as 0 until at least 2 samples have been gathered.

``RoundTripTime`` is an immutable value (``add`` returns a new one), so a monitor
can publish it by plain assignment and readers never see a half-updated state; the
thread-safe holder the monitor threads share is the shell's
(``mongocore.io.rtt_monitor.RoundTripTimeAverager``). Units are whatever the caller
feeds in (mongocore uses seconds everywhere).
"""

from __future__ import annotations

import math
from typing import Optional

__all__ = [
    "ALPHA",
    "EMPTY",
    "MIN_RTT_SAMPLES",
    "MIN_RTT_WINDOW",
    "RoundTripTime",
]

#: The seed's weighting factor for the newest sample.
ALPHA = 0.2
#: How many recent samples the minimum RTT is taken over.
MIN_RTT_WINDOW = 10
#: The minimum RTT is reported as 0 until this many samples exist.
MIN_RTT_SAMPLES = 2


class RoundTripTime:
    """The average RTT and the most recent samples (at most 10), immutable."""

    __slots__ = ("average", "samples")

    average: Optional[float]
    samples: tuple[float, ...]

    def __init__(self, average: Optional[float] = None, samples: tuple[float, ...] = ()) -> None:
        object.__setattr__(self, "average", average)
        object.__setattr__(self, "samples", tuple(samples[-MIN_RTT_WINDOW:]))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"RoundTripTime is immutable; cannot set {name!r}")

    def add(self, sample: float) -> RoundTripTime:
        """The value after one more measurement."""
        if not (isinstance(sample, (int, float)) and math.isfinite(sample) and sample >= 0):
            raise ValueError(f"an RTT sample must be a finite number >= 0, not {sample!r}")
        sample = float(sample)
        old = self.average
        # "When there is no average RTT ... set equal to the first RTT measurement."
        average = sample if old is None else ALPHA * sample + (1 - ALPHA) * old
        samples = self.samples
        if len(samples) >= MIN_RTT_WINDOW:
            samples = samples[1 - MIN_RTT_WINDOW :]
        return RoundTripTime(average, (*samples, sample))

    @property
    def minimum(self) -> float:
        """The smallest of the last 10 samples; 0 until there are at least 2."""
        samples = self.samples
        return min(samples) if len(samples) >= MIN_RTT_SAMPLES else 0.0

    def reset(self) -> RoundTripTime:
        """The cleared value, for a server that became unavailable."""
        return EMPTY

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RoundTripTime):
            return NotImplemented
        return self.average == other.average and self.samples == other.samples

    def __hash__(self) -> int:
        return hash((self.average, self.samples))

    def __repr__(self) -> str:
        return f"RoundTripTime(average={self.average!r}, samples={self.samples!r})"


EMPTY = RoundTripTime()
