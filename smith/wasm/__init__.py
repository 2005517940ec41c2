"""WebAssembly plugins: the host (wasmtime: engine, compiled-component cache, one
sandboxed instance per plugin and runtime, the host functions of
wit/smith-plugin.wit), the SDK read from that WIT (help, docs, C bindings) and the
guest toolchains (`smith plugins new`, `smith plugins build`): docs/plugins.md."""
