"""A user's own settings that follow them from browser to browser: the interface language."""
