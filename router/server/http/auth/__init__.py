"""Who may talk to the HTTP front: the guard, its policy, access tokens, resource metadata, the
REST door.
"""
