"""The CLI's subcommands, one module each; each prints its own output to stdout."""
