"""Built-in provider plugins: each module has `create(model) -> Provider` (see
smith.providers). Vendor knowledge lives here and nowhere else."""
