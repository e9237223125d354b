"""Where a tool call goes: its handler, the pipeline of stages, validation, confirmation, held
calls and the relay.
"""
