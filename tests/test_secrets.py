"""The secret proxy keeps registered secrets out of requests, sessions and logs, and
redact_text masks credentials that were never registered."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smith import diagnostics
from smith._fast import _cbor
from smith.runtime._secrets import RedactingFilter, SecretProxy, placeholder, redact_text
from smith.session import Session

OPENAI = "sk-proj-Zq81fJx0aLw3Tn5yVb7Kc2Hd"
GITHUB = "ghp_R4nd0mT0kenForTests0123456789abcdef"


@pytest.fixture(autouse=True)
def _diagnostics_secrets() -> Iterator[None]:
    """register() adds to the process-wide diagnostics list; keep it as other tests see it."""
    saved = set(diagnostics._secrets)
    yield
    diagnostics._secrets.clear()
    diagnostics._secrets.update(saved)


def proxy_with(**secrets: str) -> SecretProxy:
    proxy = SecretProxy()
    for name, value in secrets.items():
        proxy.register(name, value, source=f"test:{name}")
    return proxy


# -- registering ----------------------------------------------------------------------


def test_register_returns_the_placeholder_and_hides_the_value_from_diagnostics() -> None:
    proxy = SecretProxy()
    assert proxy.register("OPENAI_API_KEY", OPENAI, source="env:OPENAI_API_KEY") == (
        "{{secret:OPENAI_API_KEY}}"
    )
    assert placeholder("X") == "{{secret:X}}"
    assert diagnostics.scrub(f"key {OPENAI}") == "key [secret]"
    assert proxy.names() == ["OPENAI_API_KEY"] and len(proxy) == 1
    assert OPENAI not in repr(proxy) and "OPENAI_API_KEY" in repr(proxy)


@pytest.mark.parametrize("name", ["", "1KEY", "MY-KEY", "A B", "KEY\n", "ключ", "{{x}}"])
def test_invalid_names_are_refused_clearly(name: str) -> None:
    with pytest.raises(ValueError, match="letters, digits and underscores"):
        SecretProxy().register(name, OPENAI, source="test")


@pytest.mark.parametrize("value", ["", "abc", "   abc  ", "\n\t"])
def test_short_values_are_refused_clearly(value: str) -> None:
    with pytest.raises(ValueError, match="shorter than 4 characters"):
        SecretProxy().register("KEY", value, source="test")


def test_registering_a_name_again_replaces_its_value() -> None:
    proxy = proxy_with(KEY="old-value-1234")
    proxy.register("KEY", "new-value-5678", source="rotated")
    assert proxy.redact("old-value-1234 new-value-5678") == "old-value-1234 {{secret:KEY}}"
    assert proxy.restore("{{secret:KEY}}") == "new-value-5678"
    assert proxy.records() == [
        {"name": "KEY", "placeholder": "{{secret:KEY}}", "source": "rotated"}
    ]


# -- redaction ----------------------------------------------------------------------------


def test_with_no_secrets_redact_returns_the_value_itself() -> None:
    value = {"messages": [{"text": OPENAI}]}
    assert SecretProxy().redact(value) is value


def test_redact_copies_deep_structures_including_dict_keys() -> None:
    proxy = proxy_with(OPENAI=OPENAI, GITHUB=GITHUB)
    original = {
        "system": f"use {OPENAI}",
        OPENAI: [1, None, 2.5, True, b"bytes stay", ("t", GITHUB)],
        "nested": {"deeper": [{"k": f"{GITHUB}/{OPENAI}"}]},
    }
    snapshot = json.dumps(original, default=repr)
    assert proxy.redact(original) == {
        "system": "use {{secret:OPENAI}}",
        "{{secret:OPENAI}}": [1, None, 2.5, True, b"bytes stay", ("t", "{{secret:GITHUB}}")],
        "nested": {"deeper": [{"k": "{{secret:GITHUB}}/{{secret:OPENAI}}"}]},
    }
    assert json.dumps(original, default=repr) == snapshot  # the input is not changed


@pytest.mark.parametrize("order", ["short-first", "long-first"])
def test_a_secret_containing_another_is_replaced_whole(order: str) -> None:
    pairs = [("SHORT", "abcd1234"), ("LONG", "abcd1234efgh5678")]
    proxy = proxy_with(**dict(pairs if order == "short-first" else pairs[::-1]))
    text = "a=abcd1234efgh5678 b=abcd1234 c=xabcd1234efgh5678abcd1234"
    assert proxy.redact(text) == (
        "a={{secret:LONG}} b={{secret:SHORT}} c=x{{secret:LONG}}{{secret:SHORT}}"
    )
    assert proxy.restore(str(proxy.redact(text))) == text


def test_existing_placeholders_survive_a_secret_that_looks_like_their_syntax() -> None:
    proxy = proxy_with(WORD="secret", OTHER="zzzz9999")
    text = "{{secret:OTHER}} and {{secret:UNKNOWN}} and secret"
    once = proxy.redact(text)
    assert once == "{{secret:OTHER}} and {{secret:UNKNOWN}} and {{secret:WORD}}"
    assert proxy.redact(once) == once


def test_two_names_with_one_value_restore_to_that_value() -> None:
    proxy = proxy_with(A="same-value-1", B="same-value-1")
    assert proxy.redact("same-value-1") == "{{secret:B}}"
    assert proxy.restore("{{secret:A}} {{secret:B}}") == "same-value-1 same-value-1"


# -- restoration --------------------------------------------------------------------------


def test_restore_puts_plaintext_back_and_leaves_unknown_placeholders() -> None:
    proxy = proxy_with(GITHUB_TOKEN=GITHUB)
    text = "curl -H 'Authorization: token {{secret:GITHUB_TOKEN}}' {{secret:NOPE}} {{secret:}}"
    assert proxy.restore(text) == (
        f"curl -H 'Authorization: token {GITHUB}' {{{{secret:NOPE}}}} {{{{secret:}}}}"
    )
    plain = "no placeholders here"
    assert proxy.restore(plain) is plain


def test_restore_args_is_deep_and_copies() -> None:
    proxy = proxy_with(TOKEN=GITHUB)
    args: dict[str, object] = {
        "command": "gh auth login --with-token {{secret:TOKEN}}",
        "timeout": 30,
        "env": {"GH": "{{secret:TOKEN}}"},
        "argv": ["x", "{{secret:TOKEN}}", None],
    }
    restored = proxy.restore_args(args)
    assert restored == {
        "command": f"gh auth login --with-token {GITHUB}",
        "timeout": 30,
        "env": {"GH": GITHUB},
        "argv": ["x", GITHUB, None],
    }
    assert args["env"] == {"GH": "{{secret:TOKEN}}"}  # the original keeps placeholders


def test_env_maps_names_to_plaintext() -> None:
    assert proxy_with(A=OPENAI, B=GITHUB).env() == {"A": OPENAI, "B": GITHUB}
    assert SecretProxy().env() == {}


NAMES = st.sampled_from(["A", "B", "KEY_1", "_X"])
# Few letters, so secrets overlap often; none of the placeholder syntax's characters, so
# a secret can neither sit inside a placeholder nor join one to the text around it.
VALUES = st.text(alphabet="ab01 -", min_size=4, max_size=8).filter(lambda v: len(v.strip()) >= 4)


@given(
    secrets=st.dictionaries(NAMES, VALUES, min_size=1, max_size=4),
    pieces=st.lists(st.one_of(st.text(alphabet="ab01 -xy\n{}:", max_size=6), VALUES)),
    data=st.data(),
)
def test_redact_then_restore_is_the_identity(
    secrets: dict[str, str], pieces: list[str], data: st.DataObject
) -> None:
    proxy = proxy_with(**secrets)
    used = [data.draw(st.sampled_from(list(secrets.values()))) for _ in range(3)]
    text = "".join(pieces + used)
    redacted = proxy.redact(text)
    assert isinstance(redacted, str)
    assert proxy.restore(redacted) == text
    assert all(value not in redacted for value in secrets.values())
    assert proxy.redact(redacted) == redacted


@given(st.text())
def test_restore_of_redact_holds_for_any_text_without_placeholder_syntax(text: str) -> None:
    proxy = proxy_with(K="hunter2hunter2", L="hunter2h")
    if "{{secret:" not in text:
        assert proxy.restore(str(proxy.redact(text))) == text


# -- what the session records -----------------------------------------------------------


def test_records_hold_no_plaintext() -> None:
    proxy = proxy_with(OPENAI_API_KEY=OPENAI, GITHUB_TOKEN=GITHUB)
    records = proxy.records()
    assert records == [
        {"name": name, "placeholder": f"{{{{secret:{name}}}}}", "source": f"test:{name}"}
        for name in ("OPENAI_API_KEY", "GITHUB_TOKEN")
    ]
    encoded = _cbor.encode(records)
    for plaintext in (OPENAI, GITHUB):
        assert plaintext.encode() not in encoded
        assert plaintext not in json.dumps(records)


def test_a_source_that_quotes_the_value_is_redacted_in_records() -> None:
    proxy = SecretProxy()
    proxy.register("K", OPENAI, source=f"flag --key {OPENAI}")
    assert proxy.records()[0]["source"] == "flag --key {{secret:K}}"


def test_record_appends_secret_entries_once_and_never_the_plaintext(tmp_path: Path) -> None:
    path = tmp_path / "s.smith"
    proxy = proxy_with(OPENAI_API_KEY=OPENAI)
    with Session.create(str(path), cwd=str(tmp_path)) as session:
        session.append("message", proxy.redact({"role": "user", "text": f"my key is {OPENAI}"}))
        added = proxy.record(session)
        assert [e.kind for e in added] == ["secret"]
        assert added[0].content == proxy.records()[0]
        assert proxy.record(session) == []  # already on the branch
        proxy.register("GITHUB_TOKEN", GITHUB, source="env:GITHUB_TOKEN")
        added = proxy.record(session)
        assert [e.content for e in added] == [proxy.records()[1]]
    data = path.read_bytes()
    assert OPENAI.encode() not in data and GITHUB.encode() not in data
    # A resumed session with the same registrations records nothing new.
    with Session.open(str(path)) as session:
        again = proxy_with(OPENAI_API_KEY=OPENAI)
        again._sources["OPENAI_API_KEY"] = "test:OPENAI_API_KEY"
        assert again.record(session) == []
        secrets = [e.content for e in session.entries() if e.kind == "secret"]
        assert [s["name"] for s in secrets] == ["OPENAI_API_KEY", "GITHUB_TOKEN"]  # type: ignore[index]
        message = next(e.content for e in session.entries() if e.kind == "message")
        assert message == {"role": "user", "text": "my key is {{secret:OPENAI_API_KEY}}"}


def test_from_environment_registers_what_is_set_and_reports_the_rest() -> None:
    environ = {"OPENAI_API_KEY": OPENAI, "EMPTY": "", "SHORT": "abc", "BAD-NAME": GITHUB}
    names = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "EMPTY", "SHORT", "BAD-NAME"]
    proxy = SecretProxy.from_environment(names, environ)
    assert proxy.names() == ["OPENAI_API_KEY"]
    assert proxy.env() == {"OPENAI_API_KEY": OPENAI}
    assert proxy.records()[0]["source"] == "env:OPENAI_API_KEY"
    assert proxy.missing == ["ANTHROPIC_API_KEY", "EMPTY"]
    assert sorted(proxy.rejected) == ["BAD-NAME", "SHORT"]
    assert "shorter than 4" in proxy.rejected["SHORT"]
    assert all(GITHUB not in why for why in proxy.rejected.values())


# -- log redaction ----------------------------------------------------------------------

CURL = """\
*   Trying 104.18.6.192:443...
* Connected to api.openai.com (104.18.6.192) port 443
> POST /v1/chat/completions HTTP/2
> Host: api.openai.com
> user-agent: curl/8.5.0
> accept: */*
> Authorization: Bearer sk-proj-Zq81fJx0aLw3Tn5yVb7Kc2Hd
> content-type: application/json
> Cookie: __cf_bm=Yx2.Kp9; _cfuvid=a8f7.Lm3-171
>
< HTTP/2 200
< set-cookie: __cf_bm=Qq1.Zz8; path=/; expires=Tue, 01-Jan-30 00:00:00 GMT; HttpOnly
< openai-processing-ms: 412
"""
CURL_REDACTED = CURL.replace("Bearer sk-proj-Zq81fJx0aLw3Tn5yVb7Kc2Hd", "Bearer [redacted]")
CURL_REDACTED = CURL_REDACTED.replace("__cf_bm=Yx2.Kp9; _cfuvid=a8f7.Lm3-171", "[redacted]")
CURL_REDACTED = CURL_REDACTED.replace(
    "__cf_bm=Qq1.Zz8; path=/; expires=Tue, 01-Jan-30 00:00:00 GMT; HttpOnly", "[redacted]"
)

LOG_LINES = [
    (CURL, CURL_REDACTED),
    (
        "> authorization: Basic dXNlcjpodW50ZXIy",
        "> authorization: Basic [redacted]",
    ),
    ("Proxy-Authorization: Digest x", "Proxy-Authorization: Digest [redacted]"),
    ("> x-api-key: 7f3a9b2c", "> x-api-key: [redacted]"),
    ("< api-key: 7f3a9b2c", "< api-key: [redacted]"),
    ("x-goog-api-key: 7f3a9b2c", "x-goog-api-key: [redacted]"),
    (
        "DEBUG sending headers Authorization: Bearer abc.def.ghi to upstream",
        "DEBUG sending headers Authorization: Bearer [redacted]",
    ),
    (
        """curl -s -H "Authorization: Bearer abc.def" -H 'x-api-key: zz99' https://x.io/v1""",
        """curl -s -H "Authorization: Bearer [redacted]" -H 'x-api-key: [redacted]' https://x.io/v1""",
    ),
    (
        """{"model": "gpt-4o", "apiKey": "abc123", "max_tokens": 99, "password": 1234}""",
        """{"model": "gpt-4o", "apiKey": "[redacted]", "max_tokens": 99, "password": [redacted]}""",
    ),
    (
        "headers={'authorization': 'Bearer xyz', 'content-type': 'application/json'}",
        "headers={'authorization': 'Bearer [redacted]', 'content-type': 'application/json'}",
    ),
    (
        r'{"body": "{\"access_token\": \"ya29.abc\", \"n\": 1}"}',
        r'{"body": "{\"access_token\": \"[redacted]\", \"n\": 1}"}',
    ),
    (
        "GET https://generativelanguage.googleapis.com/v1beta/models?key=AIzaSyD-9tSrke72&alt=sse",
        "GET https://generativelanguage.googleapis.com/v1beta/models?key=[redacted]&alt=sse",
    ),
    (
        "POST /oauth/callback?code=4/0AX4Xf&state=xyz&access_token=ya29.a0Af",
        "POST /oauth/callback?code=[redacted]&state=xyz&access_token=[redacted]",
    ),
    ("export OPENAI_API_KEY='abc123'", "export OPENAI_API_KEY='[redacted]'"),
    (
        "db connect host=x password=hunter2 user=bob",
        "db connect host=x password=[redacted] user=bob",
    ),
    ("login failed, password: hunter2 for bob", "login failed, password: [redacted] for bob"),
    ("  client_secret: correct horse battery", "  client_secret: [redacted]"),
    ("secret=s3cr3t token='tok en'", "secret=[redacted] token='[redacted]'"),
    (
        "git clone https://bob:hunter2@github.com/o/r.git",
        "git clone https://bob:[redacted]@github.com/o/r.git",
    ),
    ("key sk-ant-api03-AbCdEfGhIjKlMnOp_qRsT-12 ok", "key sk-ant-[redacted] ok"),
    ("key sk-Zq81fJx0aLw3Tn5yVb7Kc2Hd ok", "key sk-[redacted] ok"),
    ("gh: ghp_R4nd0mT0kenForTests0123456789abcdef", "gh: ghp_[redacted]"),
    ("gh: github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "gh: github_pat_[redacted]"),
    (
        "slack xoxb-1234567890-abcdefghij and xoxp-99-abcdefghijkl",
        "slack xoxb-[redacted] and xoxp-[redacted]",
    ),
    ("maps AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "maps AIza[redacted]"),
    ("aws AKIAIOSFODNN7EXAMPLE", "aws AKIA[redacted]"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_Xg", "jwt eyJ[redacted]"),
]


@pytest.mark.parametrize(("line", "expected"), LOG_LINES)
def test_redact_text_masks_credentials_and_keeps_their_names(line: str, expected: str) -> None:
    assert redact_text(line) == expected
    assert redact_text(expected) == expected  # masking again changes nothing


ORDINARY = [
    "Collected 42 items; 3 failed in tests/test_auth.py::test_token_refresh",
    "max_tokens=1024 temperature=0.2 tokens: 512 input_tokens=10",
    "if token == expected and secret != other:",
    "pip install scikit-learn; see sk-learn docs and task-1234567890abcdefghijk",
    "The key points: read the docs. Use --key to pick one. key=value pairs are fine.",
    "GET https://example.com/search?q=password+reset&page=2 200",
    "api_key=None token=null secret={{secret:DB_PASSWORD}} password=",
    "Authorization: Bearer {{secret:GITHUB_TOKEN}}",
    'HTTP Request: POST https://api.openai.com/v1/chat/completions "HTTP/1.1 200 OK"',
    "KeyError: 'token'\n  File \"smith/x.py\", line 3, in <module>",
    "/home/bob/.config/smith/config.kdl:3:9: unknown key 'modle'",
    "",
]


@pytest.mark.parametrize("line", ORDINARY)
def test_redact_text_leaves_ordinary_text_alone(line: str) -> None:
    assert redact_text(line) == line


@given(st.text())
def test_redact_text_is_idempotent(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


@pytest.fixture
def log() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    # Not one of smith's loggers: what is tested is the handler's filter, not the masking
    # of smith's records as they are made (smith.runtime._secrets.mask_records).
    logger = logging.getLogger("tests.secrets_filter")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    handler.addFilter(RedactingFilter(proxy_with(OPENAI_API_KEY=OPENAI)))
    logger.addHandler(handler)
    logger.propagate, logger.level = False, logging.DEBUG
    yield logger, stream
    logger.removeHandler(handler)
    logger.propagate, logger.level = True, logging.NOTSET


def test_the_filter_redacts_formatted_messages(log: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = log
    logger.info("request %s with headers %r", f"key={OPENAI}", {"x-api-key": "zz99zz99"})
    logger.debug("curl output:\n%s", CURL)
    logger.getChild("child").warning("token=%s", GITHUB)  # propagates to the handler
    out = stream.getvalue()
    assert OPENAI not in out and GITHUB not in out and "zz99zz99" not in out
    assert (
        "INFO request key={{secret:OPENAI_API_KEY}} with headers {'x-api-key': '[redacted]'}" in out
    )
    assert "> Authorization: Bearer {{secret:OPENAI_API_KEY}}" in out
    assert "WARNING token=[redacted]" in out


def test_the_filter_redacts_tracebacks(log: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = log
    try:
        raise RuntimeError(f"upstream refused api_key={GITHUB} and {OPENAI}")
    except RuntimeError:
        logger.exception("call failed")
    out = stream.getvalue()
    assert "Traceback" in out and "RuntimeError: upstream refused api_key=[redacted]" in out
    assert GITHUB not in out and OPENAI not in out and "{{secret:OPENAI_API_KEY}}" in out


def test_bad_format_arguments_are_reported_redacted(
    log: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = log
    logger.error("two %s %s placeholders", f"password={GITHUB}")  # noqa: PLE1206
    out = stream.getvalue()
    assert "two %s %s placeholders" in out and "password=[redacted]" in out
    assert GITHUB not in out


def test_the_filter_works_without_a_proxy() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "auth %s", ("Bearer-less",), None)
    record.msg = "Authorization: %s"
    assert RedactingFilter().filter(record)
    assert record.getMessage() == "Authorization: [redacted]"


def test_streamed_text_split_anywhere_redacts_like_the_whole() -> None:
    proxy = SecretProxy()
    proxy.register("TOKEN", "s3cr3t-value", source="test")
    proxy.register("SHORT", "abcd", source="test")
    text = "x s3cr3t-value y abcd z s3cr3t-valu abcs3cr3t-value"
    for a in range(len(text) + 1):
        for b in range(a, len(text) + 1):
            emitted, held = [], ""
            for piece in (text[:a], text[a:b], text[b:]):
                out, held = proxy.redact_stream(held + piece)
                emitted.append(out)
            emitted.append(str(proxy.redact(held)))
            joined = "".join(emitted)
            assert joined == proxy.redact(text), (a, b)
            assert "s3cr3t-value" not in "".join(emitted[:-1])


def test_a_secret_is_caught_in_the_escaped_forms_repr_and_json_give_it() -> None:
    """A value with a backslash or a quote reaches text escaped (an exception's args by
    repr, a JSON body): those spellings are masked as the value is, in the proxy's
    redaction, in diagnostics and in what the journal records (keys too)."""
    from smith.effects import bounded

    value = "pa55\\word-\"long'-secret"
    proxy = proxy_with(MODE_SECRET=value)
    crash = repr(RuntimeError("refused", value))
    assert "word" not in str(proxy.redact(crash)), proxy.redact(crash)
    assert "word" not in str(proxy.redact(json.dumps({"token": value})))
    assert "word" not in diagnostics.scrub(crash)
    assert bounded({value: 1, "k": repr(value)}) == {"[secret]": 1, "k": "'[secret]'"}


def test_records_of_smiths_loggers_are_masked_as_made_even_loggers_made_later() -> None:
    """What a library caller's own handler sees (smith.Agent installs none): a record of
    any smith logger, one made after the mask was put in place included, is masked; a
    record of another logger is the program's own and is left alone."""
    from smith.runtime._secrets import mask_records

    proxy = proxy_with(LATE_SECRET="late-secret-value-0123456789")
    mask_records(proxy)
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(self.format(record))

    handler = Keep()
    for name in ("smith.plugins.made_late_here", "smith", "elsewhere.app"):
        log = logging.getLogger(name)
        log.addHandler(handler)
        try:
            log.warning("refused %s", "late-secret-value-0123456789")
        finally:
            log.removeHandler(handler)
    assert seen[:2] == ["refused {{secret:LATE_SECRET}}"] * 2
    assert seen[2] == "refused late-secret-value-0123456789"
