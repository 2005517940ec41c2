"""WebAssembly plugins: the host (wasmtime: engine, compiled-component cache, one
sandboxed instance per plugin and runtime, the host functions of
wit/smith-plugin.wit), the SDK read from that WIT (help, docs, C bindings) and the
guest toolchains (`smith plugins new`, `smith plugins build`): docs/plugins.md.

    plugin = wasm_plugin(package, cache_home=cache)   # a PackageManifest's module as a Plugin
    HOST_FUNCTIONS                                   # the host interface, by WIT name
    precompile(path, cache_home=cache)                # compile into the cache (install, build)
    scaffold(name, lang, dest_dir) -> Path           # `smith plugins new` (python or c)
    build_package(dir, say) -> Path                  # `smith plugins build`: the component
    sdk_help(topic) -> str                           # `smith plugins help`, from the WIT
    wit_world()                                      # the WIT as data (smith.wasm._wit)

wasmtime is imported only when one of these is first used.
"""

from smith._lazy import lazy_exports

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.wasm._build import build_package as build_package
    from smith.wasm._cache import precompile as precompile
    from smith.wasm._help import sdk_help as sdk_help
    from smith.wasm._hostfns import HOST_FUNCTIONS as HOST_FUNCTIONS
    from smith.wasm._hostfns import plain as plain
    from smith.wasm._instance import Limits as Limits
    from smith.wasm._plugin import usage as usage
    from smith.wasm._plugin import wasm_plugin as wasm_plugin
    from smith.wasm._scaffold import scaffold as scaffold
    from smith.wasm._wit import wit_world as wit_world

_LAZY = {
    "HOST_FUNCTIONS": "smith.wasm._hostfns",
    "Limits": "smith.wasm._instance",
    "plain": "smith.wasm._hostfns",
    "precompile": "smith.wasm._cache",
    "usage": "smith.wasm._plugin",
    "wasm_plugin": "smith.wasm._plugin",
    "build_package": "smith.wasm._build",
    "scaffold": "smith.wasm._scaffold",
    "sdk_help": "smith.wasm._help",
    "wit_world": "smith.wasm._wit",
}

__getattr__ = lazy_exports(__name__, _LAZY)

__all__ = [
    "HOST_FUNCTIONS",
    "Limits",
    "build_package",
    "plain",
    "precompile",
    "scaffold",
    "sdk_help",
    "usage",
    "wasm_plugin",
    "wit_world",
]
