"""How long pacebot keeps trying what fails for a while, in one place.

The waits themselves come from ``stamina`` (exponential back-off with jitter, and a
testing switch that makes them instant); these are only the numbers. The composition root
uses the defaults; tests pass their own to make a back-off long or short on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Retries:
    """The back-off of the two retry loops of the core."""

    store_patience_s: float = 30.0  # a message waits this long per database outage
    store_wait_initial_s: float = 0.1  # first wait before writing it again
    store_wait_max_s: float = 5.0  # longest wait between two writes
    send_wait_initial_s: float = 1.0  # first wait after a reply certainly not delivered
    send_wait_max_s: float = 30.0  # longest wait between two tries of one reply


DEFAULT_RETRIES = Retries()
