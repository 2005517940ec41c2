"""The vendor-neutral provider contract: requests, the normalized stream, model routing.

Vendor knowledge lives only in provider plugins (smith.plugins.providers.*); the runtime
talks to them through `Provider.stream(Request)` and sees only the normalized events
(TextDelta, ThinkingDelta, ToolCall, End).

Every name is exported on first use (PEP 562), so importing the package costs nothing:
configuration takes `CONFIG_CHECKS` from it while it is resolved, before any provider
module is needed.
"""

from smith._lazy import lazy_exports

__all__ = [
    "CONFIG_CHECKS",
    "OUTCOMES",
    "AuthFile",
    "Catalog",
    "CatalogStore",
    "Credential",
    "End",
    "Group",
    "HttpCall",
    "HttpProvider",
    "ModelInfo",
    "Outcome",
    "Pricing",
    "Provider",
    "ProviderHost",
    "ProviderSettings",
    "RefreshOutcome",
    "Registry",
    "Request",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCall",
    "Usage",
    "WireFormat",
    "configured_env",
    "content_parts",
    "credential_variables",
    "declared_env",
    "describe",
    "error_end",
    "excerpt",
    "find_credential",
    "level_rank",
    "limits_from",
    "load_catalog",
    "merge_body",
    "read_credentials",
    "resolve_credential",
    "resolve_model",
    "shared_engine",
    "status_kind",
    "targets_from",
    "thinking_level",
    "watch_credentials",
]


TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.providers._auth import AuthFile as AuthFile
    from smith.providers._auth import Credential as Credential
    from smith.providers._auth import configured_env as configured_env
    from smith.providers._auth import credential_variables as credential_variables
    from smith.providers._auth import declared_env as declared_env
    from smith.providers._auth import find_credential as find_credential
    from smith.providers._auth import read_credentials as read_credentials
    from smith.providers._auth import resolve_credential as resolve_credential
    from smith.providers._auth import watch_credentials as watch_credentials
    from smith.providers._catalog import Catalog as Catalog
    from smith.providers._catalog import describe as describe
    from smith.providers._checks import CONFIG_CHECKS as CONFIG_CHECKS
    from smith.providers._failover import Group as Group
    from smith.providers._http import limits_from as limits_from
    from smith.providers._http import shared_engine as shared_engine
    from smith.providers._http_provider import HttpProvider as HttpProvider
    from smith.providers._model import ModelInfo as ModelInfo
    from smith.providers._refresh import CatalogStore as CatalogStore
    from smith.providers._refresh import Outcome as RefreshOutcome
    from smith.providers._refresh import load_catalog as load_catalog
    from smith.providers._refresh import targets_from as targets_from
    from smith.providers._registry import Registry as Registry
    from smith.providers._registry import resolve_model as resolve_model
    from smith.providers._stream import OUTCOMES as OUTCOMES
    from smith.providers._stream import End as End
    from smith.providers._stream import Outcome as Outcome
    from smith.providers._stream import Pricing as Pricing
    from smith.providers._stream import Provider as Provider
    from smith.providers._stream import Request as Request
    from smith.providers._stream import StreamEvent as StreamEvent
    from smith.providers._stream import TextDelta as TextDelta
    from smith.providers._stream import ThinkingDelta as ThinkingDelta
    from smith.providers._stream import ToolCall as ToolCall
    from smith.providers._stream import Usage as Usage
    from smith.providers._stream import content_parts as content_parts
    from smith.providers._wire import HttpCall as HttpCall
    from smith.providers._wire import ProviderHost as ProviderHost
    from smith.providers._wire import ProviderSettings as ProviderSettings
    from smith.providers._wire import WireFormat as WireFormat
    from smith.providers._wire import error_end as error_end
    from smith.providers._wire import excerpt as excerpt
    from smith.providers._wire import level_rank as level_rank
    from smith.providers._wire import merge_body as merge_body
    from smith.providers._wire import status_kind as status_kind
    from smith.providers._wire import thinking_level as thinking_level


_LAZY = {
    "CONFIG_CHECKS": "smith.providers._checks",
    "End": "smith.providers._stream",
    "OUTCOMES": "smith.providers._stream",
    "Pricing": "smith.providers._stream",
    "Provider": "smith.providers._stream",
    "Request": "smith.providers._stream",
    "StreamEvent": "smith.providers._stream",
    "TextDelta": "smith.providers._stream",
    "ThinkingDelta": "smith.providers._stream",
    "ToolCall": "smith.providers._stream",
    "Usage": "smith.providers._stream",
    "credential_variables": "smith.providers._auth",
    "read_credentials": "smith.providers._auth",
    "resolve_model": "smith.providers._registry",
    "watch_credentials": "smith.providers._auth",
    "AuthFile": "smith.providers._auth",
    "Catalog": "smith.providers._catalog",
    "CatalogStore": "smith.providers._refresh",
    "Credential": "smith.providers._auth",
    "Group": "smith.providers._failover",
    "HttpCall": "smith.providers._wire",
    "HttpProvider": "smith.providers._http_provider",
    "ModelInfo": "smith.providers._model",
    "Outcome": "smith.providers._stream",
    "RefreshOutcome": "smith.providers._refresh",
    "ProviderHost": "smith.providers._wire",
    "ProviderSettings": "smith.providers._wire",
    "Registry": "smith.providers._registry",
    "WireFormat": "smith.providers._wire",
    "configured_env": "smith.providers._auth",
    "content_parts": "smith.providers._stream",
    "declared_env": "smith.providers._auth",
    "describe": "smith.providers._catalog",
    "error_end": "smith.providers._wire",
    "excerpt": "smith.providers._wire",
    "find_credential": "smith.providers._auth",
    "level_rank": "smith.providers._wire",
    "limits_from": "smith.providers._http",
    "load_catalog": "smith.providers._refresh",
    "merge_body": "smith.providers._wire",
    "resolve_credential": "smith.providers._auth",
    "shared_engine": "smith.providers._http",
    "status_kind": "smith.providers._wire",
    "targets_from": "smith.providers._refresh",
    "thinking_level": "smith.providers._wire",
}

_RENAMED = {"RefreshOutcome": "Outcome"}  # the catalogue refresh's, beside the stream's

__getattr__ = lazy_exports(__name__, _LAZY, _RENAMED)
