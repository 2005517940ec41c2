"""Masking credential-looking text that was never registered as a secret: for logs and
diagnostics, where a provider's error or a library's message may carry an API key, a
token, a password or a cookie. Only `re` is needed, so diagnostics can use it cheaply.

    redact_text('Authorization: Bearer sk-abc...')  ->  'Authorization: Bearer [redacted]'
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"
_PLACEHOLDER = re.compile(r"\{\{secret:[A-Za-z_][A-Za-z0-9_]*\}\}")

# -- log redaction of unregistered credentials ------------------------------------------

# Key names that always denote a credential, and weaker ones (`token`, `secret`) that are
# trusted only in key=value and quoted-key forms, where prose rarely takes that shape.
_STRONG = (
    r"api[_-]?key|access[_-]?key|access[_-]?token|refresh[_-]?token|auth[_-]?token"
    r"|id[_-]?token|session[_-]?token|security[_-]?token|client[_-]?secret"
    r"|secret[_-]?(?:access[_-]?)?key|private[_-]?key|passw(?:or)?d|credentials?"
)
_WEAK = r"token|secret|signature|auth"
_HEADERS = r"(?:proxy-)?authorization|(?:set-)?cookie|x-[\w-]*?(?:key|token|secret)"
_AUTHORIZATION = re.compile(r"(?:proxy-)?authorization", re.I)
_QUOTED = r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'"
_ESCAPED = r"\\\"(?:[^\"\\\n]|\\[^\"])*\\\""  # \"...\": JSON inside a JSON string
_KEY = r"(?<![\w.-])[\w.-]*?"  # a whole key name, ending in one of the names
_LINE = r"^[ \t]*(?:[<>*][ \t]*)?"  # a line start, with curl -v's > and < markers
_UNQUOTED = r"(?<![\w.\-\"'])"  # not inside a word or just after a quote
# Values that hide nothing: a placeholder, or a value masked already (idempotence).
_PH = r"\{\{secret:\w+\}\}|\[redacted\]"

# Each pattern has the groups lead, key and sep, which are kept, and value, masked.
_KEY_VALUE = [
    # api_key=..., OPENAI_API_KEY="...", ?access_token=...&, --password=...
    rf"(?P<lead>)(?P<key>{_KEY}(?:{_STRONG}|{_WEAK}))(?P<sep>[ \t]*=(?!=)[ \t]*)"
    # (a closing bracket is taken too: better a lost bracket than half a password)
    rf"(?P<value>{_PH}|{_QUOTED}|[^\s&;,'\"<>]+)",
    # "apiKey": "...", 'authorization': 'Bearer ...', "password": 1234, \"token\": \"...\"
    rf"(?P<lead>\\?[\"'])(?P<key>{_KEY}(?:{_STRONG}|{_WEAK}|{_HEADERS}))(?P<sep>(?P=lead)\s*:\s*)"
    rf"(?P<value>{_PH}|{_QUOTED}|{_ESCAPED}|[^\s,}}\]\"'\\]+)",
    # Header lines (curl -v marks them with > and <), or a header mid-line: to the end.
    rf"(?P<lead>{_LINE}|{_UNQUOTED})(?P<key>{_HEADERS})(?P<sep>[ \t]*:[ \t]*)(?P<value>[^\r\n]+)",
    # YAML-ish `api_key: ...` on a line of its own: to the end of the line.
    rf"(?P<lead>{_LINE})(?P<key>{_KEY}(?:{_STRONG}))(?P<sep>[ \t]*:[ \t]*)(?P<value>[^\r\n]+)",
    # `password: ...` mid-line: one word only, since prose may follow.
    rf"(?P<lead>{_UNQUOTED})(?P<key>{_KEY}(?:{_STRONG}))(?P<sep>[ \t]*:[ \t]*)"
    rf"(?P<value>{_PH}|{_QUOTED}|[^\s,;'\"]+)",
    # A header inside quotes: curl -H "Authorization: Bearer ..."; stops at the quote.
    rf"(?P<lead>(?<=[\"']))(?P<key>{_HEADERS}|{_KEY}(?:{_STRONG}))(?P<sep>[ \t]*:[ \t]*)"
    r"(?P<value>[^\r\n\"']+)",
    # Query parameters too short to be safe as key names elsewhere: ?key=AIza..., &sig=...
    r"(?P<lead>[?&])(?P<key>key|sig|code)(?P<sep>=)(?P<value>[^&\s#\"'<>]+)",
    # URL user information: https://user:password@host (the scheme is matched from its
    # start only: from every word boundary it would take quadratic time on long tokens)
    r"(?P<lead>(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://)(?P<key>[^\s:/@]+)(?P<sep>:)"
    r"(?P<value>[^\s/@]+)(?=@)",
]
_PATTERNS = [re.compile(p, re.I | re.M) for p in _KEY_VALUE]
# Well-known key shapes, wherever they appear; the prefix is kept to say what it was.
_SHAPES = re.compile(
    r"(?<![\w-])(?:(sk-ant-)[\w-]{16,}|(sk-)(?=[\w-]*\d)[\w-]{16,}|(AIza)[\w-]{30,}"
    r"|(gh[pousr]_)[A-Za-z0-9]{30,}|(github_pat_)\w{30,}|(xox[abprs]-)[A-Za-z0-9-]{10,}"
    r"|(AKIA)[0-9A-Z]{16}(?![0-9A-Z])|(eyJ)[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,})"
)
_SCHEME = re.compile(r"[A-Za-z][\w-]{0,30}\s+(?=\S)")
_QUOTED_VALUE = re.compile(r"(\\?[\"'])(.*)\1\Z", re.S)  # "...", '...', \"...\"
_KEEP = {"", "none", "null", "nil", "true", "false", "undefined", REDACTED}


def _mask(match: re.Match[str]) -> str:
    """Mask the value of a key-value match, keeping its quotes and, for an Authorization
    value, its scheme (`Bearer [redacted]`); values that hide nothing are left as is."""
    lead, key, sep, value = match.group("lead", "key", "sep", "value")
    quoted = _QUOTED_VALUE.match(value)
    quote, inner = quoted.groups() if quoted else ("", value)
    scheme = _SCHEME.match(inner) if _AUTHORIZATION.fullmatch(key) else None
    kept = scheme.group(0) if scheme else ""
    secret = inner[len(kept) :].strip()
    if secret.lower() in _KEEP or _PLACEHOLDER.fullmatch(secret):
        return match.group(0)
    return f"{lead}{key}{sep}{quote}{kept}{REDACTED}{quote}"


def redact_text(text: str) -> str:
    """`text` with credential-looking values replaced by [redacted], key names kept; for
    logs and diagnostics, where registered secrets are not the only ones that leak."""
    for pattern in _PATTERNS:
        text = pattern.sub(_mask, text)
    return _SHAPES.sub(lambda m: next(g for g in m.groups() if g) + REDACTED, text)
