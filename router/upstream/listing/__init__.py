"""What an upstream offers: fetched through every page, filtered, converted to the catalog's
records, cached for lazy upstreams, and re-listed when it changes.
"""
