"""Result limits and kept results: cutting an answer to its token limit and reading on in what was
cut.
"""
