"""Refreshing the catalog from providers' model lists, against loopback servers that answer
as the vendors do: paging, failures that keep the cached list, cancellation, stale work
that must not replace newer state, and `smith models` itself."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from smith.config import resolve
from smith.providers._catalog import Listed, Refreshed
from smith.providers._http import HttpEngine, HttpLimits
from smith.providers._refresh import (
    CatalogStore,
    RefreshFailed,
    Target,
    fetch_models,
    load_catalog,
    read_cache,
    store_list,
    targets_from,
)
from smith.sdk import ModelList, provider_spec
from tests.conftest import Result, SmithEnv
from tests.http_kit import STALL, Gate, LoopbackServer, Recorded, Reply, json_reply

KEY = "sk-ant-api03-" + "K" * 40 + "abcd"


@pytest.fixture
def srv() -> Iterator[LoopbackServer]:
    with LoopbackServer() as server:
        yield server


def _listing(provider: str) -> ModelList:
    """How the provider's own plugin reads its model list (ProviderSpec.list_models)."""
    spec = provider_spec(provider)
    assert spec is not None and spec.list_models is not None
    return spec.list_models


def _engine() -> HttpEngine:
    return HttpEngine(HttpLimits(head_timeout=10, chunk_gap=10, connect_timeout=5))


def _query(request: Recorded) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(request.path).query).items()}


def anthropic_pages(request: Recorded) -> Reply:
    """GET /v1/models as Anthropic pages it (has_more, last_id, after_id)."""
    after = _query(request).get("after_id")
    if after is None:
        return json_reply(
            200,
            {
                "data": [
                    {
                        "type": "model",
                        "id": "claude-haiku-4-5-20251001",
                        "display_name": "Claude Haiku 4.5",
                        "created_at": "2025-10-15T00:00:00Z",
                        "max_input_tokens": 200000,
                        "max_tokens": 64000,
                    }
                ],
                "has_more": True,
                "first_id": "claude-haiku-4-5-20251001",
                "last_id": "claude-haiku-4-5-20251001",
            },
        )
    assert after == "claude-haiku-4-5-20251001"
    return json_reply(
        200,
        {
            "data": [
                {
                    "type": "model",
                    "id": "claude-sonnet-9",
                    "display_name": "Claude Sonnet 9",
                    "created_at": "2026-01-01T00:00:00Z",
                    "max_input_tokens": 1000000,
                    "max_tokens": 128000,
                },
                {
                    "type": "model",
                    "id": "claude-sonnet-4-5-20250929",
                    "display_name": "Claude Sonnet 4.5",
                    "created_at": "2025-09-29T00:00:00Z",
                    "max_input_tokens": 1000000,  # disagrees with the bundled 200,000
                    "max_tokens": 64000,
                },
            ],
            "has_more": False,
            "first_id": "claude-sonnet-9",
            "last_id": "claude-sonnet-4-5-20250929",
        },
    )


def _run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


# -- fetching one list -------------------------------------------------------------------


def test_anthropics_list_is_read_page_by_page_with_its_headers(srv: LoopbackServer) -> None:
    srv.script(anthropic_pages)
    target = Target("anthropic", _listing("anthropic"), srv.url + "/v1", KEY)
    models = _run(fetch_models(_engine(), target))
    assert [m.id for m in models] == [
        "claude-haiku-4-5-20251001",
        "claude-sonnet-9",
        "claude-sonnet-4-5-20250929",
    ]
    assert models[1] == Listed("claude-sonnet-9", 1_000_000, 128_000)
    first, second = srv.requests
    assert first.path == "/v1/models?limit=1000"
    assert second.path == "/v1/models?limit=1000&after_id=claude-haiku-4-5-20251001"
    assert first.headers["x-api-key"] == KEY
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert KEY not in repr(target)


