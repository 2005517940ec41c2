"""What smith adds to textual-serve's page: a title, Ctrl+C that copies the terminal's own
selection, and Shift+Enter.

The page's template (textual-serve's app_index.html) has no <title>, so the tab showed
the address, secret and all; it gets the server's title, escaped as the template's
other values are.

xterm.js sends every Ctrl+C to the app as ^C, even while the terminal has a selection of
its own (made with Shift+drag, since the app takes plain drags for its own selection):
the user meant to copy and the app was interrupted instead. KEYS asks the browser to copy
first, in the page, before xterm.js sees the key: xterm.js answers the copy event only
when it has a selection (it then cancels the event), and only then is the key kept from
the app. Without a selection Ctrl+C reaches the app as before.

xterm.js also sends Shift+Enter as a plain Enter, which sends the message where the app
means a new line; KEYS sends it as the kitty keyboard protocol writes it (`CSI 13;2u`),
which Textual reads as shift+enter.
"""

from __future__ import annotations

from collections.abc import Callable

import jinja2

KEYS = r"""
    <script>
      (() => {
        const Native = window.WebSocket;
        let app = null;  // the page's websocket to its app (textual.js opens one)
        window.WebSocket = class extends Native {
          constructor(...args) { super(...args); app = this; }
        };
        const alone = (key, modifier) =>  // that modifier held, no other
          ["ctrlKey", "shiftKey", "altKey", "metaKey"].every((m) => key[m] === (m === modifier));
        window.addEventListener("keydown", (key) => {
          if (key.isComposing) return;
          if (key.key === "Enter" && alone(key, "shiftKey")) {
            if (!app || app.readyState !== Native.OPEN) return;
            app.send(JSON.stringify(["stdin", "\x1b[13;2u"]));  // Shift+Enter, kitty's way
            key.preventDefault();
            key.stopImmediatePropagation();
          } else if (key.key.toLowerCase() === "c" && alone(key, "ctrlKey")) {
            let copied = false;
            const seen = (copy) => { copied = copy.defaultPrevented; };
            window.addEventListener("copy", seen);
            try { document.execCommand("copy"); }
            finally { window.removeEventListener("copy", seen); }
            if (copied) { key.preventDefault(); key.stopImmediatePropagation(); }
          }
        }, true);
      })();
    </script>"""


class PageLoader(jinja2.BaseLoader):
    """textual-serve's templates (`inner`), the page's with the title and KEYS added."""

    def __init__(self, inner: jinja2.BaseLoader | None) -> None:
        assert inner is not None  # aiohttp_jinja2.setup was given textual-serve's loader
        self.inner = inner

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str | None, Callable[[], bool] | None]:
        source, filename, uptodate = self.inner.get_source(environment, template)
        head = "<head>\n    <title>{{ application.name }}</title>" + KEYS
        return source.replace("<head>", head, 1), filename, uptodate
