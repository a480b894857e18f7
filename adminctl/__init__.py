"""``stompd-admin``: a command-line client of stompd's admin HTTP API.

Standard library only, and nothing of the broker: it talks to a running broker the
way any other HTTP client would (an import-linter contract keeps it so).
"""
