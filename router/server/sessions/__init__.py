"""What the router keeps per client connection: its memory, `subscriptions/listen` and resource
subscriptions.
"""
