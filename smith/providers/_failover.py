"""A model group behind one provider: ordered fallbacks, tried in turn.

The runtime decides when to move on (smith.runtime._steps.respond): a rate limit moves to
the next member at once; transient failures (connect, timeout, 5xx, overloaded) are
retried with backoff first; a response that already delivered output is never retried;
invalid requests and unavailable models are not retried at all. Every new response
starts again at the first member, so the preferred model is used whenever it can be.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

from smith.providers._routing import Target
from smith.providers._stream import Pricing, Provider, Request, StreamEvent


class Group:
    def __init__(self, label: str, members: Sequence[tuple[Target, Provider]]) -> None:
        assert members, "a group has members"
        self.label = label
        self.members = list(members)
        self.index = 0

    @property
    def current(self) -> Target:
        return self.members[self.index][0]

    @property
    def name(self) -> str:
        return self.current.provider

    def restart(self) -> None:
        self.index = 0

    def advance(self) -> Target | None:
        """Move to the next member; None when every member was tried."""
        if self.index + 1 >= len(self.members):
            return None
        self.index += 1
        return self.current

    def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        target, provider = self.members[self.index]
        return provider.stream(replace(request, model=target.model))

    def pricing(self, model: str) -> Pricing | None:
        target, provider = self.members[self.index]
        return provider.pricing(target.model)