def test_geminis_list_is_paged_and_keeps_only_chat_models(srv: LoopbackServer) -> None:
    def pages(request: Recorded) -> Reply:
        if _query(request).get("pageToken") != "next-1":
            return json_reply(
                200,
                {
                    "models": [
                        {
                            "name": "models/gemini-2.5-pro",
                            "version": "2.5",
                            "displayName": "Gemini 2.5 Pro",
                            "inputTokenLimit": 1048576,
                            "outputTokenLimit": 65536,
                            "supportedGenerationMethods": ["generateContent", "countTokens"],
                            "thinking": True,
                        },
                        {
                            "name": "models/text-embedding-004",
                            "inputTokenLimit": 2048,
                            "outputTokenLimit": 1,
                            "supportedGenerationMethods": ["embedContent"],
                        },
                    ],
                    "nextPageToken": "next-1",
                },
            )
        return json_reply(
            200,
            {
                "models": [
                    {
                        "name": "models/gemini-3-flash",
                        "inputTokenLimit": 1048576,
                        "outputTokenLimit": 65536,
                        "supportedGenerationMethods": ["generateContent"],
                    }
                ]
            },
        )

    srv.script(pages)
    target = Target("google", _listing("google"), srv.url + "/v1beta", "AIza" + "g" * 35)
    models = _run(fetch_models(_engine(), target))
    assert [m.id for m in models] == ["gemini-2.5-pro", "gemini-3-flash"]
    assert models[0].thinking is not None and "high" in models[0].thinking
    assert models[1].thinking is None
    assert srv.requests[0].headers["x-goog-api-key"].startswith("AIza")
    assert srv.requests[1].path == "/v1beta/models?pageSize=1000&pageToken=next-1"


def test_a_compatible_endpoint_needs_no_key_and_may_say_its_context(srv: LoopbackServer) -> None:
    srv.script(
        [
            json_reply(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": "Qwen/Qwen3-8B", "object": "model", "max_model_len": 40960},
                        {"id": "llama.gguf", "object": "model", "owned_by": "llamacpp"},
                    ],
                },
            )
        ]
    )
    models = _run(
        fetch_models(_engine(), Target("local", _listing("openai-compatible"), srv.url + "/v1"))
    )
    assert models == [Listed("Qwen/Qwen3-8B", 40960, None), Listed("llama.gguf")]
    assert "authorization" not in srv.requests[0].headers


def test_the_core_asks_and_reads_a_list_only_as_the_plugin_says(srv: LoopbackServer) -> None:
    """Nothing of a vendor is in smith's refresh: a plugin's ModelList gives each page's
    URL and headers and reads each page; smith pages, limits and reports."""
    from smith.sdk import ListedModel

    def pages(request: Recorded) -> Reply:
        if _query(request).get("from") is None:
            return json_reply(200, {"items": [{"slug": "m1", "ctx": 100}], "more": "p2"})
        return json_reply(200, {"items": [{"slug": "m2"}]})

    def page(base: str, key: str | None, token: str | None) -> tuple[str, dict[str, str]]:
        return f"{base}/catalogue" + (f"?from={token}" if token else ""), {"x-token": key or ""}

    def parse(data: object) -> tuple[list[ListedModel], str | None]:
        if not isinstance(data, dict) or "items" not in data:
            raise ValueError("this vendor's list has no items")
        more = data.get("more")
        return [ListedModel(i["slug"], i.get("ctx")) for i in data["items"]], more

    srv.script(pages)
    target = Target("vendor", ModelList(page, parse), srv.url + "/v2", "tok-" + "t" * 20)
    assert _run(fetch_models(_engine(), target)) == [ListedModel("m1", 100), ListedModel("m2")]
    assert [r.path for r in srv.requests] == ["/v2/catalogue", "/v2/catalogue?from=p2"]
    assert srv.requests[0].headers["x-token"] == target.key
    assert srv.requests[0].headers["accept"] == "application/json"

    srv.script([json_reply(200, {"other": []})])
    with pytest.raises(RefreshFailed, match="this vendor's list has no items"):
        _run(fetch_models(_engine(), target))


