"""The model catalog: bundled data, configuration overrides (an open config section),
refreshed facts, provenance and conflicts, and the lookup providers use."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smith.config import resolve
from smith.config._schema import Schema, Section
from smith.config._types import Integer
from smith.diagnostics import ConfigError, SmithError, Source
from smith.providers import CONFIG_CHECKS
from smith.providers._catalog import (
    ASSUMED,
    BUNDLED,
    Listed,
    Refreshed,
    build,
    model_info,
    overrides_from,
    parse_entry,
)
from smith.providers._model import APIS
from smith.providers._overrides import FIELDS, LEVELS, split_key
from smith.providers._refresh import load_catalog
from smith.sdk import provider_facts
from tests.conftest import SmithEnv

RAW = json.loads(files("smith.providers").joinpath("catalog.json").read_text("utf-8"))


def _config(senv: SmithEnv, text: str):  # type: ignore[no-untyped-def]
    """Configuration resolved as the command line resolves it: with the checks that
    smith.providers contributes for catalog, models and providers."""
    senv.write_user_config(text)
    return resolve(env=senv.env, cwd=str(senv.root), checks=CONFIG_CHECKS)


# -- the bundled catalog -----------------------------------------------------------------


@pytest.mark.parametrize("raw", RAW["models"], ids=lambda r: f"{r['provider']}/{r['id']}")
def test_every_bundled_entry_is_valid(raw: dict[str, object]) -> None:
    info, snapshots = parse_entry(raw)
    facts = provider_facts()
    assert info.api in APIS and info.provider in facts
    assert facts[info.provider].first_party  # compatible endpoints need no entries
    assert isinstance(info.context_window, int) and info.context_window > 0
    assert isinstance(info.max_output, int) and 0 < info.max_output <= info.context_window
    assert set(info.thinking) <= set(LEVELS) and set(info.input) <= {"text", "image"}
    assert info.cache in ("none", "automatic", "explicit")
    assert info.pricing is not None
    for kind in ("input", "output", "cache_read", "cache_write"):
        price = getattr(info.pricing, kind)
        assert price is None or (isinstance(price, float) and price >= 0), kind
    # dated versions of the same model (claude-sonnet-4-0 is claude-sonnet-4-20250514)
    assert all(s.startswith(info.id.removesuffix("-0")) for s in snapshots)
    assert set(info.provenance.values()) == {BUNDLED}


def test_bundled_ids_and_snapshots_are_unique() -> None:
    seen: set[tuple[str, str]] = set()
    for raw in RAW["models"]:
        ids = [raw["id"], *raw.get("snapshots", [])]
        for model_id in ids:
            key = (raw["provider"], model_id)
            assert key not in seen, key
            seen.add(key)


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        ({"api": "smoke-signals"}, "api"),
        ({"context_window": 0}, "limits"),
        ({"max_output": 300_000}, "limits"),
        ({"context_window": "200k"}, "context_window"),
        ({"thinking": ["hard"]}, "thinking"),
        ({"input": ["text", "audio"]}, "input"),
        ({"tools": "yes"}, "tools"),
        ({"cache": "sometimes"}, "cache"),
        ({"pricing": {"input": -1, "output": 1, "cache_read": 0, "cache_write": 0}}, "pricing"),
        ({"pricing": {"input": 1, "output": 1}}, "pricing"),
    ],
)
def test_a_bad_bundled_entry_is_rejected(change: dict[str, object], complaint: str) -> None:
    raw = {**RAW["models"][0], **change}
    with pytest.raises(ValueError, match=complaint):
        parse_entry(raw)


@pytest.mark.parametrize(
    ("key", "context", "output", "prices"),
    [
        ("anthropic/claude-sonnet-4-5", 200_000, 64_000, (3, 15, 0.30, 3.75)),
        ("anthropic/claude-opus-4-1", 200_000, 32_000, (15, 75, 1.50, 18.75)),
        ("anthropic/claude-haiku-4-5", 200_000, 64_000, (1, 5, 0.10, 1.25)),
        ("openai/gpt-5", 400_000, 128_000, (1.25, 10, 0.125, 1.25)),
        ("openai/gpt-5-mini", 400_000, 128_000, (0.25, 2, 0.025, 0.25)),
        ("openai/gpt-4.1", 1_047_576, 32_768, (2, 8, 0.50, 2)),
        ("openai/gpt-4o-mini", 128_000, 16_384, (0.15, 0.60, 0.075, 0.15)),
        ("google/gemini-2.5-pro", 1_048_576, 65_536, (1.25, 10, 0.125, 1.25)),
        ("google/gemini-2.5-flash", 1_048_576, 65_536, (0.30, 2.50, 0.03, 0.30)),
    ],
)
def test_published_figures(key: str, context: int, output: int, prices: tuple[float, ...]) -> None:
    info = load_catalog().lookup(*key.split("/"))
    assert info is not None
    assert (info.context_window, info.max_output) == (context, output)
    assert info.pricing is not None
    got = (info.pricing.input, info.pricing.output, info.pricing.cache_read)
    assert (*got, info.pricing.cache_write) == pytest.approx(prices)


def test_gpt5_speaks_responses_and_reasons() -> None:
    catalog = load_catalog()
    for model_id in ("gpt-5", "gpt-5-mini", "gpt-5-nano"):
        info = catalog.lookup("openai", model_id)
        assert info is not None and info.api == "openai-responses"
        assert info.thinking == ("minimal", "low", "medium", "high")
    gpt41 = catalog.lookup("openai", "gpt-4.1")
    assert gpt41 is not None and gpt41.thinking == ()


def test_a_snapshot_id_gets_its_models_entry_under_its_own_id() -> None:
    catalog = load_catalog()
    info = catalog.lookup("anthropic", "claude-sonnet-4-5-20250929")
    assert info is not None and info.id == "claude-sonnet-4-5-20250929"
    assert info.max_output == 64_000
    assert info.provenance["id"] == "snapshot of anthropic/claude-sonnet-4-5"
    assert catalog.offering("claude-sonnet-4-5-20250929") == ["anthropic"]
    assert catalog.offering("gpt-5") == ["openai"]
    assert catalog.offering("no-such-model") == []


# -- lookup for providers ----------------------------------------------------------------


def test_an_unknown_id_on_an_openai_compatible_endpoint_is_assumed() -> None:
    info = model_info(load_catalog(), "openai-compatible", "qwen2.5-coder:32b")
    assert (info.context_window, info.max_output) == (32_768, 4_096)
    assert info.input == ("text",) and info.tools and info.thinking == ()
    assert info.api == "openai-chat" and info.pricing is None
    assert set(info.provenance.values()) == {ASSUMED}


def test_an_endpoint_configured_over_the_compatible_plugin_is_assumed_too() -> None:
    info = model_info(load_catalog(), "local", "llama", plugin="openai-compatible")
    assert info.provider == "local" and info.api == "openai-chat"
    assert info.provenance["context_window"] == ASSUMED


def test_an_unknown_id_on_a_first_party_provider_is_a_diagnostic() -> None:
    with pytest.raises(SmithError) as caught:
        model_info(load_catalog(), "openai", "gpt5", source=Source("flag", "--model"))
    d = caught.value.diagnostic
    assert d.code == "model.unknown-model"
    assert "did you mean 'openai/gpt-5'?" in d.fix
    assert "gpt-4.1" in d.why  # the models it does know
    assert d.source == Source("flag", "--model")


def test_an_account_over_a_first_party_plugin_finds_the_plugins_models() -> None:
    info = model_info(load_catalog(), "anthropic-work", "claude-haiku-4-5", plugin="anthropic")
    assert info.provider == "anthropic-work" and info.max_output == 64_000


# -- configuration overrides -------------------------------------------------------------

OVERRIDES = """\
catalog {
    "openai-compatible/qwen2.5-coder:32b" {
        context-window 131072
        max-output 8192
        input "text" "image"
        thinking "low" "high"
        pricing input=0 output=0
    }
    "openai/gpt-4.1" {
        max-output 16000
        pricing cache-write=null
    }
}
"""


def test_configuration_overrides_win_and_say_where_they_were_set(senv: SmithEnv) -> None:
    config = _config(senv, OVERRIDES)
    catalog = load_catalog(config)
    where = str(senv.user_config)

    local = model_info(catalog, "openai-compatible", "qwen2.5-coder:32b")
    assert (local.context_window, local.max_output) == (131_072, 8_192)
    assert local.input == ("text", "image") and local.thinking == ("low", "high")
    assert local.pricing is not None and (local.pricing.input, local.pricing.output) == (0, 0)
    assert local.provenance["context_window"] == f"config {where}:3:24"
    assert local.provenance["tools"] == ASSUMED  # not configured: still assumed

    gpt = model_info(catalog, "openai", "gpt-4.1")
    assert gpt.max_output == 16_000 and gpt.provenance["max_output"] == f"config {where}:10:20"
    assert gpt.context_window == 1_047_576 and gpt.provenance["context_window"] == BUNDLED
    assert gpt.pricing is not None and gpt.pricing.cache_write is None
    assert gpt.pricing.input == 2.0


def test_an_override_of_a_snapshot_id_applies_to_its_model(senv: SmithEnv) -> None:
    config = _config(
        senv, 'catalog { "anthropic/claude-haiku-4-5-20251001" { max-output 1000; }; }\n'
    )
    info = load_catalog(config).lookup("anthropic", "claude-haiku-4-5")
    assert info is not None and info.max_output == 1000


@pytest.mark.parametrize(
    ("text", "code", "words"),
    [
        (
            'catalog { "openai/gpt-5" { contxt-window 5; }; }',
            "config.catalog-field",
            "'context-window'",
        ),
        ('catalog { "gpt-5" { tools true; }; }', "config.catalog-key", "provider/model"),
        ('catalog { "openai/gpt-5" { tools 3; }; }', "config.catalog-value", "true or false"),
        ('catalog { "openai/gpt-5" { thinking "hard"; }; }', "config.catalog-value", "levels"),
        ('catalog { "openai/gpt-5" { max-output -1; }; }', "config.catalog-value", "positive"),
        ('catalog { "openai/gpt-5" { pricing input=-2; }; }', "config.catalog-value", "0 or more"),
        ('catalog { "openai/gpt-5" { api "morse"; }; }', "config.catalog-value", "openai-chat"),
    ],
)
def test_bad_overrides_are_diagnostics_with_positions(
    senv: SmithEnv, text: str, code: str, words: str
) -> None:
    senv.write_user_config(text + "\n")
    with pytest.raises(ConfigError) as caught:
        resolve(env=senv.env, cwd=str(senv.root), checks=CONFIG_CHECKS)
    [d] = caught.value.diagnostics
    assert d.code == code
    assert d.source is not None and d.source.location.startswith(f"{senv.user_config}:1:")
    assert words in d.what + d.why + d.fix


@given(
    provider=st.from_regex(r"[a-z][a-z0-9-]{0,15}", fullmatch=True),
    model=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@/-]{0,30}", fullmatch=True),
    field=st.sampled_from(sorted(FIELDS)),
)
def test_override_keys_split_back_however_the_id_is_spelt(
    provider: str, model: str, field: str
) -> None:
    # Model ids hold dots, colons and slashes (gpt-4.1, qwen2.5:7b, org/model): the
    # field is found from the end, the provider before the first slash.
    key = f"catalog.{provider}/{model}.{field}"
    got = split_key(key, Source("file", "x"))
    if any(model.endswith("." + f) for f in FIELDS):
        return  # an id ending in a field's name reads as that field: ambiguous by nature
    assert got == (provider, model, field)


# -- the open section itself -------------------------------------------------------------


def _open_schema(check=None) -> Schema:  # type: ignore[no-untyped-def]
    from smith.config._options import SCHEMA

    schema = Schema()
    for option in SCHEMA:
        schema.add(option)
    schema.add_section(Section("", "error", "own"))
    schema.add_section(Section("things", "open", "named by the user", check=check))
    return schema


def test_an_open_section_keeps_every_key_with_its_layer_and_source(senv: SmithEnv) -> None:
    text = 'things { a.b 1; "x/y.z" { deep "v"; }; }\n'
    senv.write_user_config(text)
    project = senv.make_project(config="things { a.b 2; }\n")
    from smith import trust

    trust.trust(str(senv.data_home), str(project))
    config = resolve(env=senv.env, cwd=str(project), schema=_open_schema())
    tree = config.subtree("things")
    assert sorted(tree) == ["a.b", "x/y.z.deep"]
    assert tree["a.b"].value == 2 and tree["a.b"].layer == "project"  # the higher layer
    assert tree["x/y.z.deep"].value == "v" and tree["x/y.z.deep"].layer == "user"
    column = text.index('"v"') + 1
    assert tree["x/y.z.deep"].source == Source("file", f"{senv.user_config}:1:{column}")
    assert config.subtree("nothing") == {}


def test_an_open_sections_check_normalizes_and_reports(senv: SmithEnv) -> None:
    def check(key: str, value: object, source: Source) -> object:
        if not isinstance(value, int):
            from smith.config._resolve import INVALID_VALUE

            raise INVALID_VALUE.error(
                field=key,
                source=source,
                expected="a number",
                got=repr(value),
                doc="a test",
                remedy="fix it",
            )
        return value * 10

    senv.write_user_config('things { good 4; bad "x"; }\n')
    with pytest.raises(ConfigError) as caught:
        resolve(env=senv.env, cwd=str(senv.root), schema=_open_schema(check))
    assert [d.field for d in caught.value.diagnostics] == ["things.bad"]
    config = resolve(env=senv.env, cwd=str(senv.root), schema=_open_schema(check), strict=False)
    assert config.subtree("things")["good"].value == 40
    assert "bad" not in config.subtree("things")


def test_a_declared_option_under_an_open_prefix_is_still_an_option(senv: SmithEnv) -> None:
    from smith.config._schema import Option

    schema = _open_schema()
    schema.add(Option("things.limit", Integer(1, 10), 3, doc="A declared one."))
    senv.write_user_config("things { limit 20; }\n")
    with pytest.raises(ConfigError) as caught:  # checked by its type, not kept as open
        resolve(env=senv.env, cwd=str(senv.root), schema=schema)
    assert caught.value.diagnostics[0].code == "config.invalid-value"


def test_open_keys_do_not_reach_the_settings_list(senv: SmithEnv) -> None:
    config = _config(senv, OVERRIDES)
    assert all(not s.key.startswith("catalog.") for s in config)  # `config show` unchanged


def test_provider_settings_are_checked_where_they_are_known(senv: SmithEnv) -> None:
    senv.write_user_config('providers { local { base-url "localhost:8080"; }; }\n')
    with pytest.raises(ConfigError) as caught:
        resolve(env=senv.env, cwd=str(senv.root), checks=CONFIG_CHECKS)
    assert caught.value.diagnostics[0].code == "config.provider-setting"
    config = _config(senv, 'providers { local { base-url "http://h:1/v1/"; other 1; }; }\n')
    tree = config.subtree("providers")
    assert tree["local.base-url"].value == "http://h:1/v1"  # normalized
    assert tree["local.other"].value == 1  # another module's setting, passed through
    assert config.checked == {"catalog", "models", "providers"}


def test_without_the_providers_checks_open_values_pass_until_they_are_read(
    senv: SmithEnv,
) -> None:
    """Configuration checks nothing it does not own: resolved without CONFIG_CHECKS, a
    bad base-url is kept as given (and Config.checked says so); what reads it (the
    runtime's registry) checks it first, with the diagnostic resolving would have given."""
    from smith.runtime import registry

    senv.write_user_config('providers { local { base-url "localhost:8080"; }; }\n')
    config = resolve(env=senv.env, cwd=str(senv.root))
    assert config.checked == frozenset()
    assert config.subtree("providers")["local.base-url"].value == "localhost:8080"
    with pytest.raises(ConfigError) as caught:
        registry(config)
    [d] = caught.value.diagnostics
    assert d.code == "config.provider-setting" and d.field == "providers.local.base-url"
    with pytest.raises(ConfigError) as resolving:
        resolve(env=senv.env, cwd=str(senv.root), checks=CONFIG_CHECKS)
    assert [d.render() for d in resolving.value.diagnostics] == [d.render()]

    good = _config(senv, 'providers { local { base-url "http://h:1/v1/"; }; }\n')
    unchecked = resolve(env=senv.env, cwd=str(senv.root))
    unchecked.apply_checks(CONFIG_CHECKS)  # normalizes as resolving with them does
    assert unchecked.checked == good.checked
    assert unchecked.subtree("providers")["local.base-url"].value == "http://h:1/v1"


def test_a_check_for_a_section_that_is_not_open_is_a_mistake(senv: SmithEnv) -> None:
    with pytest.raises(ValueError, match="'tools', which is not an open section"):
        resolve(env=senv.env, cwd=str(senv.root), checks={"tools": CONFIG_CHECKS["models"]})


# -- refreshed facts, guesses, provenance, conflicts -------------------------------------


def _refreshed(provider: str, *models: Listed) -> dict[str, Refreshed]:
    return {provider: Refreshed(provider, "2025-11-01T00:00:00Z", 1.0, models)}


def test_a_refresh_adds_models_and_never_overrides_reviewed_facts() -> None:
    catalog = build(
        _refreshed(
            "anthropic",
            Listed("claude-haiku-4-5-20251001", 190_000, 64_000),  # disagrees with bundled
            Listed("claude-next-5", 500_000, 50_000),  # new, with its limits
            Listed("claude-mystery"),  # new, nothing said: listed, not usable
        )
    )
    haiku = catalog.lookup("anthropic", "claude-haiku-4-5")
    assert haiku is not None and haiku.context_window == 200_000  # bundled kept
    [conflict] = catalog.conflicts
    assert (conflict.model, conflict.fact) == ("anthropic/claude-haiku-4-5", "context_window")
    assert (conflict.kept, conflict.kept_from, conflict.other) == (200_000, BUNDLED, 190_000)
    assert conflict.other_from == "refresh anthropic at 2025-11-01T00:00:00Z"

    new = catalog.lookup("anthropic", "claude-next-5")
    assert new is not None and new.context_window == 500_000
    assert new.provenance["context_window"].startswith("refresh anthropic")
    assert new.provenance["tools"].startswith("assumed")
    assert new.api == "anthropic-messages"

    assert catalog.lookup("anthropic", "claude-mystery") is None
    with pytest.raises(SmithError) as caught:
        model_info(catalog, "anthropic", "claude-mystery")
    assert "model list names it" in caught.value.diagnostic.why


def test_family_guesses_yield_to_explicit_evidence(senv: SmithEnv) -> None:
    refreshed = _refreshed(
        "google",
        Listed("gemini-2.5-flash-preview-09-2025", 1_000_000, None),  # says context only
        Listed("gemini-2.5-flash-image"),  # not a version of flash: no guess
    )
    config = _config(
        senv, 'catalog { "google/gemini-2.5-flash-preview-09-2025" { max-output 1234; }; }\n'
    )
    catalog = build(refreshed, overrides_from(config))
    info = catalog.lookup("google", "gemini-2.5-flash-preview-09-2025")
    assert info is not None
    guess = f"guessed from google/gemini-2.5-flash ({BUNDLED})"
    assert info.provenance["pricing.input"] == guess and info.pricing is not None
    assert info.pricing.input == 0.30  # the family's price: nothing better is known
    assert info.context_window == 1_000_000  # the refresh, not the guess (1,048,576)
    assert info.provenance["context_window"].startswith("refresh google")
    assert info.max_output == 1234 and info.provenance["max_output"].startswith("config ")
    assert catalog.lookup("google", "gemini-2.5-flash-image") is None


def test_configuration_beats_a_refresh_and_the_conflict_is_listed(senv: SmithEnv) -> None:
    text = 'catalog { "openai-compatible/served" { context-window 8192; }; }\n'
    config = _config(senv, text)
    refreshed = _refreshed("openai-compatible", Listed("served", 32_000, None))
    catalog = build(refreshed, overrides_from(config))
    info = catalog.lookup("openai-compatible", "served")
    assert info is not None and info.context_window == 8192
    column = text.index("8192") + 1
    assert info.provenance["context_window"] == f"config {senv.user_config}:1:{column}"
    [conflict] = catalog.conflicts
    assert (conflict.kept, conflict.other) == (8192, 32_000)
    assert conflict.kept_from.startswith("config ") and conflict.other_from.startswith(
        "refresh openai-compatible"
    )
    assert conflict.to_dict()["field"] == "context_window"


def test_a_refreshed_compatible_model_without_limits_is_assumed() -> None:
    catalog = build(_refreshed("openai-compatible", Listed("tiny")))
    info = catalog.lookup("openai-compatible", "tiny")
    assert info is not None and info.provenance["context_window"] == ASSUMED


def test_loading_reads_the_refresh_cache_of_the_configured_home(senv: SmithEnv) -> None:
    from smith.providers._refresh import store_list

    home = str(senv.data_home)
    store_list(home, Refreshed("openai", "2025-11-02T00:00:00Z", 5.0, (Listed("gpt-9", 9, 9),)))
    config = resolve(env=senv.env, cwd=str(senv.root))
    catalog = load_catalog(config)
    assert catalog.lookup("openai", "gpt-9") is not None
    assert catalog.refreshed["openai"].at == "2025-11-02T00:00:00Z"
    Path(home, "catalog-cache.json").write_text("{not json")
    assert load_catalog(config).lookup("openai", "gpt-9") is None  # damaged: bundled only
    assert load_catalog(config).lookup("openai", "gpt-5") is not None
