"""The host's HTTP engine: one per process, bounded, over httpx (imported on first use).

    from smith.providers._http import HttpLimits, shared_engine
    async with shared_engine().request("POST", url, headers=h, content=body) as response:
        async for chunk in response.chunks(): ...

httpx is imported only inside this package (tests/test_architecture.py), and only when a
request is made.
"""

from smith.providers._http._engine import HttpEngine, shared_engine
from smith.providers._http._errors import HttpError
from smith.providers._http._limits import HttpLimits, limits_from
from smith.providers._http._response import BodyOutcome, HttpResponse

__all__ = [
    "BodyOutcome",
    "HttpEngine",
    "HttpError",
    "HttpLimits",
    "HttpResponse",
    "limits_from",
    "shared_engine",
]
