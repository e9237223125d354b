"""Code mode (`router.mode: "code"`): the model writes one program over the tools.

The domain half, with no SDK types: the sandbox that runs the program (`sandbox`:
pydantic-monty's warm pool of worker processes, the limits, the host functions the program
calls), how a run ended and what the model reads of it (`outcome`), a tool's signature as
Python (`signatures`) and the listing's records (`meta`). The server half
(`router.server.code_mode.tools`, `router.server.code_mode.runs`) exposes `execute` and sends every
call a program makes through the path a direct call takes.
"""
