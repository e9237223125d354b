"""The one door: every request's rule, its principal and the part of the catalog it may see."""
