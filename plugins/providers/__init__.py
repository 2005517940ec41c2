"""Built-in provider plugins: each module has `create(model) -> Provider` (see
smith.providers). Vendor knowledge lives here and nowhere else."""

# The provider modules smith.plugins.BUILTIN names, each exporting PLUGIN (imported only
# when named: nothing is imported with the package).
__all__ = ["anthropic", "demo", "google", "openai", "openai_compatible", "scripted"]
