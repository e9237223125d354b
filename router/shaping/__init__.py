"""What hosts see of the upstreams' tools, as the config shapes it: tool transforms."""
