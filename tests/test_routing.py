"""Model routing: aliases, groups and buckets resolve deterministically and offline; the
runtime retries transient failures with bounded backoff and fails over within a group."""

from __future__ import annotations

from pathlib import Path

import pytest

from smith.diagnostics import SmithError, Source
from smith.providers import End, TextDelta
from smith.providers._failover import Group
from smith.providers._routing import Routes, Target, resolve_route
from smith.runtime import Limits
from smith.runtime._steps import backoff
from tests.runtime_kit import Fake, World, messages, say

PROVIDERS = ("anthropic", "openai", "google", "openai-compatible", "anthropic-work")
CONF = Source("file", "/home/u/.config/smith/config.kdl:4:3")


def routes(**kw: object) -> Routes:
    aliases = {k: (v, CONF) for k, v in dict(kw.pop("aliases", {})).items()}  # type: ignore[call-overload]
    groups = {k: (tuple(v), CONF) for k, v in dict(kw.pop("groups", {})).items()}  # type: ignore[call-overload]
    return Routes(aliases=aliases, groups=groups)


def offering(model: str) -> list[str]:
    catalog = {"gpt-5": ["openai"], "claude-sonnet-4-5": ["anthropic", "anthropic-work"]}
    return catalog.get(model, [])


def resolve(spec: str, r: Routes | None = None) -> list[str]:
    return [str(t) for t in resolve_route(spec, r or Routes(), PROVIDERS, offering)]


def error_of(spec: str, r: Routes) -> str:
    with pytest.raises(SmithError) as caught:
        resolve(spec, r)
    return caught.value.diagnostic.render()


def test_provider_model_in_both_spellings() -> None:
    assert resolve("openai/gpt-5") == ["openai/gpt-5"]
    assert resolve("openai-compatible:qwen3:8b") == ["openai-compatible/qwen3:8b"]
    assert resolve("anthropic-work/claude-sonnet-4-5") == ["anthropic-work/claude-sonnet-4-5"]


def test_aliases_and_groups_expand_in_order_without_duplicates() -> None:
    r = routes(
        aliases={"fast": "openai/gpt-5-mini", "smart": "best"},
        groups={
            "best": ["anthropic/claude-sonnet-4-5", "fast", "openai/gpt-5"],
            "all": ["smart", "google/gemini-2.5-pro", "openai/gpt-5"],
        },
    )
    assert resolve("fast", r) == ["openai/gpt-5-mini"]
    expected = ["anthropic/claude-sonnet-4-5", "openai/gpt-5-mini", "openai/gpt-5"]
    assert resolve("smart", r) == expected
    assert resolve("all", r) == [*expected, "google/gemini-2.5-pro"]
    assert resolve("all", r) == resolve("all", r)  # deterministic


def test_a_bare_model_id_resolves_when_one_provider_offers_it() -> None:
    assert resolve("gpt-5") == ["openai/gpt-5"]


def test_a_cycle_fails_naming_the_whole_cycle() -> None:
    r = routes(aliases={"a": "b", "c": "a"}, groups={"b": ["openai/gpt-5", "c"]})
    text = error_of("a", r)
    assert "a -> b -> c -> a" in text
    assert str(CONF) in text


def test_a_self_alias_is_a_cycle() -> None:
    assert "x -> x" in error_of("x", routes(aliases={"x": "x"}))


def test_ambiguity_lists_every_candidate() -> None:
    text = error_of("claude-sonnet-4-5", Routes())
    assert "anthropic/claude-sonnet-4-5" in text and "anthropic-work/claude-sonnet-4-5" in text
    text = error_of("best", routes(aliases={"best": "openai/gpt-5"}, groups={"best": ["x/y"]}))
    assert "alias 'best'" in text and "group 'best'" in text


def test_unknown_names_suggest_the_closest() -> None:
    text = error_of("opnai/gpt-5", Routes())
    assert "opnai" in text and "did you mean 'openai'" in text