def test_targets_are_the_keyed_vendors_and_the_configured_endpoints(senv: SmithEnv) -> None:
    """Which lists are asked for, and each read as the plugin it is over reads its own."""
    senv.write_user_config(
        'providers { lab { base-url "http://127.0.0.1:9/v1"; };\n'
        '  work { plugin "anthropic"; base-url "http://127.0.0.1:8/v1"; }; }\n'
    )
    config = resolve(env=senv.env, cwd=str(senv.root))
    keys = {"anthropic": KEY, "work": KEY, "google": None, "openai": None}
    targets = {t.name: t for t in targets_from(config, keys)}
    # google and openai have no key; openai-compatible has no endpoint configured.
    assert sorted(targets) == ["anthropic", "lab", "work"]
    assert targets["anthropic"].base_url == "https://api.anthropic.com/v1"
    assert targets["anthropic"].listing is _listing("anthropic")
    assert targets["work"].listing is _listing("anthropic")  # over the anthropic plugin
    assert targets["work"].base_url == "http://127.0.0.1:8/v1"
    assert targets["lab"].listing is _listing("openai-compatible")
    assert targets["lab"].key is None
    assert targets_from(config, {"lab": None})[0].name == "lab"  # no key: only the server


# -- the store: failures, staleness, cancellation ----------------------------------------


def test_refresh_stores_lists_and_publishes_a_newer_snapshot(
    senv: SmithEnv, srv: LoopbackServer
) -> None:
    srv.script(anthropic_pages)
    home = str(senv.data_home)
    store = CatalogStore(home=home)
    before = store.snapshot
    [outcome] = _run(
        store.refresh(_engine(), [Target("anthropic", _listing("anthropic"), srv.url + "/v1", KEY)])
    )
    assert outcome.ok and outcome.models == 3 and not outcome.stale
    after = store.snapshot
    assert after is not before and after.generation > before.generation
    new = after.lookup("anthropic", "claude-sonnet-9")
    assert new is not None and new.context_window == 1_000_000
    assert new.provenance["context_window"].startswith("refresh anthropic at ")
    [conflict] = after.conflicts  # the bundled 200k stands; the disagreement is listed
    assert conflict.model == "anthropic/claude-sonnet-4-5" and conflict.other == 1_000_000
    # A fresh process, offline, sees the same thing: the cache is what a refresh leaves.
    assert load_catalog(home=home).lookup("anthropic", "claude-sonnet-9") is not None
    assert before.lookup("anthropic", "claude-sonnet-9") is None  # snapshots never change


@pytest.mark.parametrize(
    "reply",
    [
        json_reply(401, {"error": {"message": f"invalid x-api-key: {KEY}"}}),
        json_reply(500, {"error": "overloaded"}),
        Reply(200, {"content-type": "application/json"}, [b'{"data": [{"id": "cut']),
        json_reply(200, {"object": "list"}),  # no data array
    ],
    ids=["401", "500", "cut-off-json", "wrong-shape"],
)
def test_a_failed_refresh_keeps_the_cached_list(
    senv: SmithEnv, srv: LoopbackServer, reply: Reply
) -> None:
    home = str(senv.data_home)
    cached = Refreshed("anthropic", "2025-01-01T00:00:00Z", 1.0, (Listed("claude-kept-1", 9, 9),))
    store_list(home, cached)
    cache = Path(home, "catalog-cache.json").read_bytes()
    srv.script([reply])
    store = CatalogStore(home=home)
    [outcome] = _run(
        store.refresh(_engine(), [Target("anthropic", _listing("anthropic"), srv.url + "/v1", KEY)])
    )
    assert not outcome.ok and outcome.error
    assert KEY not in outcome.error and "K" * 10 not in outcome.error
    assert Path(home, "catalog-cache.json").read_bytes() == cache
    assert store.snapshot.lookup("anthropic", "claude-kept-1") is not None


