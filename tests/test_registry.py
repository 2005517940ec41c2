"""The model registry: configuration's routes and accounts, credentials resolved before
dispatch, --base-url, the default model, and renewal just before a request."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from smith.config import resolve
from smith.diagnostics import ConfigError, SmithError
from smith.providers import Request
from smith.providers._failover import Group
from smith.providers._http_provider import HttpProvider
from smith.providers._registry import Registry
from smith.providers._wire import ProviderSettings
from tests.conftest import SmithEnv
from tests.http_kit import LoopbackServer, Reply, sse

ROUTES = """
models {
    alias { fast "openai/gpt-5-mini"; local "openai-compatible/qwen3"; }
    group { best "anthropic/claude-sonnet-4-5" "fast" "demo"; }
}
providers {
    work { plugin "anthropic"; api-key-env "WORK_ANTHROPIC_KEY"; }
    lab { base-url "http://127.0.0.1:9/v1"; extra { top_k 40; }; headers { X-Team "lab"; }; }
}
"""


def registry(senv: SmithEnv, text: str = ROUTES, **env: str) -> Registry:
    senv.write_user_config(text)
    senv.env.update(env)
    return Registry.from_config(resolve(env=senv.env, cwd=str(senv.root)), env=senv.env)


def diagnostic(call: Any) -> str:
    with pytest.raises(SmithError) as caught:
        call()
    return caught.value.diagnostic.render()


def test_a_group_from_configuration_is_tried_in_order(senv: SmithEnv) -> None:
    reg = registry(senv, ANTHROPIC_API_KEY="sk-ant-test-1234", OPENAI_API_KEY="sk-oa-test-5678")
    provider, model = reg.resolve("best")
    assert isinstance(provider, Group)
    assert [str(t) for t, _ in provider.members] == [
        "anthropic/claude-sonnet-4-5",
        "openai/gpt-5-mini",
        "demo",
    ]
    assert model == "claude-sonnet-4-5" and provider.name == "anthropic"


def test_an_alias_resolves_to_its_provider(senv: SmithEnv) -> None:
    provider, model = registry(senv).resolve("local")
    assert isinstance(provider, HttpProvider)
    assert (provider.name, model) == ("openai-compatible", "qwen3")
    assert provider.settings.credential is None  # a local server needs no key
    assert provider.model.provenance  # an assumed entry says so


def test_an_account_uses_its_own_key(senv: SmithEnv) -> None:
    reg = registry(senv, ANTHROPIC_API_KEY="sk-ant-personal-1", WORK_ANTHROPIC_KEY="sk-ant-work-2")
    provider, _ = reg.resolve("work/claude-sonnet-4-5")
    assert isinstance(provider, HttpProvider)
    assert provider.settings.credential == "sk-ant-work-2"
    assert provider.settings.base_url == "https://api.anthropic.com/v1"


def test_an_endpoint_account_is_openai_compatible_with_its_extras(senv: SmithEnv) -> None:
    provider, _ = registry(senv).resolve("lab/llama")
    assert isinstance(provider, HttpProvider)
    assert provider.settings.base_url == "http://127.0.0.1:9/v1"
    assert dict(provider.settings.extra) == {"top_k": 40}
    assert dict(provider.settings.headers) == {"X-Team": "lab"}


def test_a_missing_key_fails_before_any_request(senv: SmithEnv) -> None:
    text = diagnostic(lambda: registry(senv).resolve("anthropic/claude-sonnet-4-5"))
    assert "ANTHROPIC_API_KEY" in text and "auth login" in text


def test_an_unknown_provider_suggests_the_closest(senv: SmithEnv) -> None:
    text = diagnostic(lambda: registry(senv).resolve("antropic/claude-sonnet-4-5"))
    assert "antropic" in text and "did you mean 'anthropic'" in text


def test_an_unknown_first_party_model_is_refused(senv: SmithEnv) -> None:
    reg = registry(senv, OPENAI_API_KEY="sk-oa-test-5678")
    assert "gpt-5" in diagnostic(lambda: reg.resolve("openai/gpt-5-turbo-max"))


def test_a_cycle_in_configuration_names_where_it_is(senv: SmithEnv) -> None:
    reg = registry(senv, 'models { alias { a "b"; b "a"; }; }')
    text = diagnostic(lambda: reg.resolve("a"))
    assert "a -> b -> a" in text and "config.kdl:1" in text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('models { alias { two "a/b" "c/d"; }; }', "names 2 models"),
        ('models { allias { x "a/b"; }; }', "neither"),
        ("models { group { g 3; }; }", "as text"),
        ('providers { work { plugin "antropic"; }; }', "antropic"),
    ],
)
def test_bad_routing_configuration_is_a_config_error(
    senv: SmithEnv, text: str, problem: str
) -> None:
    with pytest.raises((ConfigError, SmithError)) as caught:
        registry(senv, text)
    assert problem in caught.value.diagnostic.render()


def test_base_url_overrides_the_configured_endpoint(senv: SmithEnv) -> None:
    senv.write_user_config('base-url "http://127.0.0.1:8/v1/"')
    reg = Registry.from_config(resolve(env=senv.env, cwd=str(senv.root)), env=senv.env)
    provider, _ = reg.resolve("openai-compatible/bar")
    assert isinstance(provider, HttpProvider)
    assert provider.settings.base_url == "http://127.0.0.1:8/v1"


def test_the_default_model_is_the_first_provider_with_a_key(senv: SmithEnv) -> None:
    assert registry(senv, "").default_model() is None  # the demo model then
    assert registry(senv, "", GEMINI_API_KEY="g-test-key-1234").default_model() == (
        "google/gemini-2.5-pro"
    )
    assert registry(senv, "", OPENAI_API_KEY="sk-oa-1").default_model() == "openai/gpt-5"
    both = registry(senv, "", OPENAI_API_KEY="sk-oa-1", ANTHROPIC_API_KEY="sk-ant-2")
    assert both.default_model() == "anthropic/claude-sonnet-4-5"


def test_an_expired_credential_is_renewed_before_the_request(senv: SmithEnv) -> None:
    """The host asks `renew` before building each request; the renewed key is sent."""
    keys = iter(["sk-old-0000", "sk-renewed-1111"])

    async def renew() -> str | None:
        return next(keys)

    import smith.plugins.providers.openai_compatible as compat

    with LoopbackServer() as srv:
        srv.script(
            [
                Reply(
                    200,
                    {"content-type": "text/event-stream"},
                    [
                        sse({"choices": [{"index": 0, "delta": {"content": "hi"}}]}),
                        sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
                        b"data: [DONE]\n\n",
                    ],
                )
            ]
            * 2
        )
        reg = registry(senv, "")
        info = reg.catalog.assumed("openai-compatible", "m")
        settings = ProviderSettings("openai-compatible", srv.url, "sk-old-0000", renew=renew)
        provider = HttpProvider("openai-compatible", compat.wire(srv.url), info, settings)

        async def two() -> None:
            for _ in range(2):
                async for _event in provider.stream(Request(model="m", messages=[])):
                    pass

        asyncio.run(two())
        sent = [r.headers.get("authorization") for r in srv.requests]
    assert sent == ["Bearer sk-old-0000", "Bearer sk-renewed-1111"]


def test_a_base_url_that_is_not_http_fails_at_resolution_naming_it(senv: SmithEnv) -> None:
    """`--base-url localhost:8080/v1` was sent as given and refused at the first request,
    with 'the provider' in place of the value and no word of where it came from."""
    senv.write_user_config('base-url "localhost:8080/v1"')
    reg = Registry.from_config(resolve(env=senv.env, cwd=str(senv.root)), env=senv.env)
    with pytest.raises(SmithError) as caught:
        reg.resolve("openai-compatible/bar")
    diagnostic = caught.value.diagnostic
    assert diagnostic.code == "config.bad-base-url"
    assert "localhost:8080/v1" in diagnostic.render() and "config.kdl" in diagnostic.render()
    assert diagnostic.source is not None and "config.kdl" in str(diagnostic.source)


def test_an_unreachable_endpoint_says_where_its_base_url_came_from(senv: SmithEnv) -> None:
    """The default endpoint of openai-compatible is llama-server's address; a user who
    did not set one is told that this is a default, and how to set another."""
    reg = registry(senv, "")
    provider, _ = reg.resolve("openai-compatible/bar")
    assert isinstance(provider, HttpProvider)
    assert provider.settings.base_url_origin is not None
    assert "--base-url" in provider.settings.base_url_origin
    with LoopbackServer() as srv:
        url = srv.url  # nothing listens there once the server is gone
    reg = registry(senv, f'providers {{ lab {{ base-url "{url}/v1"; }}; }}')
    provider, _ = reg.resolve("lab/bar")

    async def main() -> list[object]:
        return [
            e async for e in provider.stream(Request("bar", [{"role": "user", "content": "hi"}]))
        ]

    (end,) = asyncio.run(main())
    assert end.outcome == "error" and end.kind == "connect"  # type: ignore[attr-defined]
    assert "providers.lab.base-url" in end.error  # type: ignore[attr-defined]
    assert "connection refused" in end.error  # type: ignore[attr-defined]


def test_base_url_is_refused_for_a_group_over_several_providers(senv: SmithEnv) -> None:
    """--base-url names one endpoint; given for a group over anthropic and openai it was
    used for both, so each provider's key went to that one server."""
    senv.write_user_config(ROUTES + 'base-url "http://127.0.0.1:8/v1"\n')
    senv.env.update(ANTHROPIC_API_KEY="sk-ant-test-1234", OPENAI_API_KEY="sk-oa-test-5678")
    reg = Registry.from_config(resolve(env=senv.env, cwd=str(senv.root)), env=senv.env)
    with pytest.raises(SmithError) as caught:
        reg.resolve("best")
    text = caught.value.diagnostic.render()
    assert caught.value.diagnostic.code == "model.base-url-ambiguous"
    assert "anthropic" in text and "openai" in text and "providers." in text
    provider, _ = reg.resolve("local")  # one provider: --base-url is its endpoint
    assert isinstance(provider, HttpProvider)
    assert provider.settings.base_url == "http://127.0.0.1:8/v1"