def test_an_empty_group_is_refused() -> None:
    assert "no members" in error_of("none", routes(groups={"none": []}))


def test_backoff_honours_retry_after_and_stays_bounded() -> None:
    limits = Limits(retry_delay=1.0, retry_cap=10.0)
    assert backoff(1, 3.0, limits) == 3.0
    assert backoff(1, 3600.0, limits) == 10.0  # a huge Retry-After is capped
    for attempt in range(1, 8):
        delays = {backoff(attempt, None, limits) for _ in range(50)}
        full = min(2.0 ** (attempt - 1), 10.0)
        assert all(0.5 * full <= d <= full for d in delays)
        assert len(delays) > 1  # jittered


def rate_limited() -> list[object]:
    return [End("error", error="429 rate limited", retryable=True, kind="rate_limit")]


def server_error() -> list[object]:
    return [End("error", error="500 internal", retryable=True, kind="server")]


def group_of(*fakes: Fake) -> Group:
    names = ("anthropic/claude-sonnet-4-5", "openai/gpt-5", "google/gemini-2.5-pro")
    return Group("best", [(Target(*n.split("/")), f) for n, f in zip(names, fakes, strict=False)])


def test_a_rate_limit_fails_over_at_once(tmp_path: Path) -> None:
    first, second = Fake(rate_limited()), Fake(say("from gpt"))
    world = World(tmp_path)
    world.converse(group_of(first, second))
    assert world.of("retry") == []
    [failover] = world.of("failover")
    assert failover["from_model"] == "anthropic/claude-sonnet-4-5"
    assert failover["to_model"] == "openai/gpt-5"
    assert second.requests[0].model == "gpt-5"
    last = messages(world.session)[-1]
    assert (last["provider"], last["model"], last["stop"]) == ("openai", "gpt-5", "success")


def test_transient_errors_retry_before_failing_over(tmp_path: Path) -> None:
    first = Fake(server_error(), server_error(), server_error())
    second = Fake(say("ok"))
    world = World(tmp_path)
    world.converse(group_of(first, second), limits=Limits(retries=2, retry_delay=0.001))
    assert [e["attempt"] for e in world.of("retry")] == [1, 2]
    assert len(first.requests) == 3 and len(world.of("failover")) == 1
    assert world.of("agent_end")[-1]["stop"] == "end"


def test_every_response_starts_again_at_the_first_member(tmp_path: Path) -> None:
    first = Fake(rate_limited(), say("back on the first"))
    second = Fake(say("second"))
    world = World(tmp_path)
    world.converse(group_of(first, second), prompts=("one", "two"))
    assert [m["provider"] for m in messages(world.session) if m["role"] == "assistant"] == [
        "anthropic",
        "openai",
        "anthropic",
    ]


def test_output_already_streamed_is_never_retried(tmp_path: Path) -> None:
    partial = [
        TextDelta("half an ans"),
        End("error", error="reset", retryable=True, kind="connect"),
    ]
    first, second = Fake(partial), Fake(say("never asked"))
    world = World(tmp_path)
    world.converse(group_of(first, second))
    assert world.of("retry") == [] and world.of("failover") == []
    assert second.requests == []


def test_invalid_requests_are_final(tmp_path: Path) -> None:
    invalid = [End("error", error="400 bad request", retryable=False, kind="invalid")]
    first, second = Fake(invalid), Fake(say("never asked"))
    world = World(tmp_path)
    world.converse(group_of(first, second))
    assert world.of("retry") == [] and world.of("failover") == [] and second.requests == []
    assert world.of("agent_end")[-1]["stop"] == "error"


def test_an_exhausted_group_reports_the_last_error(tmp_path: Path) -> None:
    first, second = Fake(rate_limited(), rate_limited()), Fake(rate_limited(), rate_limited())
    world = World(tmp_path)
    world.converse(group_of(first, second), limits=Limits(retries=1, retry_delay=0.001))
    assert len(world.of("failover")) == 1
    assert world.of("agent_end")[-1]["stop"] == "error"