def test_an_unreachable_provider_is_an_outcome_not_a_crash(senv: SmithEnv) -> None:
    with LoopbackServer() as gone:
        url = gone.url  # a port nobody listens on once the server is closed
    store = CatalogStore(home=str(senv.data_home))
    [outcome] = _run(
        store.refresh(_engine(), [Target("openai", _listing("openai"), url + "/v1", "k")])
    )
    assert not outcome.ok and "connect" in (outcome.error or "").lower()
    assert read_cache(str(senv.data_home)) == {}


def test_a_refresh_that_started_earlier_never_replaces_a_newer_list(
    senv: SmithEnv, srv: LoopbackServer
) -> None:
    home = str(senv.data_home)
    go = threading.Event()
    asked = threading.Event()

    def slow(request: Recorded) -> Reply:
        asked.set()
        body = json.dumps({"data": [{"id": "from-the-older-refresh"}]}).encode()
        return Reply(200, {"content-type": "application/json"}, [Gate(go), body])

    srv.script(slow)
    with LoopbackServer() as fast:
        fast.script([json_reply(200, {"data": [{"id": "from-the-newer-refresh"}]})])
        store = CatalogStore(home=home)

        async def both() -> tuple[object, object]:
            older = asyncio.create_task(
                store.refresh(
                    _engine(),
                    [Target("local", _listing("openai-compatible"), srv.url + "/v1")],
                    now=100.0,
                )
            )
            await asyncio.to_thread(asked.wait)  # the older one is mid-body
            newer = await store.refresh(
                _engine(),
                [Target("local", _listing("openai-compatible"), fast.url + "/v1")],
                now=200.0,
            )
            go.set()
            return await older, newer

        (old_outcome,), (new_outcome,) = _run(both())  # type: ignore[misc]
    assert new_outcome.ok and not new_outcome.stale
    assert old_outcome.ok and old_outcome.stale
    assert [m.id for m in read_cache(home)["local"].models] == ["from-the-newer-refresh"]
    snapshot = store.snapshot
    assert snapshot.lookup("local", "from-the-newer-refresh") is not None
    assert snapshot.lookup("local", "from-the-older-refresh") is None


def test_a_snapshot_built_from_older_state_is_not_published(senv: SmithEnv) -> None:
    store = CatalogStore(home=str(senv.data_home))
    older = load_catalog(home=str(senv.data_home), generation=store.snapshot.generation)
    assert not store.publish(older)
    newer = load_catalog(home=str(senv.data_home), generation=store.snapshot.generation + 1)
    assert store.publish(newer) and store.snapshot is newer


def test_store_list_keeps_the_list_of_the_later_start(senv: SmithEnv) -> None:
    home = str(senv.data_home)
    assert store_list(home, Refreshed("p", "t2", 2.0, (Listed("two"),)))
    assert not store_list(home, Refreshed("p", "t1", 1.0, (Listed("one"),)))
    assert store_list(home, Refreshed("q", "t1", 1.0, (Listed("other"),)))  # another provider
    cache = read_cache(home)
    assert [m.id for m in cache["p"].models] == ["two"] and "q" in cache


def test_cancelling_a_refresh_stops_it_and_changes_nothing(
    senv: SmithEnv, srv: LoopbackServer
) -> None:
    home = str(senv.data_home)
    store_list(home, Refreshed("anthropic", "t", 1.0, (Listed("claude-kept-1", 9, 9),)))
    cache = Path(home, "catalog-cache.json").read_bytes()
    asked = threading.Event()

    def stall(request: Recorded) -> Reply:
        asked.set()
        return Reply(200, {"content-type": "application/json"}, [b'{"data": [', STALL])

    srv.script(stall)
    store = CatalogStore(home=home)
    before = store.snapshot

    async def cancel_midway() -> None:
        task = asyncio.create_task(
            store.refresh(
                _engine(), [Target("anthropic", _listing("anthropic"), srv.url + "/v1", KEY)]
            )
        )
        await asyncio.to_thread(asked.wait)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    _run(cancel_midway())
    assert store.snapshot is before
    assert Path(home, "catalog-cache.json").read_bytes() == cache
    assert srv.requests[0].closed.wait(10)  # the connection was given up


