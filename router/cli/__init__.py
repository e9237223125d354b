"""The `mcp-router` command line: the parser (`main`) and one module per command, each a thin
caller of the packages below.
"""
