"""`--base-url` without the API's version path: the 404 says which URL was requested and
the form the base URL takes, for every provider; docs/providers.md shows that form."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, SmithEnv
from tests.http_kit import LoopbackServer, Recorded, Reply

ROOT = Path(__file__).resolve().parents[1]
KEY = "test-key-0123456789abcdefXYZ"

# provider, model, its key variable, the path a request goes to under a base URL without
# the version, and the version path the base URL must end in
CASES = [
    ("anthropic", "claude-sonnet-4-5", "ANTHROPIC_API_KEY", "/messages", "/v1"),
    (
        "google",
        "gemini-2.5-pro",
        "GEMINI_API_KEY",
        "/models/gemini-2.5-pro:streamGenerateContent",
        "/v1beta",
    ),
    ("openai", "gpt-5", "OPENAI_API_KEY", "/responses", "/v1"),
    ("openai-compatible", "bar", "OPENAI_API_KEY", "/chat/completions", "/v1"),
]


def _not_found(request: Recorded) -> Reply:
    """What a server answers for a path it does not serve: a bare 404."""
    return Reply(404, {"content-type": "text/plain", "content-length": "9"}, [b"Not Found"])


@pytest.mark.parametrize(("provider", "model", "variable", "path", "version"), CASES)
def test_a_404_from_a_given_base_url_says_what_was_requested_and_the_form_expected(
    senv: SmithEnv,
    smith_process: Callable[..., Result],
    provider: str,
    model: str,
    variable: str,
    path: str,
    version: str,
) -> None:
    project = senv.make_project()
    senv.write_user_config("agent { max-iterations 1; }\n")
    with LoopbackServer() as srv:
        srv.script(_not_found)
        r = smith_process(
            "eval",
            "--model",
            f"{provider}/{model}",
            "--base-url",
            srv.url,  # the probe: no /v1 (or /v1beta)
            "hi",
            cwd=project,
            env={variable: KEY, "SMITH_AGENT_DEADLINE": "30"},
        )
        targets = [q.target.split("?")[0] for q in srv.requests]
    assert r.code == 1
    assert targets and set(targets) == {path}
    assert "404" in r.err
    assert f"{srv.url}{path}" in r.err, r.err  # which URL was requested
    assert "--base-url" in r.err  # where the base URL came from
    assert f"ending in {version}" in r.err, r.err  # the form expected
    assert KEY not in r.err and "Traceback" not in r.err


def test_docs_show_the_base_url_form_of_every_provider() -> None:
    doc = (ROOT / "docs" / "providers.md").read_text()
    for provider, _, _, _, version in CASES:
        assert any(
            provider in line and "--base-url" in line and f"{version}`" in line
            for line in doc.splitlines()
        ), f"docs/providers.md shows no --base-url ...{version} for {provider}"
