"""One connection to an upstream: its transport, the protocol era it speaks, liveness, the second
connection for handshake hosts, and what the upstream asks or sends unasked.
"""