def test_starting_offline_reads_files_only(senv: SmithEnv, srv: LoopbackServer) -> None:
    senv.write_user_config(f'providers {{ anthropic {{ base-url "{srv.url}/v1"; }}; }}\n')
    config = resolve(env=senv.env, cwd=str(senv.root))
    store = CatalogStore(config)
    assert store.snapshot.lookup("anthropic", "claude-sonnet-4-5") is not None
    load_catalog(config)
    assert srv.requests == []


# -- `smith models` ----------------------------------------------------------------------


def test_models_lists_the_catalog_and_which_providers_have_a_key(
    smith: Callable[..., Result],
) -> None:
    r = smith("models", env={"OPENAI_API_KEY": "sk-" + "o" * 30})
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    columns = re.compile(r"\s{2,}")
    header = ["MODEL", "CONTEXT", "OUTPUT", "INPUT", "THINKING", "PRICE IN / OUT", "KEY"]
    assert columns.split(lines[0]) == header
    gpt5 = next(line for line in lines if line.startswith("openai/gpt-5 "))
    row = ["openai/gpt-5", "400k", "128k", "text,image", "minimal..high", "$1.25 / $10", "yes"]
    assert columns.split(gpt5) == row
    haiku = next(line for line in lines if line.startswith("anthropic/claude-haiku-4-5 "))
    assert haiku.split()[-1] == "no"


def test_models_json_shows_provenance_and_conflicts(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    text = 'catalog { "openai-compatible/served" { context-window 8192; }; }\n'
    senv.write_user_config(text)
    store_list(
        str(senv.data_home),
        Refreshed("openai-compatible", "2025-11-03T00:00:00Z", 3.0, (Listed("served", 32000),)),
    )
    r = smith("models", "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    by_key = {f"{m['provider']}/{m['id']}": m for m in data["models"]}
    served = by_key["openai-compatible/served"]
    column = text.index("8192") + 1
    assert served["context_window"] == 8192
    assert served["provenance"]["context_window"] == f"config {senv.user_config}:1:{column}"
    assert served["provenance"]["tools"].startswith("assumed")
    assert by_key["anthropic/claude-sonnet-4-5"]["snapshots"] == ["claude-sonnet-4-5-20250929"]
    assert by_key["anthropic/claude-sonnet-4-5"]["provenance"]["max_output"] == "bundled catalog"
    [conflict] = data["conflicts"]
    assert conflict["model"] == "openai-compatible/served" and conflict["other"] == 32000
    assert conflict["other_source"] == "refresh openai-compatible at 2025-11-03T00:00:00Z"
    assert data["refreshed"] == {"openai-compatible": {"at": "2025-11-03T00:00:00Z", "models": 1}}


def test_models_refresh_from_the_command_line(
    senv: SmithEnv, smith: Callable[..., Result], srv: LoopbackServer
) -> None:
    srv.script(anthropic_pages)
    with LoopbackServer() as failing:
        failing.script(lambda request: json_reply(503, {"error": "down"}))
        text = (
            f'providers {{ anthropic {{ base-url "{srv.url}/v1"; }};'
            f' local {{ base-url "{failing.url}/v1"; }}; }}\n'
        )
        config_file = senv.write_user_config(text)
        r = smith("models", "--refresh", env={"ANTHROPIC_API_KEY": KEY})
    assert r.code == 0, r.err
    assert "refreshed anthropic: 3 models" in r.err
    assert "could not refresh local: HTTP 503" in r.err
    assert "the cached or bundled list stays in use" in r.err
    assert "anthropic/claude-sonnet-9" in r.out
    assert "conflict: anthropic/claude-sonnet-4-5 context_window" in r.out
    assert KEY not in r.out + r.err
    assert config_file.read_text() == text  # configuration is never written
    assert srv.requests[0].headers["x-api-key"] == KEY
    # openai and google have no key: nothing was asked of them (they are not loopback).
    offline = smith("models", "--json")
    names = {m["id"] for m in json.loads(offline.out)["models"]}
    assert "claude-sonnet-9" in names
