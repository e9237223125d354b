"""The MCP configs of other hosts: where they are, how each reads, and how each is rewritten.

- `discovery`: every host file's path on Linux and macOS under a given home folder.
- `formats/`: one module per host format (`claude_desktop`, `claude_code`, `cursor`,
  `vscode`, `windsurf`, `codex`, `copilot_cli`): a `FileFormat` that reads the file into
  router server entries and, for `mcp-router import --install`, rewrites it to one entry
  starting the router (with the host's own keep-loaded setting, where it has one).
- `refresh`: which hosts re-read the tool list on `list_changed` (`mcp-router inspect`).
- `entries`: one host entry in the router's shape; `merge`: many into one config.
- `jsonc` and `toml_edit`: edits that change one value and keep the rest of a file.
- `files`: backups, atomic writes and diffs.
"""
