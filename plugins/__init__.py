"""Built-in plugins, installed as `smith.plugins`, on the same contract as user plugins:
providers, the product plugin (layout, theme, keybindings, commands), queue policies.
"""
