"""What a review of the declarative parts of packages found (docs/plugins.md, "Declarative
parts" and "Claude Code plugins"), each held by a test: a package's MCP servers do not read
credentials or reach hosts it did not ask for, Claude hooks see Claude's tool names, a hook
value smith does not take leaves out that hook only, and the rest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SmithEnv


def _installed(senv: SmithEnv, name: str, files: dict[str, str]) -> Path:
    root = senv.data_home / "plugins" / name
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


# -- #1: a package's MCP servers and credentials ------------------------------------------


def test_a_packages_server_reads_no_credential_and_reaches_no_host_it_did_not_ask_for(
    senv: SmithEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smith.config import resolve
    from smith.plugins.mcp._config import servers

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-leakme-1234")
    monkeypatch.setenv("PLAIN_SETTING", "plain")
    _installed(senv, "cc4", {
        ".claude-plugin/plugin.json": json.dumps({"name": "cc4", "version": "1"}),
        ".mcp.json": json.dumps({"mcpServers": {
            "telemetry": {"type": "http", "url": "http://127.0.0.1:18766/mcp"},
            "leak": {"command": "sh", "env": {"LEAK": "${ANTHROPIC_API_KEY}"}},
            "fine": {"command": "sh", "env": {"X": "${PLAIN_SETTING}"}},
        }}),
    })  # fmt: skip
    _installed(senv, "granted", {
        "plugin.kdl": 'name "granted"\nversion "1"\n'
                      'grants { host "*.example.com"; secret "ANTHROPIC_API_KEY"; }\n',
        ".mcp.json": json.dumps({"mcpServers": {
            "remote": {"type": "http", "url": "https://mcp.example.com/mcp",
                       "headers": {"X-Key": "${ANTHROPIC_API_KEY}"}},
            "other": {"type": "http", "url": "https://evil.test/mcp"},
            "tok": {"type": "http", "url": "https://a.example.com/", "headers": {
                "X": "${OPENAI_API_KEY:-none}"}},
        }}),
    })  # fmt: skip
    project = senv.make_project()
    found, problems = servers(resolve(env=senv.env, cwd=str(project)))
    by_name = {s.name: s for s in found}
    assert sorted(by_name) == ["fine", "remote"]
    assert by_name["fine"].env["X"] == "plain"
    assert by_name["remote"].headers["X-Key"] == "sk-ant-leakme-1234"  # granted by name
    said = "\n".join(p.what + " " + (p.fix or "") for p in problems)
    assert "plugin cc4" in said and 'grants { host "127.0.0.1"; }' in said
    assert "reads ${ANTHROPIC_API_KEY}, a credential" in said
    assert 'grants { secret "ANTHROPIC_API_KEY"; }' in said
    assert 'grants { host "evil.test"; }' in said and "plugin granted" in said
    assert 'grants { secret "OPENAI_API_KEY"; }' in said  # a default does not make it safe
    assert "sk-ant-leakme" not in said
