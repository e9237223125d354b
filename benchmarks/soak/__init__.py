"""The soak benchmark: the HTTP front under mixed traffic for a long while (see cli.py)."""
