"""Sealed state: what the router hands a client to bring back (a confirmation, a held call, a code
run, a pin approval), bound so it authorizes one thing once.
"""
