"""Frontends over the one runtime, installed as `smith.frontends`: tui, web, eval, rpc, mcp.

Each consumes the UI-intent stream and sends user operations; none touches runtime
internals, and smith's core never imports them.
"""
