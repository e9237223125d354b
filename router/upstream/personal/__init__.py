"""Per-user upstreams: each principal at the front signs in itself (or has its own token
exchanged), and its calls go out on its own connection with its own credentials."""
