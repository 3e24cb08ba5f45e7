"""Shared test set-up."""

from __future__ import annotations

import os

# PTB 22 warns that RetryAfter.retry_after as an int is deprecated; opt in to the
# timedelta form so ``filterwarnings = error`` does not turn that warning into failures.
os.environ.setdefault("PTB_TIMEDELTA", "1")
