"""The server's life: building it, its state and settings, reloads, readiness, stdio, metrics and
the error mapping.
"""
