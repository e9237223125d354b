"""Rules on tools: which calls ask first (`rules`), who sees which tools (`profiles`), and text
that reads like instructions (`injection`).
"""
