"""One module per host's config file format (`router.hosts.base.FileFormat`): where its
servers are in the file, how it spells an entry, and the entry `--install` writes there."""
