"""What a host sees: the live index, listings, search and its rendering, names resolved, resources
and prompts.
"""
