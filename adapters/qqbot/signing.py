"""``nonebot-adapter-qq`` imported without the library it signs webhook calls with.

The adapter imports ``cryptography`` at module level for one thing: answering and checking
the QQ Open Platform's webhook calls (Ed25519). pacebot serves no webhook (its adapter's
start-up is left out, :mod:`adapters.qqbot.gateway`: events come through the gateway),
and ``cryptography`` (its Rust core and the hash classes it builds at import) is 6.6 MiB
of a running bot (docs/benchmarks.md, "Footprint"). :func:`without_webhook_signing`
has the adapter import two stand-ins for the two names it takes from it; they refuse
any use. They are in ``sys.modules`` only while the adapter is imported: anything that
imports ``cryptography`` after (a hosted plugin, say) gets the real one.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Final, NoReturn

ADAPTER: Final = "nonebot.adapters.qq"


class InvalidSignature(Exception):
    """Stands in for ``cryptography.exceptions.InvalidSignature``; nothing raises it."""


class Ed25519PrivateKey:
    """Stands in for ``cryptography``'s Ed25519 key, which only a webhook call needs."""

    @classmethod
    def from_private_bytes(cls, data: bytes) -> NoReturn:
        msg = "pacebot serves no QQ webhook: the official bot's events come through the gateway"
        raise RuntimeError(msg)


@contextlib.contextmanager
def without_webhook_signing() -> Iterator[None]:
    """Have ``nonebot-adapter-qq`` imported meanwhile take the stand-ins, unless the real
    ``cryptography`` or the adapter is loaded already."""
    if ADAPTER in sys.modules or "cryptography" in sys.modules:
        yield
        return
    stand_ins = {
        "cryptography.exceptions": _stand_in("cryptography.exceptions", InvalidSignature),
        "cryptography.hazmat.primitives.asymmetric.ed25519": _stand_in(
            "cryptography.hazmat.primitives.asymmetric.ed25519", Ed25519PrivateKey
        ),
    }
    sys.modules.update(stand_ins)
    try:
        yield
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


def _stand_in(name: str, holding: type) -> ModuleType:
    module = ModuleType(name, f"pacebot's stand-in for {name} (adapters.qqbot.signing)")
    setattr(module, holding.__name__, holding)
    return module