def test_nested_extras_become_nested_body_fields(senv: SmithEnv) -> None:
    """Configuration flattens blocks into dotted keys; the body field of
    `extra { chat_template_kwargs { enable_thinking false; }; }` was sent literally as
    "chat_template_kwargs.enable_thinking", which no server knows."""
    text = """providers { lab {
        base-url "http://127.0.0.1:9/v1"
        extra { top_k 40; chat_template_kwargs { enable_thinking false; }; }
    }; }"""
    provider, _ = registry(senv, text).resolve("lab/qwen3")
    assert isinstance(provider, HttpProvider)
    assert dict(provider.settings.extra) == {
        "top_k": 40,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    body = provider.wire.build(
        Request("qwen3", [{"role": "user", "content": "hi"}]), provider.model, provider.settings
    ).body
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert "chat_template_kwargs.enable_thinking" not in body


def test_an_owned_extra_field_fails_at_once_naming_its_line(senv: SmithEnv) -> None:
    text = 'providers {\n    lab { base-url "http://127.0.0.1:9/v1"; extra { stream false; }; }\n}'
    with pytest.raises(SmithError) as caught:
        registry(senv, text)
    assert caught.value.diagnostic.code == "provider.owned-extra-field"
    assert "config.kdl:2" in str(caught.value.diagnostic.source)


@pytest.mark.parametrize("spec", ["anthropic", "openai-compatible", "lab"])
def test_a_provider_named_without_a_model_asks_for_one(senv: SmithEnv, spec: str) -> None:
    """`--model anthropic` said "anthropic has no model ''" and suggested a catalog block
    for "anthropic/"; openai-compatible sent an empty model id to the server."""
    reg = registry(senv, ROUTES, ANTHROPIC_API_KEY="sk-ant-test-1234")
    with pytest.raises(SmithError) as caught:
        reg.resolve(spec)
    diagnostic = caught.value.diagnostic
    assert diagnostic.code == "model.no-model"
    assert f"{spec}/" in diagnostic.fix and "''" not in diagnostic.render()
    assert reg.resolve("demo")[1] == "demo"  # the offline providers need no model id
